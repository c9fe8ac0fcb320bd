"""The sidecar as a child process, spoken to over its pipes: the one client of every subcommand.

`Sidecar(data_dir)` spawns `python -m sidecar --data-dir DATA --ttl-days 0` (or a frozen binary, or
other flags) and reads its answers with a per-response timeout. Requests go one at a time
(`request`, `timed`), or pipelined: one thread `queue`s requests and `flush`es them while another
`read`s the answers.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:
    import orjson

    def dumps(obj: Any) -> bytes:
        return orjson.dumps(obj)

    loads = orjson.loads
except ImportError:  # pragma: no cover - orjson is a dependency of the sidecar itself

    def dumps(obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode()

    loads = json.loads

from .procfs import status_kib


class BenchError(RuntimeError):
    pass


def compile_package(python: str, cwd: str | Path | None = None) -> None:
    """Write the sidecar package's bytecode, as `pip install` does for an installed package, so that spawn
    timings leave out compiling it: an editable install compiles it at a spawn, and with
    PYTHONDONTWRITEBYTECODE set (some machines set it) at every spawn (about 65 ms here)."""
    where = subprocess.run(
        [python, "-c", "import os, sidecar; print(os.path.dirname(sidecar.__file__))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
    ).stdout.strip()
    subprocess.run([python, "-m", "compileall", "-q", where], check=True, stdout=subprocess.DEVNULL, cwd=cwd)


def add_sidecar_arguments(parser: argparse.ArgumentParser, timeout: float) -> None:
    """--python and --timeout: the interpreter that runs `-m sidecar`, the seconds any one answer may take."""
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs -m sidecar")
    parser.add_argument("--timeout", type=float, default=timeout, help="seconds to wait for any one response")


class Sidecar:
    """One sidecar child: NDJSON over its pipes, with a per-response timeout.

    data_dir    its --data-dir
    args        more sidecar flags
    python      the interpreter that runs `-m sidecar`; `command` replaces `python -m sidecar` (a frozen binary)
    expiry_off  pass `--ttl-days 0` before `args` (no expiry sweeps)
    stderr      a Path: its stderr is appended there (and its tail quoted when something goes wrong);
                None: inherited; or subprocess.DEVNULL
    cwd         its working directory (which source tree `-m sidecar` imports when that tree is not installed)
    clean_env   drop MEMORY_SIDECAR_* from its environment, so that only flags configure it

    As a context manager it kills the child on the way out unless `shutdown` or `finish` ended it.
    """

    def __init__(
        self,
        data_dir: str | Path,
        args: Sequence[str] = (),
        *,
        python: str = sys.executable,
        command: Sequence[str] | None = None,
        expiry_off: bool = True,
        stderr: Path | int | None = None,
        timeout: float = 600.0,
        cwd: str | Path | None = None,
        clean_env: bool = False,
    ):
        self.cmd = [
            *(command or [python, "-m", "sidecar"]),
            "--data-dir",
            str(data_dir),
            *(["--ttl-days", "0"] if expiry_off else []),
            *args,
        ]
        self.timeout = timeout
        self.log_path = stderr if isinstance(stderr, Path) else None
        self._log = open(self.log_path, "ab") if self.log_path else None
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_SIDECAR_")} if clean_env else None
        self._buf = bytearray()
        self._queued = bytearray()
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(
            self.cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log if self._log is not None else None if isinstance(stderr, Path) else stderr,
            bufsize=0,
            close_fds=True,
            cwd=cwd,
            env=env,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None  # (pipes)
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()

    def __enter__(self) -> Sidecar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def fail(self, what: str) -> BenchError:
        """A BenchError saying `what`, whether the child still runs, and the tail of its stderr log."""
        rc = self.proc.poll()
        tail = ""
        if self.log_path:
            assert self._log is not None  # (opened on log_path)
            try:
                if not self._log.closed:
                    self._log.flush()
                tail = "; last stderr:\n" + self.log_path.read_bytes()[-4000:].decode(errors="replace")
            except OSError:
                pass
        state = f"exited with code {rc}" if rc is not None else "still running"
        return BenchError(f"{what} (sidecar pid {self.pid} {state}){tail}")

    # ----------------------------------------------------------------- writing

    def send(self, obj: dict[str, Any]) -> None:
        self.send_raw(dumps(obj) + b"\n")

    def send_raw(self, line: bytes) -> None:
        view = memoryview(line)
        try:
            while view:
                n = os.write(self._in, view)
                view = view[n:]
        except BrokenPipeError:
            raise self.fail("sidecar stdin closed while writing a request") from None

    def queue(self, obj: dict[str, Any]) -> None:
        """Add a request to the ones `flush` writes in one go (pipelining: answers are `read` meanwhile)."""
        self._queued += dumps(obj) + b"\n"

    def queue_raw(self, line: bytes) -> None:
        """Add a raw line (without its newline), e.g. one that is not JSON, to the ones `flush` writes."""
        self._queued += line + b"\n"

    def flush(self) -> None:
        if self._queued:
            line, self._queued = bytes(self._queued), bytearray()
            self.send_raw(line)

    # ----------------------------------------------------------------- reading

    def read(self) -> dict[str, Any]:
        """The next response line, parsed. Raises BenchError on EOF, timeout or bad JSON."""
        deadline = time.monotonic() + self.timeout
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[: nl + 1]
                try:
                    obj = loads(line)
                except ValueError:
                    raise self.fail(f"sidecar wrote a line that is not JSON: {line[:300]!r}") from None
                if not isinstance(obj, dict):
                    raise self.fail(f"sidecar wrote a non-object line: {line[:300]!r}")
                return obj
            left = deadline - time.monotonic()
            if left <= 0:
                raise self.fail(f"no response within {self.timeout:g} s")
            ready, _, _ = select.select([self._out], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._out, 1 << 20)
            if not chunk:
                raise self.fail("sidecar closed stdout (EOF) while a response was expected")
            self._buf += chunk

    def check(self, resp: dict[str, Any], request_type: Any, expect: str) -> dict[str, Any]:
        if resp.get("type") != expect:
            raise self.fail(
                f"request type {request_type!r}: expected a {expect!r} response, got {json.dumps(resp)[:1000]}"
            )
        return resp

    def request(self, obj: dict[str, Any], expect: str) -> dict[str, Any]:
        """Send one request and read its answer, which must be of type `expect`."""
        self.send(obj)
        return self.check(self.read(), obj.get("type"), expect)

    def timed(self, obj: dict[str, Any], expect: str) -> tuple[dict[str, Any], float]:
        """`request`, and the seconds from sending to the parsed answer."""
        t0 = time.perf_counter()
        resp = self.request(obj, expect)
        return resp, time.perf_counter() - t0

    def compact(self) -> dict[str, Any]:
        """A `cleanup` that expires nothing: it compacts every table (and folds new rows into the indexes)."""
        return self.request({"type": "cleanup", "ttl_days": 36500}, "ok")

    def wait_ready(self) -> tuple[float, dict[str, Any]]:
        """Seconds from Popen to the ready line, and the ready line."""
        ready = self.read()
        t = time.perf_counter() - self.t_spawn
        if ready.get("type") != "ready":
            raise self.fail(f"expected the ready line, got {json.dumps(ready)[:1000]}")
        return t, ready

    def vm_status(self) -> dict[str, int]:
        """The kB fields of /proc/<pid>/status, VmHWM and VmRSS among them (empty off Linux)."""
        try:
            return status_kib(self.pid)
        except OSError:
            return {}

    # ----------------------------------------------------------------- ending

    def shutdown(self) -> int:
        """A `shutdown` request; the child must answer it and exit with code 0."""
        self.request({"type": "shutdown"}, "ok")
        try:
            rc = self.proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise self.fail(f"sidecar did not exit within {self.timeout:g} s of the shutdown response") from None
        self.close()
        if rc != 0:
            raise self.fail(f"sidecar exited with code {rc} after shutdown (expected 0)")
        return rc

    def finish(self, timeout: float) -> int:
        """Close its stdin (the host going away), wait up to `timeout` s for it to exit; its exit code."""
        self.close_stdin()
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise self.fail(f"sidecar did not exit within {timeout:g} s of its stdin closing") from None
        self.close()
        return rc

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.close()

    def close(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout, self._log):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
