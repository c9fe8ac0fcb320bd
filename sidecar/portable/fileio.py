"""Reading and writing export files: gzip or not, one line at a time (constant memory), the header and its
format version, and every line validated into a record or a line error. Knows nothing of the stores."""

from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterator

import orjson
from pydantic import ValidationError

from .records import FORMAT, FORMAT_VERSION, RECORD, Header, PlainRecord

MAX_LINE = 8 << 20  # a longer line is reported and skipped, never held whole
GZIP_MAGIC = b"\x1f\x8b"

# Older format versions have their place here: UPGRADES[n] turns a raw record of version n into one of
# version n + 1 (none yet: version 1 is the first).
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


class FileProblem(Exception):
    """The file as a whole cannot be used (missing, not an export, a newer format, unreadable header)."""


@dataclass
class LineProblem:
    line: int
    message: str
    fatal: bool = False  # the rest of the file cannot be read (gzip cut short or corrupt)
    record: bool = True  # a bad record (counted as invalid); False: the file as a whole (fatal, no `end`)


class Writer:
    """Writes `path` + `.partial` and renames it to `path` on commit: a crash never leaves a file that looks
    complete. gzip when the name ends in `.gz` (level 1: vectors hardly compress, the text does)."""

    def __init__(self, path: Path):
        self.path = path
        self.partial = path.with_name(path.name + ".partial")
        path.parent.mkdir(parents=True, exist_ok=True)
        self._raw = open(self.partial, "wb")
        self._out: IO[bytes] = (gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=1)  # type: ignore[assignment]
                                if path.name.endswith(".gz") else self._raw)
        self._buf: list[bytes] = []

    def write(self, obj: dict[str, Any]) -> None:
        self._buf.append(orjson.dumps(obj))
        if len(self._buf) >= 512:
            self._drain()

    def _drain(self) -> None:
        if self._buf:
            self._out.write(b"\n".join(self._buf) + b"\n")
            self._buf.clear()

    def commit(self) -> int:
        """Close, fsync, rename into place; returns the bytes written."""
        self._drain()
        if self._out is not self._raw:
            self._out.close()
        self._raw.flush()
        os.fsync(self._raw.fileno())
        self._raw.close()
        os.replace(self.partial, self.path)
        return self.path.stat().st_size

    def abort(self) -> None:
        self._raw.close()
        self.partial.unlink(missing_ok=True)


class Reader:
    """The records of an export file (after its header) or of plain JSON Lines (no header)."""

    def __init__(self, path: Path):
        self.path = path
        try:
            with open(path, "rb") as f:
                magic = f.read(2)
        except OSError as exc:
            raise FileProblem(f"cannot read {path}: {exc.strerror or exc}") from None
        self.gzip = magic == GZIP_MAGIC
        self.header: Header | None = None
        self.version = FORMAT_VERSION
        lines = self._lines()
        first = next(lines, None)
        lines.close()
        if first is not None and not isinstance(first[1], LineProblem):
            self._read_header(first[1])

    def _open(self) -> IO[bytes]:
        return gzip.open(self.path, "rb") if self.gzip else open(self.path, "rb")  # type: ignore[return-value]

    def _lines(self) -> Iterator[tuple[int, bytes | LineProblem]]:
        """(line number, bytes) of every non-blank line, or a problem (too long, or fatal: unreadable)."""
        n = 0
        try:
            with self._open() as f:
                while True:
                    line = f.readline(MAX_LINE)
                    if not line:
                        return
                    n += 1
                    if len(line) == MAX_LINE and not line.endswith(b"\n"):
                        while line and not line.endswith(b"\n"):
                            line = f.readline(MAX_LINE)
                        yield n, LineProblem(n, f"line is longer than {MAX_LINE} bytes")
                        continue
                    if line.strip():
                        yield n, line
        except (EOFError, OSError, zlib.error) as exc:
            what = "gzip stream is cut short" if isinstance(exc, EOFError) else f"file is corrupt ({exc})"
            yield n + 1, LineProblem(n + 1, f"{what}; nothing after line {n} can be read", fatal=True, record=False)

    def _read_header(self, line: bytes) -> None:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return  # plain JSON Lines whose first line is bad: reported as a line error
        if not isinstance(obj, dict) or obj.get("kind") != "header":
            return
        if obj.get("format") != FORMAT:
            raise FileProblem(f"{self.path}: line 1 is a header of format {obj.get('format')!r}, not {FORMAT!r}")
        version = obj.get("format_version")
        if isinstance(version, int) and version > FORMAT_VERSION:
            raise FileProblem(f"{self.path} has export format version {version}, newer than this sidecar's "
                              f"{FORMAT_VERSION}; upgrade memory-sidecar to import it")
        try:
            self.header = Header.model_validate({**obj, "format_version": FORMAT_VERSION})
        except ValidationError as exc:
            raise FileProblem(f"{self.path}: the header (line 1) is invalid: {_describe(exc)}") from None
        self.version = int(version)

    def records(self) -> Iterator[tuple[int, Any]]:
        """(line number, record model) for every line after the header, or (line, LineProblem). For an
        export file, a missing `end` record (the file was cut short) is a last LineProblem."""
        ended = False
        last = 0
        for n, line in self._lines():
            last = n
            if self.header is not None and n == 1:
                continue
            if isinstance(line, LineProblem):
                yield n, line
                if line.fatal:
                    return
                continue
            record = self._parse(n, line)
            if ended and not isinstance(record, LineProblem):
                record = LineProblem(n, "record after the `end` record")
            if getattr(record, "kind", None) == "end":
                ended = True
            yield n, record
        if self.header is not None and not ended:
            yield last + 1, LineProblem(last + 1, "the file ends without its `end` record: it was cut short",
                                        record=False)

    def _parse(self, n: int, line: bytes) -> Any:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            return LineProblem(n, f"not valid JSON ({exc})")
        if not isinstance(obj, dict):
            return LineProblem(n, "not a JSON object")
        try:
            if self.header is None:
                return PlainRecord.model_validate(obj).message()
            for version in range(self.version, FORMAT_VERSION):
                obj = UPGRADES[version](obj)
            return RECORD.validate_python(obj)
        except ValidationError as exc:
            return LineProblem(n, _describe(exc))


def _describe(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors()[:3]:
        loc = ".".join(str(p) for p in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        parts.append(f"field `{loc}` is required" if e["type"] == "missing" else f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)
