"""Golden transcripts (protocol/examples/*.jsonl) and a sidecar process to replay them through, standard
library only: tests/test_golden.py replays them against `python -m sidecar` and the frozen binaries, and
scripts/smoke_binary.py against a built binary on each release runner (Windows included: no select on pipes,
a reader thread instead).

Transcript lines: {"send": {...}} or {"send_raw": "..."} with {"expect": {...}}; the first line has only
"expect" (the ready line). Expected objects match when every key they name matches (responses may carry more
fields). Placeholders: "<uuid>", "<uuid as NAME>" (captured), "<int>", "<number>", "<string>", "<any>";
"{{NAME}}" in a send or expect is a captured value.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = sorted((ROOT / "protocol" / "examples").glob("*.jsonl"))

# Only these are placeholders; any other string (an XML block, a memory tag) is matched literally.
PLACEHOLDER = re.compile(r"<(uuid|int|number|string|any)( as \w+)?>")


def substitute(value: Any, captured: dict[str, str]) -> Any:
    if isinstance(value, str):
        m = re.fullmatch(r"\{\{(\w+)\}\}", value)
        return captured[m.group(1)] if m else value
    if isinstance(value, list):
        return [substitute(v, captured) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, captured) for k, v in value.items()}
    return value


def match(expected: Any, actual: Any, captured: dict[str, str], path: str = "$") -> None:
    """Raise AssertionError naming the first difference (a JSON path) between a transcript's expectation and
    a response."""
    if isinstance(expected, str) and PLACEHOLDER.fullmatch(expected):
        kind, _, name = expected[1:-1].partition(" as ")
        if name:
            captured[name] = actual
        if kind == "uuid":
            try:
                ok = isinstance(actual, str) and bool(uuid.UUID(actual))
            except ValueError:
                ok = False
            if not ok:
                raise AssertionError(f"{path}: {actual!r} is not a uuid")
        elif kind == "int":
            if not (isinstance(actual, int) and not isinstance(actual, bool)):
                raise AssertionError(f"{path}: {actual!r} is not an int")
        elif kind == "number":
            if not (isinstance(actual, (int, float)) and not isinstance(actual, bool)):
                raise AssertionError(f"{path}: {actual!r} is not a number")
        elif kind == "string":
            if not isinstance(actual, str):
                raise AssertionError(f"{path}: {actual!r} is not a string")
        elif kind != "any":
            raise AssertionError(f"unknown placeholder {expected}")
        return
    expected = substitute(expected, captured)
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            raise AssertionError(f"{path}: expected an object, got {actual!r}")
        for k, v in expected.items():
            if k not in actual:
                raise AssertionError(f"{path}: missing key {k!r} in {actual!r}")
            match(v, actual[k], captured, f"{path}.{k}")
    elif isinstance(expected, list):
        if not (isinstance(actual, list) and len(actual) == len(expected)):
            raise AssertionError(f"{path}: {actual!r} != {expected!r}")
        for i, (e, a) in enumerate(zip(expected, actual)):
            match(e, a, captured, f"{path}[{i}]")
    elif expected != actual:
        raise AssertionError(f"{path}: expected {expected!r}, got {actual!r}")


def steps(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def replay(
    path: Path,
    send: Callable[[bytes], None],
    recv: Callable[[float], Any],
    timeout: float,
    first_timeout: float | None = None,
) -> None:
    """Play one transcript: `send(line bytes)`, `recv(seconds) -> decoded response`. The first step (the ready
    line) waits `first_timeout` (default `timeout`). Raises AssertionError naming the transcript's line."""
    captured: dict[str, str] = {}
    for n, step in enumerate(steps(path)):
        if "send" in step:
            send(json.dumps(substitute(step["send"], captured), ensure_ascii=False).encode("utf-8") + b"\n")
        elif "send_raw" in step:
            send(step["send_raw"].encode() + b"\n")
        actual = recv(first_timeout if n == 0 and first_timeout is not None else timeout)
        try:
            match(step["expect"], actual, captured)
        except AssertionError as exc:
            raise AssertionError(f"{path.name} line {n + 1}: {exc}") from None


class NoAnswer(Exception):
    """The process wrote no line within the time allowed, or ended without one."""


class LineProcess:
    """A child process spoken to in lines over pipes; stdout read by a thread (works on every OS)."""

    def __init__(self, command: list[str], stderr: Any = subprocess.DEVNULL, **popen: Any) -> None:
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, **popen)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read, name="stdout-reader", daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def recv_line(self, timeout: float) -> bytes:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise NoAnswer(f"no line within {timeout:g} s") from None
        if line is None:
            self.lines.put(None)
            raise NoAnswer(f"the process ended (exit code {self.proc.poll()}) without writing a line")
        return line

    def recv(self, timeout: float) -> Any:
        return json.loads(self.recv_line(timeout))

    def close(self, timeout: float = 30.0) -> int | None:
        """Close stdin and wait for the exit; kill it if it does not come."""
        try:
            if self.proc.stdin is not None and not self.proc.stdin.closed:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
