"""Write-ahead log: a `store` is acknowledged once its rows are in this file, and committed to
LanceDB right after, off the request path.

A LanceDB commit writes and renames four files (data, transaction, manifest, version hint):
3-4 ms per `store`, a third of its latency. Appending one record to an open file is one `write`
call. Both reach the same place before the answer is sent - the operating system's page cache
(LanceDB does not fsync either) - so an acknowledged memory survives the sidecar being killed at
any moment, exactly as before.

Layout: `<data dir>/wal/<sequence>.log` segments, 0600. A segment is sealed (`seal`) before its
rows are committed and deleted once LanceDB has them, so every segment on disk at start-up holds
rows that may not have been committed: they are replayed, skipping any whose id the table already
has. Record: a 12-byte header (`<III`: JSON length, row count, crc32 of the rest), the rows as
JSON, then their float32 vectors. A record that fails its checksum or is cut short is the end of
its segment; it was never acknowledged, because the write that failed answered with an error.
"""

from __future__ import annotations

import errno
import logging
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson

log = logging.getLogger("sidecar.wal")

HEADER = struct.Struct("<III")
SUFFIX = ".log"


class WalError(RuntimeError):
    pass


def encode_record(rows: list[dict[str, Any]], vectors: np.ndarray) -> bytes:
    body = orjson.dumps(rows)
    vec = np.ascontiguousarray(vectors, dtype=np.float32).tobytes()
    crc = zlib.crc32(vec, zlib.crc32(body))
    return HEADER.pack(len(body), len(rows), crc) + body + vec


def decode_records(data: bytes, dim: int) -> Iterator[tuple[list[dict[str, Any]], np.ndarray]]:
    """The intact records of one segment, in order, up to the first damaged or cut-short one."""
    pos = 0
    while pos + HEADER.size <= len(data):
        body_len, n, crc = HEADER.unpack_from(data, pos)
        start = pos + HEADER.size
        end = start + body_len + n * dim * 4
        if end > len(data):
            return
        body, vec = data[start : start + body_len], data[start + body_len : end]
        if zlib.crc32(vec, zlib.crc32(body)) != crc:
            return
        try:
            rows = orjson.loads(body)
        except orjson.JSONDecodeError:
            return
        if not isinstance(rows, list) or len(rows) != n:
            return
        yield rows, np.frombuffer(vec, dtype=np.float32).reshape(n, dim)
        pos = end


class WriteAheadLog:
    def __init__(self, directory: Path, dim: int):
        self.dir = directory
        self.dim = dim
        self.dir.mkdir(mode=0o700, exist_ok=True)
        self._fd: int | None = None
        self._path: Path | None = None
        self._size = 0
        self._sealed: list[Path] = []  # written, closed, not yet known to be committed
        existing = self.segments()
        self._next = int(existing[-1].stem) + 1 if existing else 1

    def segments(self) -> list[Path]:
        """Segments on disk, oldest first."""
        return sorted(
            (p for p in self.dir.iterdir() if p.suffix == SUFFIX and p.stem.isdigit()), key=lambda p: int(p.stem)
        )

    def read(self, path: Path) -> Iterator[tuple[list[dict[str, Any]], np.ndarray]]:
        data = path.read_bytes()
        yield from decode_records(data, self.dim)

    def append(self, rows: list[dict[str, Any]], vectors: np.ndarray) -> None:
        """One record, written with one call. Raises WalError (nothing written) on failure."""
        record = encode_record(rows, vectors)
        try:
            if self._fd is None:
                self._path = self.dir / f"{self._next:012d}{SUFFIX}"
                self._next += 1
                # O_BINARY: without it Windows opens the fd in text mode and writes every \n byte as \r\n
                self._fd = os.open(
                    self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0), 0o600
                )
                self._size = 0
            written = os.write(self._fd, record)
            if written != len(record):
                # a regular file takes less than asked only when the device is full
                raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (wrote {written} of {len(record)} bytes)")
        except OSError as exc:
            self._undo()
            raise WalError(f"cannot write to {self.dir}: {exc.strerror or exc}") from None
        self._size += len(record)

    def _undo(self) -> None:
        """Cut a partly written record off, or failing that start a new segment for the next one."""
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, self._size)
        except OSError:
            self._seal_current()

    def _seal_current(self) -> None:
        if self._fd is None:
            return
        try:
            os.close(self._fd)
        except OSError:
            pass
        assert self._path is not None  # (open with its descriptor)
        self._sealed.append(self._path)
        self._fd, self._path = None, None

    def seal(self) -> list[Path]:
        """Close the current segment and hand over every sealed one: the caller commits their rows,
        then `remove`s them, or gives them back with `unseal` if the commit failed."""
        self._seal_current()
        sealed, self._sealed = self._sealed, []
        return sealed

    def unseal(self, paths: list[Path]) -> None:
        self._sealed[:0] = paths

    @staticmethod
    def remove(paths: list[Path]) -> None:
        for p in paths:
            try:
                p.unlink()
            except FileNotFoundError:
                pass

    def close(self) -> None:
        self._seal_current()
