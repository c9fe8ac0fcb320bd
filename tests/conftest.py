"""Test harness: spawns the real sidecar (`python -m sidecar`) with the real model and a real
LanceDB directory, and speaks the protocol to it through real pipes."""

from __future__ import annotations

import atexit
import os
import platform
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

ROOT = Path(__file__).resolve().parent.parent
# The mapped copies of the models the tests start (sidecar/embedding/mapped.py) go to a folder of this test process,
# not the user's cache, which the many models tests make would fill; a test that names its own keeps it.
MODEL_CACHE = Path(tempfile.mkdtemp(prefix="sidecar-test-model-cache-"))
atexit.register(shutil.rmtree, MODEL_CACHE, True)

# Tests that cannot run on an OS are skipped there with the reason (pytest -ra lists them in CI), never silently.
LINUX = sys.platform.startswith("linux")
WINDOWS = sys.platform == "win32"
GLIBC = LINUX and platform.libc_ver()[0] == "glibc"


def linux_only(reason: str):
    return pytest.mark.skipif(not LINUX, reason=f"Linux only: {reason}")


def glibc_only(reason: str):
    return pytest.mark.skipif(not GLIBC, reason=f"glibc (Linux) only: {reason}")


def posix_only(reason: str):
    return pytest.mark.skipif(WINDOWS, reason=f"not on Windows: {reason}")


def bare_env(**variables: str) -> dict[str, str]:
    """An environment of just these variables for a child Python; on Windows also SYSTEMROOT (without it
    Python cannot initialise its random numbers) and the temp folder."""
    keep = ("SYSTEMROOT", "SystemRoot", "TEMP", "TMP") if WINDOWS else ()
    return {**{k: os.environ[k] for k in keep if k in os.environ}, **variables}


def load_script(name: str):
    """A module from scripts/ (not a package), imported by path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Hang detectors, not timing assertions: a batch of 1,000 stores embeds in seconds on a quiet machine and took over
# a minute on a 2-core machine at load 20 (a full run beside other work), so they are generous.
READY_TIMEOUT = 120.0
RESPONSE_TIMEOUT = 180.0


class Sidecar:
    """A running sidecar process. Every stdout line it writes is checked to be one JSON object."""

    def __init__(
        self,
        data_dir: Path,
        *args: str,
        env: dict[str, str] | None = None,
        wait_ready: bool = True,
        command: list[str] | None = None,
        base_env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ):
        # base_env replaces the inherited environment (and then nothing is added to it)
        full_env = {
            k: v
            for k, v in (os.environ if base_env is None else base_env).items()
            if not k.startswith("MEMORY_SIDECAR_")
        }
        if base_env is None:
            full_env["PYTHONUNBUFFERED"] = "1"
            full_env["MEMORY_SIDECAR_MODEL_CACHE"] = str(MODEL_CACHE)
        full_env.update(env or {})
        self.data_dir = data_dir
        self.stderr_path = data_dir.parent / f"{data_dir.name}-stderr-{time.monotonic_ns()}.log"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            [*(command or [sys.executable, "-m", "sidecar"]), "--data-dir", str(data_dir), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=full_env,
            cwd=str(cwd or data_dir.parent),
            # Windows: its own process group, so CTRL_BREAK_EVENT (a host's graceful stop there) reaches it alone
            creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.raw_stdout: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.ready: dict[str, Any] | None = None
        if wait_ready:
            self.ready = self.recv(READY_TIMEOUT)
            assert self.ready["type"] == "ready", f"expected ready, got {self.ready}; stderr:\n{self.stderr()}"

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw_stdout.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def stderr(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, obj: dict[str, Any]) -> None:
        self.send_raw(orjson.dumps(obj) + b"\n")

    def recv(self, timeout: float = RESPONSE_TIMEOUT) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no response within {timeout}s; stderr:\n{self.stderr()}") from None
        if line is None:
            raise AssertionError(f"sidecar closed stdout (exit {self.proc.poll()}); stderr:\n{self.stderr()}")
        assert line.endswith(b"\n") and not line.endswith(b"\r\n"), line  # `\n` on every OS
        obj = orjson.loads(line)
        assert isinstance(obj, dict) and isinstance(obj.get("type"), str), line
        return obj

    def request(self, obj: dict[str, Any], timeout: float = RESPONSE_TIMEOUT) -> dict[str, Any]:
        self.send(obj)
        return self.recv(timeout)

    def store(self, user_id: str, content: str, **extra: Any) -> str:
        r = self.request({"type": "store", "user_id": user_id, "content": content, **extra})
        assert r["type"] == "ok", r
        return r["id"]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close_stdin(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass

    def shutdown(self, timeout: float = 60.0) -> int:
        if self.alive():
            try:
                r = self.request({"type": "shutdown"})
                assert r["type"] == "ok", r
            except (BrokenPipeError, AssertionError):
                pass
        self.close_stdin()
        code = self.proc.wait(timeout)
        self._reader.join(5)
        self._stderr.close()
        return code

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
        self.proc.wait(30)
        self._stderr.close()


def files_containing(root, needle: bytes) -> list[str]:
    """Paths of the files under root whose bytes contain needle (deleted content must leave none)."""
    hits = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as f:
                if needle in f.read():
                    hits.append(os.path.join(dirpath, name))
    return hits


@pytest.fixture
def spawn(tmp_path):
    """spawn(*args, data_dir=None, env=None, wait_ready=True, command=None, base_env=None, cwd=None) -> Sidecar
    (cwd: its working directory, default the folder holding the data dir, so a relative path a test
    names never lands in the checkout); all are stopped at teardown, and their stdout must
    have carried only JSON objects."""
    procs: list[Sidecar] = []

    def _spawn(
        *args: str,
        data_dir: Path | None = None,
        env: dict[str, str] | None = None,
        wait_ready: bool = True,
        command: list[str] | None = None,
        base_env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Sidecar:
        sc = Sidecar(
            data_dir or tmp_path / "data",
            *args,
            env=env,
            wait_ready=wait_ready,
            command=command,
            base_env=base_env,
            cwd=cwd,
        )
        procs.append(sc)
        return sc

    yield _spawn
    for sc in procs:
        if sc.alive():
            sc.kill()
        # the protocol stream must only ever carry JSON objects, one per line
        for raw in sc.raw_stdout:
            assert isinstance(orjson.loads(raw), dict), raw


@pytest.fixture
def sidecar(spawn):
    sc = spawn()
    yield sc
    if sc.alive():
        assert sc.shutdown() == 0


@pytest.fixture(scope="module")
def shared_sidecar(tmp_path_factory):
    """One sidecar for a test file's checks that store nothing another check could see (bad requests, say):
    a spawn per check would cost a second of CPU each. Stopped cleanly after the file; its stdout must have
    carried only JSON objects."""
    sc = Sidecar(tmp_path_factory.mktemp("shared") / "data")
    yield sc
    assert sc.alive(), f"the shared sidecar died; stderr:\n{sc.stderr()}"
    assert sc.shutdown() == 0
    for raw in sc.raw_stdout:
        assert isinstance(orjson.loads(raw), dict), raw


# ------------------------------------------------------------ an S3 server (tests/test_object_store.py, test_frozen.py)


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on a free loopback port; its endpoint URL."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def new_bucket(endpoint: str) -> str:
    """A new bucket of its own on the moto server at `endpoint`; its name."""
    import uuid

    import boto3

    name = f"mem-{uuid.uuid4().hex[:12]}"
    boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1"
    ).create_bucket(Bucket=name)
    return name


def s3_env(endpoint: str, **extra: str) -> dict[str, str]:
    """The environment of a sidecar on that server (moto takes any key)."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        **extra,
    }


# ------------------------------------------------------------------ helpers' servers and tools, as fixtures


@pytest.fixture
def llm():
    """A scripted OpenAI-compatible server on 127.0.0.1 (helpers.ScriptedLLM)."""
    from helpers import ScriptedLLM

    server = ScriptedLLM()
    yield server
    server.close()


@pytest.fixture(scope="module")
def npm() -> str:
    """The npm command, clients/typescript installed (`npm ci`) once for this lockfile and Node."""
    from helpers import npm_installed

    return npm_installed()
