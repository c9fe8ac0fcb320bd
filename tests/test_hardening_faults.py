"""Resource faults: a read-only data dir, a full disk (a small tmpfs), deleted and corrupted table
files, a model file that is not the one the data was made with. Each must give a clear error line or
a clear start-up failure (startup_failed + stderr + exit 1), never a silent wrong answer, and must not
damage data that was fine.

The read-only and full-disk cases mount a tmpfs in a private mount namespace (`unshare -m`, as root)
held by a `sleep` process, and run the real sidecar inside it with `nsenter -m`.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import LINUX, Sidecar

# a tmpfs in a private mount namespace: Linux, as root (.ci/run is; GitHub's runners are not)
needs_namespace = pytest.mark.skipif(
    not (LINUX and os.geteuid() == 0),
    reason="Linux as root only: a tmpfs in a private mount namespace (unshare -m, mount, nsenter)",
)


class Namespace:
    """A private mount namespace with a tmpfs at `mountpoint`, alive until close()."""

    def __init__(self, mountpoint: Path, size: str):
        mountpoint.mkdir(parents=True, exist_ok=True)
        self.mountpoint = mountpoint
        self.holder = subprocess.Popen(
            [
                "unshare",
                "-m",
                "--propagation",
                "private",
                "sh",
                "-c",
                f"mount -t tmpfs -o size={size},mode=0700 tmpfs '{mountpoint}' && echo mounted && exec sleep 600",
            ],
            stdout=subprocess.PIPE,
        )
        assert self.holder.stdout is not None and self.holder.stdout.readline() == b"mounted\n"

    def run(self, *cmd: str) -> None:
        subprocess.run(["nsenter", "-t", str(self.holder.pid), "-m", *cmd], check=True)

    def read_only(self, on: bool) -> None:
        """A read-only bind mount over the tmpfs (a remount of the tmpfs itself is refused while the
        sidecar holds files open for writing); off: remove it."""
        mp = str(self.mountpoint)
        if on:
            self.run("mount", "--bind", mp, mp)
            self.run("mount", "-o", "remount,bind,ro", mp)
        else:
            self.run("umount", mp)

    def command(self) -> list[str]:
        return ["nsenter", "-t", str(self.holder.pid), "-m", sys.executable, "-m", "sidecar"]

    def close(self) -> None:
        self.holder.send_signal(signal.SIGKILL)
        self.holder.wait(10)


@pytest.fixture
def namespace(tmp_path):
    spaces: list[Namespace] = []

    def make(size: str) -> Namespace:
        ns = Namespace(tmp_path / f"mnt{len(spaces)}", size)
        spaces.append(ns)
        return ns

    yield make
    for ns in spaces:
        ns.close()


def contents(sc: Sidecar, user: str) -> list[str]:
    res = sc.request({"type": "query", "user_id": user, "text": "memory", "limit": 100})
    assert res["type"] == "results", res
    return sorted(m["content"] for m in res["messages"])


@needs_namespace
def test_read_only_data_dir(namespace, spawn):
    ns = namespace("64m")
    data_dir = ns.mountpoint / "data"
    sc = spawn(data_dir=data_dir, command=ns.command())
    sc.store("u", "memory written before the disk went read-only")
    # the file system turns read-only under a running sidecar: writes fail with an error line, reads go on
    ns.read_only(True)
    kept = ["memory written before the disk went read-only"]
    r = sc.request({"type": "store", "user_id": "u", "content": "memory that cannot be written"})
    if r["type"] == "ok":  # the write-ahead log's segment was already open, and an open file takes
        kept.append("memory that cannot be written")  # writes: acknowledged, so it must be kept
    else:
        assert r["code"] == "internal", r
        assert "Read-only file system" in r["message"] or "os error 30" in r["message"], r
    assert sc.request({"type": "cleanup", "ttl_days": 1})["type"] == "error"  # a LanceDB write fails clearly
    r = sc.request({"type": "query", "user_id": "u", "text": "memory", "limit": 100})
    if r["type"] == "error":  # the acknowledged memory was still only in the write-ahead log: a read
        # that needs the table says so rather than answer without it
        assert r["code"] == "internal" and "write-ahead log" in r["message"], r
    else:
        assert sorted(m["content"] for m in r["messages"]) == sorted(kept)
    assert sc.request({"type": "ping"})["type"] == "pong"
    assert sc.shutdown() == 0
    # starting on a read-only data dir: a clear start-up failure (the lock cannot be taken)
    sc = spawn(data_dir=data_dir, command=ns.command(), wait_ready=False)
    r = sc.recv()
    assert r["code"] == "startup_failed" and "Read-only file system" in r["message"], r
    assert sc.proc.wait(30) == 1
    assert "start-up failed" in sc.stderr() and "Read-only file system" in sc.stderr()
    # writable again: everything acknowledged is there
    ns.read_only(False)
    sc = spawn(data_dir=data_dir, command=ns.command())
    assert contents(sc, "u") == sorted(kept)
    assert sc.shutdown() == 0


@needs_namespace
def test_full_disk(namespace, spawn):
    ns = namespace("2m")
    data_dir = ns.mountpoint / "data"
    sc = spawn("--compact-every-writes", "1000", data_dir=data_dir, command=ns.command())
    acked: list[str] = []
    failed = None
    for i in range(200):
        # incompressible content, so that the 2 MiB fill up after a few dozen memories
        batch = [f"memory {i}-{k} " + base64.b64encode(os.urandom(22_000)).decode() for k in range(10)]
        r = sc.request({"type": "store", "messages": [{"user_id": "u", "content": c} for c in batch]})
        if r["type"] == "ok":
            acked.extend(batch)
            continue
        failed = r
        break
    assert failed is not None, "the 2 MiB disk never filled up"
    print(f"full disk after {len(acked)} memories: {failed['message'][:300]}")
    assert failed["code"] == "internal" and (
        "No space left on device" in failed["message"] or "os error 28" in failed["message"]
    ), failed
    assert acked, "nothing fitted before the disk was full"
    # still serving: reads answer, small requests answer, the failed batch is not there
    assert sc.request({"type": "ping"})["type"] == "pong"
    assert sc.request({"type": "stats"})["memories"] == len(acked)
    # space freed (the file system grows): writes work again, in the same process
    ns.run("mount", "-o", "remount,size=256m", str(ns.mountpoint))
    sc.store("u", "memory after space was freed")
    assert sc.shutdown() == 0
    # and a restart opens cleanly with every acknowledged memory
    sc = spawn("--max-window", "100000", data_dir=data_dir, command=ns.command())
    r = sc.request({"type": "history", "user_id": "u", "full_count": 100000, "mid_count": 0, "short_count": 0})
    assert r["messages"] == len(acked) + 1, (r["messages"], len(acked))
    assert sc.shutdown() == 0


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """A data dir with 20 memories of user u, made once; each test damages its own copy."""
    data_dir = tmp_path_factory.mktemp("pristine") / "data"
    sc = Sidecar(data_dir)
    r = sc.request({"type": "store", "messages": [{"user_id": "u", "content": f"memory {k}"} for k in range(20)]})
    assert r["type"] == "ok", r
    assert sc.shutdown() == 0
    return data_dir


def _made_dir(pristine: Path, data_dir: Path) -> None:
    shutil.copytree(pristine, data_dir)
    (data_dir / "sidecar.lock").unlink(missing_ok=True)


def _start_or_error(spawn, data_dir: Path) -> tuple[dict, Sidecar]:
    sc = spawn(data_dir=data_dir, wait_ready=False)
    first = sc.recv()
    return first, sc


def _never_silent(first: dict, sc: Sidecar) -> str:
    """Either a clear start-up failure, or every read of the lost data is an error line; never a
    successful answer missing the data."""
    if first["type"] == "error":
        assert first["code"] == "startup_failed", first
        assert sc.proc.wait(30) == 1
        assert "start-up failed" in sc.stderr()
        return "startup_failed"
    assert first["type"] == "ready"
    for req in ({"type": "query", "user_id": "u", "text": "memory", "limit": 50}, {"type": "history", "user_id": "u"}):
        r = sc.request(req)
        if r["type"] == "error":
            assert r["code"] == "internal" and len(r["message"]) > 20, r
        else:
            n = r["messages"] if isinstance(r["messages"], int) else len(r["messages"])
            assert n == 20, r  # an answer, when there is one, is the whole truth
    assert sc.request({"type": "ping"})["type"] == "pong"
    return "error lines"


@pytest.mark.parametrize(
    "damage",
    ["delete_data_file", "corrupt_data_file", "delete_versions", "corrupt_manifest", "delete_table", "truncate_meta"],
)
def test_damaged_table_files_never_give_a_silent_wrong_answer(spawn, tmp_path, pristine, damage):
    data_dir = tmp_path / "data"
    _made_dir(pristine, data_dir)
    table = data_dir / "lancedb" / "messages.lance"
    data_files = sorted((table / "data").glob("*.lance"), key=lambda p: p.stat().st_size)
    if damage == "delete_data_file":
        for f in data_files:
            f.unlink()
    elif damage == "corrupt_data_file":
        for f in data_files:
            raw = bytearray(f.read_bytes())
            raw[: len(raw) // 2] = os.urandom(len(raw) // 2)
            f.write_bytes(bytes(raw))
    elif damage == "delete_versions":
        shutil.rmtree(table / "_versions")
    elif damage == "corrupt_manifest":
        for f in (table / "_versions").iterdir():
            f.write_bytes(os.urandom(f.stat().st_size))
    elif damage == "delete_table":
        shutil.rmtree(table)
    elif damage == "truncate_meta":
        (data_dir / "meta.json").write_bytes(b'{"schema_ver')
    first, sc = _start_or_error(spawn, data_dir)
    outcome = _never_silent(first, sc)
    print(f"{damage}: {outcome}")
    if sc.alive():
        assert sc.shutdown() == 0


def test_model_file_that_is_not_the_data_dirs_model(spawn, tmp_path, pristine):
    from sidecar.embedding.model import resolve_model

    data_dir = tmp_path / "data"
    _made_dir(pristine, data_dir)
    files = resolve_model(None, True, None)
    model_dir = tmp_path / "model"
    shutil.copytree(files.onnx.parent, model_dir)
    onnx = model_dir / files.onnx.name
    raw = bytearray(onnx.read_bytes())
    raw[-4096:] = bytes(4096)  # a damaged tail: still loads, but it is not the same model
    onnx.write_bytes(bytes(raw))
    # a pinned checksum catches it before anything else
    sc = spawn("--model-dir", str(model_dir), "--model-sha256", files.digest, data_dir=data_dir, wait_ready=False)
    r = sc.recv()
    assert r["code"] == "startup_failed" and "sha256" in r["message"], r
    assert sc.proc.wait(30) == 1
    # without a pin, the data dir's model identity refuses it (vectors of two models never mix)
    sc = spawn("--model-dir", str(model_dir), data_dir=data_dir, wait_ready=False)
    r = sc.recv()
    assert r["code"] == "startup_failed", r
    assert sc.proc.wait(30) == 1
    # the data was not touched
    sc = spawn(data_dir=data_dir)
    assert len(contents(sc, "u")) == 20
    assert sc.shutdown() == 0
