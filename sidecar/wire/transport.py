"""Byte transport over stdio: line framing with a size cap, a locked writer, and the stdout guard.

Knows nothing of JSON or memory. At start-up the real stdout descriptor is duplicated for protocol
writes and fd 1 is pointed at stderr, so a stray print() or a native library's output can never
corrupt the protocol stream.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from dataclasses import dataclass
from typing import BinaryIO


@dataclass(frozen=True)
class Line:
    data: bytes


@dataclass(frozen=True)
class Oversized:
    """A line longer than the cap; its bytes were read and discarded, never held in memory."""

    size: int


@dataclass(frozen=True)
class Eof:
    pass


Incoming = Line | Oversized | Eof

_CHUNK = 1 << 16


def read_lines(stream: BinaryIO, max_line_bytes: int, out: queue.Queue[Incoming]) -> None:
    """Read newline-framed lines from `stream` into `out` until EOF; then put Eof().

    A final line without a trailing newline is still a line. CRLF endings are accepted (the
    JSON decoder ignores the trailing CR as whitespace). A line longer than max_line_bytes is
    skipped in chunks and reported as Oversized.
    """
    try:
        while True:
            data = stream.readline(max_line_bytes + 1)
            if not data:
                break
            if data.endswith(b"\n") or len(data) <= max_line_bytes:
                body = data.rstrip(b"\r\n")
                if body.strip():
                    out.put(Line(body))
                continue
            size = len(data)
            while True:  # discard the rest of the oversized line without keeping it
                chunk = stream.readline(_CHUNK)
                size += len(chunk)
                if not chunk or chunk.endswith(b"\n"):
                    break
            out.put(Oversized(size))
    except (OSError, ValueError):  # stdin closed under us
        pass
    finally:
        out.put(Eof())


def protect_stdout() -> int:
    """The stdout guard: returns a duplicate of the real stdout for protocol writes and points fd 1
    (and sys.stdout) at stderr, so nothing else can ever write to the protocol stream."""
    sys.stdout.flush()
    proto_fd = os.dup(1)
    os.dup2(2, 1)  # anything written to fd 1 from now on lands on stderr
    sys.stdout = sys.stderr
    return proto_fd


class StdioTransport:
    """Owns fds 0 and 1 for the protocol. `send` is thread-safe; each call writes one whole line."""

    def __init__(self, max_line_bytes: int, guard_stdout: bool = True):
        self.max_line_bytes = max_line_bytes
        self.incoming: queue.Queue[Incoming] = queue.Queue()
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None
        proto_fd = protect_stdout() if guard_stdout else os.dup(1)
        self._out = os.fdopen(proto_fd, "wb", buffering=0)
        self._in = os.fdopen(os.dup(0), "rb", buffering=_CHUNK)
        self.closed = False

    def start_reader(self) -> None:
        self._reader = threading.Thread(
            target=read_lines, args=(self._in, self.max_line_bytes, self.incoming), name="stdin-reader", daemon=True
        )
        self._reader.start()

    def send(self, line: bytes) -> bool:
        """Write one complete line (must end with a newline). False when the reader end is gone."""
        with self._lock:
            if self.closed:
                return False
            try:
                view = memoryview(line)
                while view:
                    n = self._out.write(view)
                    view = view[n:]
                return True
            except (BrokenPipeError, OSError):
                self.closed = True
                return False

    def close(self) -> None:
        with self._lock:
            self.closed = True
            try:
                self._out.close()
            except OSError:
                pass
