"""The frozen binary (PyInstaller, pyinstaller.spec + scripts/build_binary.py), built once per session.

Builds the default mode (onefile, what Tauri's `externalBin` takes), then drives the binary like a
desktop host: empty data dir, `ready` with no network and no Python packages in reach, the golden
transcripts, a clean stdout, and no process left behind when the host or the launcher is killed.

Set MEMORY_SIDECAR_TEST_BINARY=/path/to/memory-sidecar-<triple> to test a binary built beforehand
(the build is then skipped).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, Sidecar, bare_env, load_script, new_bucket, posix_only, s3_env
from helpers import EXAMPLES, OUTPUT_TAIL, replay
from helpers import npm_run as run_ts

pytestmark = pytest.mark.slow

BUNDLED_SOURCE = "files bundled in the frozen binary"
ORPHAN_DEADLINE = 2.0  # seconds: the sidecar must be gone this long after its host or launcher dies


build_binary = load_script("build_binary")


@pytest.fixture(scope="session")
def frozen_binary(tmp_path_factory):
    prebuilt = os.environ.get("MEMORY_SIDECAR_TEST_BINARY")
    if prebuilt:
        yield Path(prebuilt).resolve()
        return
    yield from _built_and_shipped("onefile", tmp_path_factory)


BUILD_INFO: dict[str, dict] = {}  # mode -> the build-info.json each build wrote


def _built_and_shipped(mode: str, tmp_path_factory):
    """Build `mode` with scripts/build_binary.py's command line (one timed spawn), then ship it (the onefile
    executable, or the onedir folder whole) somewhere with no Python project around it, like an app bundle
    would; yields the executable, removes it after."""
    problems = build_binary.preflight()
    if problems:
        pytest.fail("cannot build the binary: " + "; ".join(problems))
    out = tmp_path_factory.mktemp(f"frozen-{mode}")
    triple, _ = build_binary.target_triple()
    argv = ["--mode", mode, "--dist", str(out / "dist"), "--work", str(out / "work"), "--measure-ready", "1"]
    assert build_binary.main(argv) == 0, f"build_binary.py {' '.join(argv)} failed"
    info = orjson.loads((out / "dist" / build_binary.INFO_FILE).read_bytes())
    BUILD_INFO[mode] = info
    exe, artifact = Path(info["executable"]), Path(info["artifact"])
    assert exe.name == build_binary.exe_name(triple)
    shipped = tmp_path_factory.mktemp(f"app-{mode}") / artifact.name
    if mode == "onefile":
        shutil.copy2(artifact, shipped)
    else:
        shutil.copytree(artifact, shipped, symlinks=True)
    shutil.rmtree(out, ignore_errors=True)
    yield shipped if mode == "onefile" else shipped / exe.name
    shutil.rmtree(shipped.parent, ignore_errors=True)  # 200-500 MB; pytest would keep it for three sessions


@pytest.fixture(scope="session")
def onedir_binary(tmp_path_factory):
    """The onedir build (the release artifact for Tauri, docs/hosts.md), its folder shipped whole to a
    place with no Python project around it; yields the executable inside it."""
    yield from _built_and_shipped("onedir", tmp_path_factory)


def host_env(tmp_path: Path) -> dict[str, str]:
    """What a desktop app's child sees: no Python variables, an empty home (no model caches), C locale."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = bare_env(
        PATH="/usr/bin:/bin",
        HOME=str(home),
        USERPROFILE=str(home),
        LANG="C",
        LC_ALL="C",
        XDG_CACHE_HOME=str(home / ".cache"),
        TMPDIR=os.environ.get("TMPDIR", "/tmp"),
    )
    return env


@pytest.fixture
def spawn_frozen(frozen_binary, tmp_path, spawn):
    """spawn_frozen(*args, name="data", wait_ready=True, wrapper=None, env=None) -> Sidecar running
    the frozen binary in a host-like environment (conftest's `spawn` checks and stops it)."""

    def _spawn(
        *args: str,
        name: str = "data",
        wait_ready: bool = True,
        wrapper: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> Sidecar:
        # working directory: tmp_path (a relative export/import path of a transcript lands there)
        return spawn(
            *args,
            data_dir=tmp_path / name,
            wait_ready=wait_ready,
            cwd=tmp_path,
            command=[*(wrapper or []), str(frozen_binary)],
            base_env={**host_env(tmp_path), **(env or {})},
        )

    return _spawn


# --------------------------------------------------------------------------- process helpers (Linux /proc)


def proc_state(pid: int) -> str | None:
    """The one-letter state of a process, or None when it is gone. A zombie counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    state = stat.rsplit(")", 1)[1].split()[0]
    return None if state in ("Z", "X") else state


def children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
                out.append(int(entry.name))
    return out


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for child in children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def wait_gone(pids: list[int], timeout: float) -> tuple[float, list[int]]:
    """(seconds until every pid was gone, pids still alive at the timeout)."""
    t0 = time.monotonic()
    while True:
        alive = [p for p in pids if proc_state(p) is not None]
        elapsed = time.monotonic() - t0
        if not alive or elapsed > timeout:
            return elapsed, alive
        time.sleep(0.02)


def kill_all(pids: list[int]) -> None:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def meipass_dirs(pid: int) -> set[Path]:
    """The onefile unpack folders a process has files open or mapped from."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return set()
    dirs = set()
    for line in maps.splitlines():
        path = line.split(maxsplit=5)[-1] if len(line.split(maxsplit=5)) == 6 else ""
        for part in Path(path).parents:
            if part.name.startswith("_MEI"):
                dirs.add(part)
    return dirs


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc to follow processes")


# --------------------------------------------------------------------------- tests


def test_triple_from_platform():
    t = build_binary.triple_from_platform
    assert t("Linux", "x86_64", "glibc") == "x86_64-unknown-linux-gnu"
    assert t("Linux", "aarch64", "glibc") == "aarch64-unknown-linux-gnu"
    assert t("Linux", "x86_64", "musl") == "x86_64-unknown-linux-musl"
    assert t("Darwin", "arm64") == "aarch64-apple-darwin"
    assert t("Darwin", "x86_64") == "x86_64-apple-darwin"
    assert t("Windows", "AMD64") == "x86_64-pc-windows-msvc"
    assert build_binary.exe_name("x86_64-pc-windows-msvc") == "memory-sidecar-x86_64-pc-windows-msvc.exe"
    assert build_binary.exe_name("aarch64-apple-darwin") == "memory-sidecar-aarch64-apple-darwin"


def test_preflight_names_what_to_fix(tmp_path):
    """A build without its model (or without PyInstaller) stops before PyInstaller runs, naming the fix."""
    (tmp_path / "tokenizer.json").write_text("{}")
    problems = build_binary.preflight(tmp_path)
    assert any("model.onnx" in p and str(tmp_path) in p and "scripts/build_model.py" in p for p in problems), problems
    assert build_binary.preflight() == [], "this checkout should be buildable"
    assert "PyInstaller builds for the OS and architecture" in build_binary.foreign_target("aarch64-pc-windows-msvc")
    assert build_binary.foreign_target(build_binary.triple_from_platform()) is None


SMOKE = ROOT / "scripts" / "smoke_binary.py"


def run_smoke(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SMOKE), *args], capture_output=True, text=True, timeout=timeout)


@posix_only("the stand-in binaries are shell scripts")
def test_smoke_script_says_what_went_wrong(tmp_path):
    """scripts/smoke_binary.py (the release workflow's check) fails, naming the fix, for a folder given instead
    of its executable (spawning a folder fails with EACCES), an executable that never says `ready`, and one
    that answers other than the transcript."""
    folder = tmp_path / "memory-sidecar-x"
    folder.mkdir()
    (folder / "memory-sidecar-x").write_text("")
    out = run_smoke(str(folder))
    assert out.returncode == 1 and "is a folder: pass the executable inside it" in out.stderr, out.stderr
    assert str(folder / "memory-sidecar-x") in out.stderr
    stuck = tmp_path / "stuck"
    stuck.write_text("#!/bin/sh\necho 'loading the model' >&2\nexec sleep 60\n")
    stuck.chmod(0o755)
    out = run_smoke(str(stuck), "--timeout", "1")
    assert out.returncode == 1 and "no `ready` line: no line within 1 s" in out.stderr, out.stderr
    assert "loading the model" in out.stderr  # the end of the binary's stderr comes with it
    wrong = tmp_path / "wrong"
    wrong.write_text('#!/bin/sh\necho \'{"type":"ready","version":"0"}\'\nexec sleep 60\n')
    wrong.chmod(0o755)
    out = run_smoke(str(wrong), "--timeout", "5")
    assert (
        out.returncode == 1
        and "differs from the transcript, original.jsonl line 1: $: missing key 'protocol'" in out.stderr
    ), out.stderr


def test_smoke_script_passes_on_the_binary(frozen_binary):
    out = run_smoke(str(frozen_binary), "--timeout", "120")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("smoke test passed: original.jsonl"), out.stdout


@pytest.mark.parametrize("mode", ["onefile", "onedir"])
def test_build_prints_and_records_the_executable_size_and_ready_time(mode, request):
    """build-info.json (what the release notes are made from): the file to spawn (inside the folder for
    onedir), the size of what ships, the ready time."""
    request.getfixturevalue("frozen_binary" if mode == "onefile" else "onedir_binary")
    if mode not in BUILD_INFO:
        pytest.skip("MEMORY_SIDECAR_TEST_BINARY: the binary was built beforehand")
    info = BUILD_INFO[mode]
    assert info["mode"] == mode and info["target"] == build_binary.target_triple()[0]
    assert info["ready_seconds"] > 0 and len(info["ready_runs"]) == 1
    if mode == "onedir":
        assert Path(info["executable"]).parent == Path(info["artifact"]), info
    else:
        assert info["executable"] == info["artifact"], info
    assert info["size_bytes"] > 50_000_000


def _fragments(data_dir: Path, table: str) -> int:
    import lancedb

    return lancedb.connect(str(data_dir / "lancedb")).open_table(table).stats()["fragment_stats"]["num_fragments"]


def test_every_command_the_slimmed_bundle_could_break(spawn_frozen, tmp_path):
    """What the bundle's cuts (scripts/binarykit/slim.py: pyarrow modules and libraries left out, duplicate
    and unused libraries dropped, symbols stripped) could break, through the binary, with the vector cache
    off so every query goes through LanceDB's own search: stores and a long memory (chunks), every query
    mode, the graph, export and import, compaction by write count and by cleanup."""
    sc = spawn_frozen(
        "--cache-mb", "0", "--compact-every-writes", "4", "--compact-interval-seconds", "1", "--ttl-days", "0"
    )
    notes = [f"day {i}: the weather was grey and I read a book about lighthouses" for i in range(10)]
    for note in notes:
        sc.store("u", note)
    hike = sc.store("u", "I went hiking with Ana in the Alps near Chamonix")
    long_text = ("We talked about the garden for a long time. " * 40) + "The secret ingredient of the soup is saffron."
    long_id = sc.store("u", long_text)
    deadline = time.monotonic() + 120
    while (chunks := sc.request({"type": "stats"})["chunks"])["pending"] and time.monotonic() < deadline:
        time.sleep(0.2)  # the long memory is cut into chunks in the background
    assert chunks == {"vectors": 3, "pending": 0}, chunks
    for mode, text, want in [
        ("semantic", "mountain trip with a friend", hike),
        ("keyword", "Chamonix", hike),
        ("hybrid", "hiking in the Alps", hike),
        ("semantic", "what spice goes in the soup", long_id),
    ]:
        got = sc.request({"type": "query", "user_id": "u", "text": text, "mode": mode, "limit": 3})
        assert got["type"] == "results" and got["messages"][0]["id"] == want, (mode, text, got)
    assert sc.request({"type": "sync"})["type"] == "synced"
    graph = sc.request({"type": "query", "user_id": "u", "text": "Ana", "mode": "graph", "limit": 3})
    assert hike in [m["id"] for m in graph["messages"]], graph
    recall = sc.request({"type": "graph_recall", "user_id": "u", "text": "who did I go hiking with?"})
    assert recall["type"] == "graph_recall", recall
    names = [e["name"] for e in sc.request({"type": "entities", "user_id": "u", "limit": 50})["entities"]]
    assert "Ana" in names, names
    assert sc.request({"type": "consolidate", "user_id": "u"})["type"] == "consolidated"
    out = tmp_path / "backup.jsonl.gz"
    exported = sc.request({"type": "export", "out": str(out)})
    assert exported["messages"] == 12 and out.is_file(), exported
    assert sc.request({"type": "forget_user", "user_id": "u"})["deleted"] == 12
    skipped = sc.request({"type": "import", "path": str(out)})  # forgotten stays forgotten
    assert skipped["messages"] == 0 and skipped["forgotten"] >= 12, skipped
    imported = sc.request({"type": "import", "path": str(out), "restore_forgotten": True})
    assert imported["messages"] == 12 and imported["errors"] == [], imported
    again = sc.request({"type": "query", "user_id": "u", "text": "Chamonix", "mode": "keyword", "limit": 1})
    assert again["messages"][0]["id"] == hike, again
    assert sc.request({"type": "cleanup", "ttl_days": 3650})["deleted"] == 0  # then compacts every table
    assert sc.shutdown() == 0
    assert _fragments(sc.data_dir, "messages") <= 2, "the stores should have been compacted"
    assert "Traceback" not in sc.stderr() and "ERROR" not in sc.stderr(), sc.stderr()


def test_a_restart_on_a_store_with_memories_warms_the_cache_without_an_error(spawn_frozen):
    """Regression: the bundle left out pyarrow.acero, which Table.group_by imports when it aggregates, so the
    start-up warm-up of every non-empty store failed in the binary ("background maintenance failed",
    ModuleNotFoundError, at the default log level); queries still answered, from the table."""
    sc = spawn_frozen()
    for u in range(3):
        sc.request(
            {"type": "store", "messages": [{"user_id": f"w{u}", "content": f"note {i} of user {u}"} for i in range(5)]}
        )
    assert sc.shutdown() == 0
    sc = spawn_frozen()  # the same data dir
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sc.request({"type": "stats"})["cache"]["users"] < 3:
        time.sleep(0.2)
    assert sc.request({"type": "stats"})["cache"]["users"] == 3  # no query was sent: the warm-up loaded them
    assert sc.shutdown() == 0
    assert "Traceback" not in sc.stderr() and "ERROR" not in sc.stderr(), sc.stderr()


def test_an_object_store_data_dir_through_the_binary(spawn_frozen, s3):
    """The object store's client (obstore, a native library) is bundled and works: a memory stored through
    one binary on s3:// is found by the next, with nothing on stderr but who maintains the store."""
    uri = f"s3://{new_bucket(s3)}/mem"
    sc = spawn_frozen("--data-dir", uri, env=s3_env(s3))
    stored = sc.store("u", "I keep bees in Lyon")
    assert sc.shutdown() == 0
    sc = spawn_frozen("--data-dir", uri, env=s3_env(s3))
    got = sc.request({"type": "query", "user_id": "u", "text": "bees", "mode": "hybrid", "limit": 1})
    assert [m["id"] for m in got["messages"]] == [stored], got
    assert sc.shutdown() == 0
    assert [line for line in sc.stderr().splitlines() if line.strip() and "maintenance lease" not in line] == []


def test_another_model_asked_of_the_binary_says_how_to_get_one(spawn_frozen):
    """The binary carries its model and no hub client: `--model` of another one is refused at start-up with
    the two ways that work (a --model-dir, a binary built with that model), not a hub hint it cannot follow."""
    sc = spawn_frozen("--model", "intfloat/multilingual-e5-small", wait_ready=False)
    line = sc.recv(120)
    assert line["code"] == "startup_failed", line
    message = line["message"]
    assert "downloads no models" in message and "--model-dir" in message, message
    assert "build_binary.py --model intfloat/multilingual-e5-small" in message, message
    assert "ModuleNotFoundError" not in message and "HF_HUB_OFFLINE" not in message, message
    assert sc.proc.wait(30) == 1


def test_ready_offline_with_bundled_model(spawn_frozen):
    """Empty data dir, no network (a fresh network namespace when the machine allows one), no
    Python environment: `ready`, and the model comes from inside the binary."""
    wrapper = []
    if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
        wrapper = ["unshare", "-n"]  # only a loopback interface, which is down
    sc = spawn_frozen(wrapper=wrapper)
    assert sc.ready["memories"] == 0
    assert sc.ready["dim"] == 384
    stats = sc.request({"type": "stats"})
    assert stats["model"]["source"] == BUNDLED_SOURCE, stats
    assert stats["model"]["digest"] == sc.ready["model_digest"]
    sc.store("u1", "my cat Miso hates the vacuum")
    hits = sc.request({"type": "query", "user_id": "u1", "text": "tell me about pets", "limit": 1})
    assert hits["messages"][0]["content"] == "my cat Miso hates the vacuum"
    assert sc.shutdown() == 0


def test_startup_ms_counts_from_the_launchers_start(spawn_frozen):
    """A onefile launcher unpacks the whole bundle before Python starts, on every launch: `ready`'s startup_ms
    counts from the start of the process the host spawned (the launcher), so it is about what the host waited,
    not only the Python part (about 700 of 3,700 ms before; sidecar/runtime/process_start.py)."""
    t0 = time.monotonic()
    sc = spawn_frozen()
    waited_ms = (time.monotonic() - t0) * 1000
    assert 0.5 * waited_ms <= sc.ready["startup_ms"] <= waited_ms + 20, (sc.ready["startup_ms"], waited_ms)
    assert sc.shutdown() == 0


def test_onedir_folder_serves_offline_with_its_bundled_model(onedir_binary, tmp_path, spawn):
    """The onedir folder, moved whole: `ready` with no Python environment, the model from inside the
    folder, and every golden transcript answered as the Python package answers it."""
    sc = spawn(data_dir=tmp_path / "data", command=[str(onedir_binary)], base_env=host_env(tmp_path))
    assert sc.request({"type": "stats"})["model"]["source"] == BUNDLED_SOURCE
    assert sc.shutdown() == 0
    for i, path in enumerate(EXAMPLES):
        replay(
            spawn(
                "--ttl-days",
                "0",
                data_dir=tmp_path / f"golden{i}",
                wait_ready=False,
                command=[str(onedir_binary)],
                base_env=host_env(tmp_path),
            ),
            path,
        )


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_golden_transcripts(spawn_frozen, path):
    replay(spawn_frozen("--ttl-days", "0", wait_ready=False), path)


def test_stdout_clean_utf8_with_debug_logging_and_warnings(spawn_frozen):
    """C locale, a non-ASCII data dir, debug logs: stdout still carries only protocol lines, in UTF-8."""
    text = "caf\u00e9 \u732b \U0001f408 \u201cquoted\u201d"
    sc = spawn_frozen("--log-level", "debug", name="d\u00e4t\u00e4 \u732b", env={"PYTHONWARNINGS": "always"})
    assert sc.ready["data_dir"].endswith("d\u00e4t\u00e4 \u732b")
    mid = sc.store("u\u00e9", text)
    hits = sc.request({"type": "query", "user_id": "u\u00e9", "text": text, "limit": 1})
    assert hits["messages"][0]["id"] == mid and hits["messages"][0]["content"] == text
    assert sc.shutdown() == 0
    assert "DEBUG" in sc.stderr()  # the logs went somewhere, and it was not stdout
    assert text.encode("utf-8") in b"".join(sc.raw_stdout)
    for raw in sc.raw_stdout:
        assert raw.endswith(b"\n") and isinstance(orjson.loads(raw), dict), raw


def test_mcp_face_is_left_out_and_says_how_to_get_it(frozen_binary, tmp_path):
    """The MCP extra stays out of the binary (pyinstaller.spec); `mcp` exits 2 with the way to get it."""
    out = subprocess.run(
        [str(frozen_binary), "mcp", "--data-dir", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=host_env(tmp_path),
    )
    assert out.returncode == 2 and out.stdout == ""
    assert "pip install '.[mcp]' in a clone of the repository" in out.stderr, out.stderr
    assert "py3-none-any.whl[mcp]'" in out.stderr and "not on PyPI yet" in out.stderr
    assert not (tmp_path / "data").exists()


@posix_only("SIGTERM")
def test_http_face_serves_from_the_binary(frozen_binary, tmp_path, spawn):
    """`serve` is in the binary (pyinstaller.spec: uvicorn's string imports): ready with url and token_file, a
    seed route and a command over real HTTP, SIGTERM exits 0."""
    import http.client
    from urllib.parse import urlsplit

    sc = spawn("--listen", "127.0.0.1:0", command=[str(frozen_binary), "serve"], base_env=host_env(tmp_path))
    url = urlsplit(sc.ready["url"])
    head = {"Authorization": "Bearer " + Path(sc.ready["token_file"]).read_text().strip()}
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    conn.request("POST", "/ingest", body=b'{"user_id":"u","content":"my cat Miso"}', headers=head)
    stored = orjson.loads(conn.getresponse().read())
    conn.request("POST", "/v1/command", body=b'{"type":"query","user_id":"u","text":"pets","limit":1}', headers=head)
    found = orjson.loads(conn.getresponse().read())
    assert [m["id"] for m in found["messages"]] == [stored["id"]], (stored, found)
    conn.close()
    sc.proc.send_signal(signal.SIGTERM)
    assert sc.proc.wait(60) == 0, sc.stderr()


HOST = textwrap.dedent("""
    import json, subprocess, sys, time
    child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    line = child.stdout.readline()
    assert json.loads(line)["type"] == "ready", line
    child.stdin.write(b'{"type":"store","user_id":"1","content":"hello"}\\n'); child.stdin.flush()
    assert json.loads(child.stdout.readline())["type"] == "ok"
    print("ready", flush=True)
    time.sleep(600)
""")


@linux_only
def test_no_orphans_when_the_host_is_killed(frozen_binary, tmp_path):
    """A host (a Python process holding the pipes) is SIGKILLed without sending shutdown: the
    launcher and the sidecar process are gone within 2 s and the unpack folder is removed."""
    host = subprocess.Popen(
        [sys.executable, "-c", HOST, str(frozen_binary), "--data-dir", str(tmp_path / "data")],
        stdout=subprocess.PIPE,
        env=host_env(tmp_path),
    )
    try:
        assert host.stdout.readline().strip() == b"ready"
        tree = descendants(host.pid)
        assert tree, "the host has no child process"
        unpacked = set().union(*(meipass_dirs(p) for p in tree))
        host.send_signal(signal.SIGKILL)
        host.wait(10)
        elapsed, alive = wait_gone(tree, timeout=10)
        assert not alive, f"still running {elapsed:.1f}s after the host died: {alive}"
        assert elapsed < ORPHAN_DEADLINE, f"the sidecar took {elapsed:.2f}s to exit after the host died"
        assert not [d for d in unpacked if d.exists()], f"unpack folder left behind: {unpacked}"
    finally:
        kill_all(descendants(host.pid))
        if host.poll() is None:
            host.kill()


@linux_only
def test_no_orphans_when_the_launcher_is_killed(spawn_frozen):
    """onefile: the launcher (PyInstaller's bootloader, the host's direct child) is SIGKILLed while
    the host keeps the pipes open. The inner Python process notices its parent changed and exits
    within 2 s; it also removes the unpack folder the dead launcher can no longer clean up."""
    sc = spawn_frozen()
    kept = sc.store("u1", "written before the launcher was killed")
    launcher = sc.proc.pid
    inner = children(launcher)
    assert inner, "the onefile launcher should run the sidecar as its child"  # the fixture builds onefile
    unpacked = meipass_dirs(inner[0])
    assert unpacked, "found no _MEI unpack folder in the sidecar's mappings"
    try:
        os.kill(launcher, signal.SIGKILL)
        sc.proc.wait(10)
        elapsed, alive = wait_gone(inner, timeout=10)
        assert not alive, f"inner process still running {elapsed:.1f}s after the launcher died: {alive}"
        assert elapsed < ORPHAN_DEADLINE, f"the sidecar took {elapsed:.2f}s to exit after the launcher died"
        deadline = time.monotonic() + 5
        while any(d.exists() for d in unpacked) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [d for d in unpacked if d.exists()], f"unpack folder left behind: {unpacked}"
    finally:
        kill_all(inner)
        for folder in unpacked:  # do not litter the temp dir when the test fails
            shutil.rmtree(folder, ignore_errors=True)
    # the data written before stays usable: a new sidecar opens the same data dir (lock released)
    again = spawn_frozen()  # same data dir
    hits = again.request({"type": "query", "user_id": "u1", "text": "launcher killed", "limit": 1})["messages"]
    assert [m["id"] for m in hits] == [kept]
    assert again.shutdown() == 0


@posix_only("the suite stops the sidecar with SIGSTOP and links it into PATH")
def test_typescript_client_suite_against_the_onedir_binary(onedir_binary, npm):
    """The TypeScript client's integration suite (clients/typescript/test/integration.test.ts), the one that
    test_typescript_client.py runs against `python -m sidecar`, against the binary a desktop app spawns
    (SIDECAR_BIN). The onedir build, the release artifact for Tauri (docs/hosts.md): its pid is the sidecar,
    so the suite's SIGSTOP test stops what answers (with a onefile build it stops only the launcher, and the
    suite skips that test)."""
    node = shutil.which("node")
    run_ts([npm, "run", "--silent", "build"], timeout=300)
    proc = run_ts(
        [node, "--test", "--test-concurrency=1", "dist/test/integration.test.js"],
        timeout=600,
        env={"SIDECAR_BIN": str(onedir_binary)},
    )
    summary = dict(re.findall(r"^(?:#|\u2139) (tests|pass|fail|skipped) (\d+)\s*$", proc.stdout, re.M))
    assert int(summary.get("tests", 0)) >= 15 and summary.get("fail") == "0" and summary.get("skipped") == "0", (
        f"unexpected summary {summary}:\n{proc.stdout[-OUTPUT_TAIL:]}"
    )
    assert re.search(
        r"^\s*(?:ok \d+ - |\u2714 )serves from the frozen binary when SIDECAR_BIN is set\b", proc.stdout, re.M
    ), f"the suite did not run against the binary:\n{proc.stdout[-OUTPUT_TAIL:]}"
