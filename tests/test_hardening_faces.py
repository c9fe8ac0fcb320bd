"""Hostile input on the faces added after round one (issue 60), over the real process: import and export
files (devices, FIFOs, gzip bombs, links, existing files, the data dir, broken headers, a full disk), ids
of another user, answers of bounded size, inverted windows; then a property test mixing random paths,
headers and id/user pairs. One sidecar serves every case of the module (its working directory: a folder
of its own, so relative paths land there)."""

from __future__ import annotations

import gzip
import os
import socket
import subprocess
import sys
import time

import orjson
import pytest
from conftest import ROOT, Sidecar
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

POSIX = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, UNIX sockets and /dev/zero are POSIX only")
BOUND_SECONDS = 10.0  # issue 60: a file of at most 100 KB compressed is imported or refused within 10 s
PROMPT_SECONDS = 1.0  # issue 60: a device, FIFO, directory or data-dir path is answered within 1 s, a ping too
STDERR_BYTES = 1_000_000  # issue 60: stderr written by one import
QUOTE = 200  # characters of its input an error message may quote


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("faces")
    (root / "cwd").mkdir()
    sc = Sidecar(root / "data", "--ttl-days", "0", cwd=root / "cwd")
    try:
        yield sc, root
    finally:
        if sc.alive():
            assert sc.shutdown() == 0
        else:
            sc.kill()


def _timed(sc: Sidecar, request: dict, timeout: float = 60) -> tuple[dict, float, int]:
    """The answer, its seconds and the bytes written on stderr meanwhile."""
    before = sc.stderr_path.stat().st_size
    t0 = time.monotonic()
    r = sc.request(request, timeout)
    return r, time.monotonic() - t0, sc.stderr_path.stat().st_size - before


def _ping_behind(sc: Sidecar, request: dict) -> tuple[dict, float]:
    """`request` and a ping sent together: the first answer, and the seconds until the ping's."""
    t0 = time.monotonic()
    sc.send(request)
    sc.send({"type": "ping"})
    first = sc.recv(60)
    assert sc.recv(60)["type"] == "pong"
    return first, time.monotonic() - t0


def _header(**extra) -> dict:
    return {
        "kind": "header",
        "format": "memory-sidecar-export",
        "format_version": 1,
        "product_version": "0.1.0",
        "created_at": 1.0,
        "user_id": None,
        "vectors": False,
        "model": {"name": "m", "dim": 4, "digest": "d"},
        "schema_version": 4,
        "graph": False,
        **extra,
    }


def _lines(*objs) -> bytes:
    return b"".join(orjson.dumps(o) + b"\n" for o in objs)


def _bounded(message: str, needle: str) -> None:
    """The message quotes at most QUOTE characters of the repeated input `needle` (and is short)."""
    assert needle * (QUOTE + 1) not in message and len(message) <= 1000, (len(message), message[:300])


# ---------------------------------------------------------------- import: what is not a regular file


@POSIX
def test_import_refuses_devices_fifos_sockets_and_directories_at_once(env):
    sc, root = env
    fifo = root / "no-writer.fifo"
    os.mkfifo(fifo)
    sock_path = root / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    try:
        for path, what in (
            ("/dev/zero", "character device"),
            (str(fifo), "FIFO"),
            (str(sock_path), "socket"),
            (str(root), "directory"),
        ):
            r, seconds = _ping_behind(sc, {"type": "import", "path": path})
            assert r["type"] == "error" and r["code"] == "bad_file" and what in r["message"], r
            assert seconds < PROMPT_SECONDS, (path, seconds)
    finally:
        server.close()
    # the data dir's own files: refused before they are opened (export and import alike)
    r, seconds = _ping_behind(sc, {"type": "import", "path": str(root / "data" / "meta.json")})
    assert r["code"] == "invalid_request" and "inside the data dir" in r["message"] and seconds < PROMPT_SECONDS, r


# ---------------------------------------------------------------- import: small files that expand


def test_gzip_bombs_and_bad_records_are_bounded_by_the_file(env):
    sc, root = env
    before = sc.request({"type": "stats"})["memories"]
    bombs = {  # each made here, at most 100 KB compressed (scripts/bench.py hostile-files: the full 100 KB)
        "newlines": (b"\n" * (32 << 20), "expands past 100 times its size"),
        "empty-objects": (b"{}\n" * (8 << 20), "more than 1000 invalid records"),
        "one-line-repeated": (
            b'{"user_id":"bomb","content":"hello there","timestamp":1700000000}\n' * 200_000,
            "expands past 100 times its size",
        ),
        "long-line": (b"x" * (24 << 20), "expands past 100 times its size"),
    }
    for name, (data, words) in bombs.items():
        path = root / f"{name}.jsonl.gz"
        path.write_bytes(gzip.compress(data, 9))
        assert path.stat().st_size <= 100_000, (name, path.stat().st_size)
        r, seconds, stderr = _timed(sc, {"type": "import", "path": str(path)})
        assert r["type"] == "error" and r["code"] == "bad_file" and words in r["message"], (name, r)
        assert seconds < BOUND_SECONDS and stderr <= STDERR_BYTES, (name, seconds, stderr)
        assert "nothing was imported" in r["message"], r  # the walk stopped before its first batch
    assert sc.request({"type": "stats"})["memories"] == before
    # the bounds are options: raised, the same files are read through
    r = sc.request({"type": "import", "path": str(root / "newlines.jsonl.gz"), "max_expansion": 0})
    assert r["type"] == "imported" and r["messages"] == 0 and r["invalid"] == 0, r
    few = root / "few-bad.jsonl"
    few.write_bytes(b"{}\n" * 5 + _lines({"user_id": "few", "content": "fine", "timestamp": 1}))
    r = sc.request({"type": "import", "path": str(few), "max_invalid": 3})
    assert r["code"] == "bad_file" and "more than 3 invalid records" in r["message"], r
    r, _, stderr = _timed(sc, {"type": "import", "path": str(few), "max_invalid": 0})
    assert (r["messages"], r["invalid"], len(r["errors"])) == (1, 5, 5), r
    r = sc.request({"type": "import", "path": str(few), "max_invalid": -1})
    assert r["code"] == "invalid_request" and "max_invalid" in r["message"], r


def test_one_import_writes_at_most_1_mb_of_stderr(env):
    sc, root = env
    path = root / "many-bad.jsonl"
    path.write_bytes(b'{"kind":"' + b"k" * 5000 + b'"}\n' + b"[1]\n" * 50_000)
    r, seconds, stderr = _timed(sc, {"type": "import", "path": str(path), "max_invalid": 0})
    assert r["type"] == "imported" and r["invalid"] == 50_001 and len(r["errors"]) == 20, r
    assert seconds < BOUND_SECONDS and stderr <= STDERR_BYTES, (seconds, stderr)
    assert "50001 invalid records" in sc.stderr()  # the rest counted at the end
    _bounded(r["errors"][0]["message"], "k")


# ---------------------------------------------------------------- export: where it writes, and how


def test_export_writes_only_new_regular_files_outside_the_data_dir(env):
    sc, root = env
    sc.store("exp", "a memory to export")
    data, cwd = root / "data", root / "cwd"
    meta = (data / "meta.json").read_bytes()
    # a relative path is relative to the working directory, never the data dir
    r = sc.request({"type": "export", "out": "meta.json", "user_id": "exp", "vectors": False})
    assert r["type"] == "exported" and r["path"] == str(cwd / "meta.json"), r
    assert (data / "meta.json").read_bytes() == meta
    for out in (str(data / "meta.json"), str(data / "lancedb" / "x.jsonl"), str(data / "new.jsonl")):
        r, seconds = _ping_behind(sc, {"type": "export", "out": out, "overwrite": True})
        assert r["code"] == "invalid_request" and "inside the data dir" in r["message"], r
        assert seconds < PROMPT_SECONDS, seconds
    assert (data / "meta.json").read_bytes() == meta and not (data / "new.jsonl").exists()
    # an existing file: refused unless overwrite
    precious = root / "precious.txt"
    precious.write_text("keep me")
    r = sc.request({"type": "export", "out": str(precious), "user_id": "exp"})
    assert r["code"] == "conflict" and "overwrite" in r["message"] and precious.read_text() == "keep me", r
    r = sc.request({"type": "export", "out": str(precious), "user_id": "exp", "overwrite": True})
    assert r["type"] == "exported" and precious.read_bytes().startswith(b'{"kind":"header"'), r
    assert not [p for p in root.rglob("*.partial")]


@POSIX
def test_export_never_writes_through_a_link_or_to_anything_but_a_regular_file(env):
    # targets of our own only: a regression must never replace a system device such as /dev/null
    sc, root = env
    target = root / "target.txt"
    target.write_text("the link's target")
    link = root / "link.jsonl"
    link.symlink_to(target)
    into_data = root / "to-data"
    into_data.symlink_to(root / "data")
    fifo = root / "out.fifo"
    os.mkfifo(fifo)
    for out, words in (
        (link, "symbolic link"),
        (into_data / "x.jsonl", "inside the data dir"),
        (fifo, "FIFO"),
        (root, "directory"),
    ):
        r, seconds = _ping_behind(sc, {"type": "export", "out": str(out), "overwrite": True})
        assert r["type"] == "error" and r["code"] == "invalid_request" and words in r["message"], (out, r)
        assert seconds < PROMPT_SECONDS, (out, seconds)
    assert target.read_text() == "the link's target" and link.is_symlink() and fifo.is_fifo()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prlimit (RLIMIT_FSIZE) stands in for a full disk")
def test_a_write_failure_is_io_error_and_leaves_nothing(env):
    import resource

    sc, root = env
    sc.request(
        {"type": "store", "messages": [{"user_id": "big", "content": f"memory number {i} of many"} for i in range(60)]}
    )
    out = root / "full-disk.jsonl"
    # a first export commits the logged rows to LanceDB: under the limit below, only the export writes
    assert sc.request({"type": "export", "out": str(out), "user_id": "big"})["messages"] == 60
    out.unlink()
    # a file may grow to 32 KiB
    soft, hard = resource.prlimit(sc.proc.pid, resource.RLIMIT_FSIZE)
    resource.prlimit(sc.proc.pid, resource.RLIMIT_FSIZE, (32 << 10, hard))
    try:
        r = sc.request({"type": "export", "out": str(out), "user_id": "big"})
    finally:
        resource.prlimit(sc.proc.pid, resource.RLIMIT_FSIZE, (soft, hard))
    assert r["type"] == "error" and r["code"] == "io_error" and "cannot write" in r["message"], r
    assert not out.exists() and not list(root.glob(".full-disk*"))
    # a folder that cannot be made (a file stands in its place)
    r = sc.request({"type": "export", "out": str(root / "precious.txt" / "x.jsonl"), "overwrite": True})
    assert r["code"] == "io_error", r
    assert sc.request({"type": "export", "out": str(out), "user_id": "big"})["messages"] == 60


# ---------------------------------------------------------------- the header


@pytest.mark.parametrize("version", [0, -3, "abc", None, "missing", "2", 2.0, 1e30, True])
def test_format_version_must_be_a_positive_integer(env, version):
    sc, root = env
    header = _header() if version == "missing" else _header(format_version=version)
    if version == "missing":
        del header["format_version"]
    path = root / "header.jsonl"
    path.write_bytes(
        _lines(
            header,
            {"kind": "message", "id": "hv", "user_id": "hv", "content": "x", "timestamp": 5},
            {"kind": "end", "counts": {}},
        )
    )
    r = sc.request({"type": "import", "path": str(path)})
    assert r["type"] == "error" and r["code"] == "bad_file" and "`format_version`" in r["message"], r


def test_a_byte_order_mark_is_skipped(env):
    sc, root = env
    path = root / "bom.jsonl"
    path.write_bytes(
        b"\xef\xbb\xbf"
        + _lines(
            _header(),
            {"kind": "message", "id": "bom-1", "user_id": "bom", "content": "after a BOM", "timestamp": 5},
            {"kind": "end", "counts": {}},
        )
    )
    r = sc.request({"type": "import", "path": str(path)})
    assert (r["format"], r["messages"], r["invalid"], r["errors"]) == ("export", 1, 0, []), r


# ---------------------------------------------------------------- ids of another user


def _entity_ids(sc: Sidecar, user: str, want: int = 2) -> list[str]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the graph is built in the background
        found = [e["id"] for e in sc.request({"type": "entities", "user_id": user})["entities"]]
        if len(found) >= want:
            return found
        time.sleep(0.3)
    raise AssertionError(f"no entities for {user}")


def test_an_id_of_another_user_is_not_found_like_an_unknown_id(env):
    sc, _ = env
    msg = sc.store("alice", "My sister Anna lives in Lisbon and works at Acme Robotics")
    fact = sc.request({"type": "remember", "user_id": "alice", "text": "Likes green tea", "category": "preference"})[
        "fact"
    ]["id"]
    other = sc.request({"type": "remember", "user_id": "alice", "text": "Works at Acme", "category": "company"})[
        "fact"
    ]["id"]
    sc.store("bob", "I grow tomatoes on my balcony in Porto")
    ents = _entity_ids(sc, "alice")
    unknown = "no-such-id"
    asks = [
        ({"type": "delete", "id": msg}, "id"),
        ({"type": "fact_history", "fact_id": fact}, "fact_id"),
        ({"type": "update_fact", "fact_id": fact, "text": "Likes coffee"}, "fact_id"),
        ({"type": "forget_fact", "fact_id": fact}, "fact_id"),
        ({"type": "resolve", "fact_id": fact, "candidate_id": other, "action": "KEEP"}, "fact_id"),
        ({"type": "entity", "id": ents[0]}, "id"),
        ({"type": "merge_entities", "source": ents[0], "target": ents[1]}, "source"),
    ]
    for request, key in asks:
        theirs = sc.request({**request, "user_id": "bob"})
        nobody = sc.request({**request, "user_id": "bob", key: unknown})
        assert theirs["type"] == "error" and theirs["code"] == "not_found", (request, theirs)
        # no oracle: the same answer as for an id nobody has
        assert theirs["message"].replace(str(request[key]), unknown) == nobody["message"], (theirs, nobody)
    # alice's memory is untouched, and her own user_id (or none, as before) reaches it
    assert (
        sc.request({"type": "fact_history", "fact_id": fact, "user_id": "alice"})["fact"]["text"] == "Likes green tea"
    )
    assert sc.request({"type": "fact_history", "fact_id": fact})["type"] == "fact_history"
    assert sc.request({"type": "entity", "user_id": "alice", "id": ents[0]})["type"] == "entity"
    r = sc.request({"type": "delete", "id": msg, "user_id": "alice"})
    assert (r["type"], r["deleted"], r["tombstone"]["id"]) == ("ok", 1, msg), r


# ---------------------------------------------------------------- answers of bounded size, windows


def test_error_messages_quote_at_most_200_characters(env):
    sc, root = env
    big = "q" * 300_000
    cases = [
        {"type": big},
        {"type": "fact_history", "fact_id": "q" * 512},
        {"type": "delete", "id": "q" * 512, "user_id": "q" * 512},
        {"type": "entity", "user_id": "q" * 512, "id": "q" * 512},
        {"type": "import", "path": str(root / ("q" * 4000))},
        {"type": "import", "path": "q" * 5000},
        {"type": "recall", "text": "x", "users": {big: None}},
        {"type": "store", "user_id": "u", "content": "x", "username": 5, big: 1},
        {"type": "remember", "user_id": "u", "text": "x", "category": big},
        {"type": "export", "out": str(root / "qq" / ("q" * 3000))},
    ]
    for request in cases:
        r = sc.request(request)
        assert r["type"] == "error", r
        _bounded(r["message"], "q")
    bad = root / "quoting.jsonl"
    bad.write_bytes(
        _lines(
            _header(),
            {"kind": "message", "id": "i", "user_id": "u", "content": "x", "timestamp": 1, big: 1},
            {"kind": big},
            {"kind": "end", "counts": {}},
        )
    )
    r = sc.request({"type": "import", "path": str(bad)})
    assert r["invalid"] == 2, r
    for e in r["errors"]:
        _bounded(e["message"], "q")
    header = root / "quoting-header.jsonl"
    header.write_bytes(_lines(_header(format_version=big)))
    _bounded(sc.request({"type": "import", "path": str(header)})["message"], "q")


def test_command_line_errors_quote_at_most_200_characters(tmp_path):
    """An option's error on the command line (or from its environment variable) names the option and quotes
    a bounded part of the value: ConfigError's messages had quoted a 20,000-character --data-dir whole."""
    big = "q" * 20_000  # under Windows' 32,767-character command line
    for args, extra_env in (
        (["--data-dir", f"ftp://{big}"], {}),
        (["--data-dir", f"s3://{big}"], {}),
        (["--languages", big], {}),
        (["--llm-base-url", big], {}),
        ([], {"MEMORY_SIDECAR_THREADS": big}),
    ):
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_SIDECAR_")}
        if not args:
            args = ["--data-dir", str(tmp_path / "data")]
        proc = subprocess.run(
            [sys.executable, "-m", "sidecar", *args],
            env={**full_env, **extra_env},
            capture_output=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        err = proc.stderr.decode()
        assert proc.returncode == 2 and proc.stdout == b"", proc  # a configuration error: nothing on stdout
        assert "configuration error" in err, err[:300]
        _bounded(err, "q")


def test_an_inverted_window_is_invalid(env):
    sc, _ = env
    for kind in ("query", "graph_recall"):
        r = sc.request({"type": kind, "user_id": "alice", "text": "Lisbon", "since": 2_000_000_000, "until": 1000})
        assert r["type"] == "error" and r["code"] == "invalid_request" and "`since`" in r["message"], r
        r = sc.request({"type": kind, "user_id": "alice", "text": "Lisbon", "since": 1000, "until": 1000})
        assert r["type"] != "error", r


# ---------------------------------------------------------------- the command line


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sidecar", *args], capture_output=True, text=True, timeout=timeout, cwd=str(ROOT)
    )


def test_cli_refuses_an_existing_out_and_a_broken_header(tmp_path):
    data = tmp_path / "data"
    existing = tmp_path / "existing.jsonl"
    existing.write_text("mine")
    r = _cli("export", "--out", str(existing), "--data-dir", str(data))
    assert r.returncode == 1 and "conflict" in r.stderr and "--overwrite" in r.stderr and r.stdout == "", r.stderr
    assert existing.read_text() == "mine"
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(_lines(_header(format_version="abc")))
    r = _cli("import", str(broken), "--data-dir", str(data))
    assert r.returncode == 1 and "bad_file" in r.stderr and "format_version" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


# ---------------------------------------------------------------- random paths, headers and id/user pairs

NAMES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00/\\"), min_size=1, max_size=40)
INTS = st.integers(-(2**63), 2**63 - 1)  # what JSON numbers orjson writes
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    INTS,
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.lists(INTS, max_size=3),
    st.dictionaries(st.text(max_size=5), INTS, max_size=2),
)


@POSIX
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_paths_headers_and_ids_never_fail_hang_or_cross_users(env, data):
    sc, root = env
    play = root / "play"
    play.mkdir(exist_ok=True)
    fifo = play / "a.fifo"  # never a system device: export, should it regress, would replace it
    if not fifo.exists():
        os.mkfifo(fifo)
    specials = [
        str(root / "data"),
        str(root / "data" / "meta.json"),
        str(fifo),
        str(root),
        "meta.json",
        "~nosuchuser/x",
        ".",
        "..",
        "./",
        str(play / ("n" * 300)),
        " ",
        "\n",
    ]
    path = data.draw(
        st.one_of(
            st.sampled_from(specials),
            NAMES.map(lambda n: str(play / n)),
            st.lists(NAMES, min_size=1, max_size=3).map(lambda p: "play/" + "/".join(p)),
        )
    )
    header = data.draw(st.dictionaries(st.sampled_from(sorted(_header())), VALUES, max_size=4))
    header = {**_header(), **header} if data.draw(st.booleans()) else {"kind": "header", **header}
    owner = data.draw(st.sampled_from(["alice", "bob", "carol"]))
    asker = data.draw(st.one_of(st.sampled_from(["alice", "bob", "carol"]), NAMES))
    mine = sc.store(owner, f"a memory of {owner}")
    before = {u: _ids(sc, u) for u in ("alice", "bob", "carol")}

    requests = [
        {"type": "export", "out": path, "user_id": asker, "vectors": False, "overwrite": data.draw(st.booleans())},
        {"type": "import", "path": path},
    ]
    file = play / "random-header.jsonl"
    file.write_bytes(
        _lines(
            header,
            {"kind": "message", "id": "rh", "user_id": "rh", "content": "x", "timestamp": 5},
            {"kind": "end", "counts": {}},
        )
    )
    requests.append({"type": "import", "path": str(file)})
    for kind, key in (("delete", "id"), ("fact_history", "fact_id"), ("forget_fact", "fact_id")):
        requests.append({"type": kind, key: data.draw(st.sampled_from([mine, "x"]) | NAMES), "user_id": asker})
    for request in requests:
        t0 = time.monotonic()
        r = sc.request(request, timeout=BOUND_SECONDS * 3)
        assert time.monotonic() - t0 < BOUND_SECONDS, (request, r)
        assert r["type"] != "error" or r["code"] in {
            "invalid_request",
            "bad_file",
            "conflict",
            "not_found",
            "io_error",
        }, (request, r)
        if r["type"] == "error":
            assert len(r["message"]) <= 1000
    for user, ids in before.items():  # only the asker's own memory can have gone
        assert ids <= _ids(sc, user) or user == asker, (user, asker, ids - _ids(sc, user))
    assert (root / "data" / "meta.json").is_file()


def _ids(sc: Sidecar, user: str) -> set[str]:
    r = sc.request({"type": "query", "user_id": user, "text": f"a memory of {user}", "mode": "keyword", "limit": 100})
    return {m["id"] for m in r["messages"]}
