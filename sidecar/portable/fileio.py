"""Reading and writing export files: gzip or not, in chunks (constant memory), the header and its format
version, and every line validated into a record or a line error. Knows nothing of the stores.

What it accepts is bounded by the file itself: only regular files are read or written (a device, a FIFO, a
socket or a directory is refused before a byte is read, and opening never waits for a FIFO's writer); a gzip
file may expand to `max_expansion` times its size; a walk through the file stops after `max_invalid` bad
records; a run of blank lines costs what reading it costs, never a step per line. The writer writes a
temporary file beside the target and renames it at the end, never through a symbolic link, never over an
existing file unless asked to."""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import stat
import tempfile
import zlib
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson
from pydantic import ValidationError

from ..wire import describe
from ..wire.errors import clip, quote
from ..wire.portable import DEFAULT_MAX_EXPANSION, DEFAULT_MAX_INVALID
from .records import FORMAT, FORMAT_VERSION, RECORD, Header, PlainRecord

MAX_LINE = 8 << 20  # a longer line is reported and skipped, never held whole
CHUNK = 1 << 20  # bytes read (after gzip) at a time
GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark some editors put first; skipped
_NONSPACE = re.compile(rb"[^ \t\n\r\f\v]")  # what bytes.strip() keeps

MIN_EXPANDED = 1 << 20  # a small gzip file may always expand to 1 MiB
RECENT_LINES = 8192  # distinct lines remembered: a line repeated among them is not parsed again

# Older format versions have their place here: UPGRADES[n] turns a raw record of version n into one of
# version n + 1 (none yet: version 1 is the first).
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


class FileProblem(Exception):
    """The file as a whole cannot be used (missing, not a regular file, not an export, a newer format,
    unreadable header)."""


class OverLimit(FileProblem):
    """The walk through the file stopped at a bound (max_invalid, max_expansion)."""


class Refused(Exception):
    """A request refused before anything was written: an error code (bad_file, conflict, invalid_request)
    and a sentence."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Limits:
    """How far an import walks through a file: bad records before it stops, and how many times its size
    a gzip file may expand to (at least MIN_EXPANDED); 0: no limit."""

    max_invalid: int = DEFAULT_MAX_INVALID
    max_expansion: int = DEFAULT_MAX_EXPANSION


@dataclass
class Repeat:
    """A line that repeats, byte for byte, one of the last RECENT_LINES distinct valid lines: the same record
    again (skipped, like a stored id), known without parsing it again (what makes a file of one line
    repeated cheap, however far it expands)."""

    line: int


@dataclass
class LineProblem:
    line: int
    message: str
    fatal: bool = False  # the rest of the file cannot be read (gzip cut short or corrupt)
    record: bool = True  # a bad record (counted as invalid); False: the file as a whole (fatal, no `end`)


def shown(path: Path | str) -> str:
    """A path as an error message shows it (at most MAX_QUOTE characters of it)."""
    return clip(str(path))


def _kind_of(mode: int) -> str:
    for test, what in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return what
    return "not a regular file"


def open_regular(path: Path) -> tuple[IO[bytes], int]:
    """The file opened for reading and its size; FileProblem unless it is a regular file. Never blocks: a
    FIFO is seen by stat() before it is opened, and opened without waiting (O_NONBLOCK) should it have
    replaced the file meanwhile; fstat() of the open file decides."""
    try:
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode):
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
            st = os.fstat(fd)
        else:
            fd = -1
    except OSError as exc:
        raise FileProblem(f"cannot read {shown(path)}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        if fd >= 0:
            os.close(fd)
        raise FileProblem(f"{shown(path)} is {_kind_of(st.st_mode)}: import reads regular files only")
    return os.fdopen(fd, "rb"), st.st_size


class Writer:
    """Writes a temporary file beside `path` and renames it to `path` on commit: a crash never leaves a file
    that looks complete. gzip when the name ends in `.gz` (level 1: vectors hardly compress, the text does).
    Refused (before anything is written): a symbolic link, a directory or anything but a regular file at
    `path`, or an existing file without `overwrite`. OSError: the file system's refusal (read-only, full)."""

    def __init__(self, path: Path, overwrite: bool = False):
        self.path = path
        self.overwrite = overwrite
        self._check()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:100]}.", suffix=".partial")
        self.partial = Path(partial)
        self._raw = os.fdopen(fd, "wb")
        self._out: IO[bytes] = (
            gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=1)  # type: ignore[assignment]
            if path.name.endswith(".gz")
            else self._raw
        )
        self._buf: list[bytes] = []

    def _check(self) -> None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return
        except NotADirectoryError:
            return  # a file where a folder should be: mkdir says so (io_error)
        where = shown(self.path)
        if stat.S_ISLNK(st.st_mode):
            raise Refused(
                "invalid_request",
                f"`out` {where} is a symbolic link; export never writes through one: give the path of the file itself",
            )
        if stat.S_ISDIR(st.st_mode):
            raise Refused(
                "invalid_request", f"`out` names a directory ({where}); give a file name, e.g. memory.jsonl.gz"
            )
        if not stat.S_ISREG(st.st_mode):
            raise Refused(
                "invalid_request", f"`out` {where} is {_kind_of(st.st_mode)}; export writes regular files only"
            )
        if not self.overwrite:
            raise Refused("conflict", f'`out` {where} exists; give "overwrite": true (CLI: --overwrite) to replace it')

    def write(self, obj: dict[str, Any]) -> None:
        self._buf.append(orjson.dumps(obj))
        if len(self._buf) >= 512:
            self._drain()

    def _drain(self) -> None:
        if self._buf:
            self._out.write(b"\n".join(self._buf) + b"\n")
            self._buf.clear()

    def commit(self) -> int:
        """Close, fsync, move into place; returns the bytes written."""
        self._drain()
        if self._out is not self._raw:
            self._out.close()
        self._raw.flush()
        os.fsync(self._raw.fileno())
        self._raw.close()
        size = self.partial.stat().st_size
        if self.overwrite:
            os.replace(self.partial, self.path)  # replaces a link itself, never its target
        else:
            self._place_new()
        _sync_dir(self.path.parent)
        return size

    def _place_new(self) -> None:
        """Move the finished file to a path that must still be free: a hard link fails if anything appeared
        there meanwhile (a file, a link); where hard links are not supported, a check and a rename."""
        try:
            os.link(self.partial, self.path)
        except FileExistsError:
            self._check()  # says what is there now
            raise
        except OSError:
            if os.path.lexists(self.path):
                self._check()
            os.replace(self.partial, self.path)
            return
        self.partial.unlink()

    def abort(self) -> None:
        try:
            self._raw.close()
        except OSError:
            pass  # the disk that failed the write may fail the close too
        self.partial.unlink(missing_ok=True)


def _sync_dir(folder: Path) -> None:
    """The rename made durable where a folder can be synced (POSIX; Windows opens no directory)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a directory; the file itself is synced
    finally:
        os.close(fd)


class Reader:
    """The records of an export file (after its header) or of plain JSON Lines (no header)."""

    def __init__(self, path: Path, limits: Limits = Limits()):
        self.path = path
        self.limits = limits
        f, _size = open_regular(path)
        with f:
            try:
                magic = f.read(2)
            except OSError as exc:
                raise FileProblem(f"cannot read {shown(path)}: {exc.strerror or exc}") from None
        self.gzip = magic == GZIP_MAGIC
        self.header: Header | None = None
        self.version = FORMAT_VERSION
        lines = self._lines()
        first = next(lines, None)
        lines.close()
        if first is not None and not isinstance(first[1], LineProblem):
            self._read_header(first[1])

    def _chunks(self) -> Generator[bytes, None, None]:
        """The file's bytes (decompressed), a chunk at a time; OverLimit past max_expansion."""
        f, size = open_regular(self.path)
        with f:
            if not self.gzip:
                while chunk := f.read(CHUNK):
                    yield chunk
                return
            ratio = self.limits.max_expansion
            cap = max(ratio * size, MIN_EXPANDED) if ratio > 0 else None
            total = 0
            with gzip.GzipFile(fileobj=f, mode="rb") as z:
                while chunk := z.read(CHUNK):
                    total += len(chunk)
                    if cap is not None and total > cap:
                        raise OverLimit(
                            f"{shown(self.path)} expands past {ratio} times its size ({size:,} bytes "
                            f"of gzip, more than {cap:,} bytes of content; max_expansion {ratio})"
                        )
                    yield chunk

    def _lines(self) -> Generator[tuple[int, bytes | LineProblem], None, None]:
        """(line number, bytes) of every non-blank line, or a problem (too long, or fatal: unreadable).
        Blank lines are skipped a chunk at a time (counted, never looped over one by one)."""
        n = 1  # the number of the line that starts at `pos`
        buf, pos = b"", 0
        chunks = self._chunks()
        try:
            while True:
                m = _NONSPACE.search(buf, pos)
                if m is None:  # only blank lines left in the buffer
                    n += buf.count(b"\n", pos)
                    buf, pos = next(chunks, b""), 0
                    if not buf:
                        return
                    continue
                start = m.start()
                n += buf.count(b"\n", pos, start)
                end = buf.find(b"\n", start)
                while end < 0 and len(buf) - start <= MAX_LINE:
                    chunk = next(chunks, b"")
                    if not chunk:
                        break
                    seen = len(buf) - start
                    buf, start = buf[start:] + chunk, 0
                    end = buf.find(b"\n", seen)
                if end < 0 and len(buf) - start > MAX_LINE:  # too long: skipped up to its end, never held
                    while end < 0:
                        buf = next(chunks, b"")
                        if not buf:
                            break
                        end = buf.find(b"\n")
                    yield n, LineProblem(n, f"line is longer than {MAX_LINE} bytes")
                    if end < 0:
                        return
                    buf, pos, n = buf, end + 1, n + 1
                    continue
                line = buf[start:end] if end >= 0 else buf[start:]
                pos = end + 1 if end >= 0 else len(buf)
                if n == 1 and line.startswith(BOM):
                    line = line[len(BOM) :]
                if line.strip():
                    yield n, line
                if end >= 0:
                    n += 1
        except (EOFError, OSError, zlib.error) as exc:
            what = "gzip stream is cut short" if isinstance(exc, EOFError) else f"file is corrupt ({clip(str(exc))})"
            yield n, LineProblem(n, f"{what}; nothing after line {n - 1} can be read", fatal=True, record=False)
        finally:
            chunks.close()

    def _read_header(self, line: bytes) -> None:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return  # plain JSON Lines whose first line is bad: reported as a line error
        if not isinstance(obj, dict) or obj.get("kind") != "header":
            return
        where = shown(self.path)
        if obj.get("format") != FORMAT:
            raise FileProblem(f"{where}: line 1 is a header of format {quote(obj.get('format'))}, not {FORMAT!r}")
        if "format_version" not in obj:
            raise FileProblem(f"{where}: the header (line 1) has no field `format_version`")
        version = obj["format_version"]
        if type(version) is not int or version < 1:  # not bool, float or string: "2", 2.0 and 1e30 are no versions
            raise FileProblem(
                f"{where}: the header's field `format_version` must be a positive integer, got "
                f"{clip(orjson.dumps(version).decode())}"
            )
        if version > FORMAT_VERSION:
            raise FileProblem(
                f"{where} has export format version {version}, newer than this sidecar's "
                f"{FORMAT_VERSION}; upgrade memory-sidecar to import it"
            )
        if any(v not in UPGRADES for v in range(version, FORMAT_VERSION)):
            raise FileProblem(f"{where} has export format version {version}, older than any this sidecar reads")
        try:
            self.header = Header.model_validate({**obj, "format_version": FORMAT_VERSION})
        except ValidationError as exc:
            raise FileProblem(f"{where}: the header (line 1) is invalid: {describe(exc)}") from None
        self.version = version

    def records(self) -> Iterator[tuple[int, Any]]:
        """(line number, record model) for every line after the header, or (line, LineProblem), or (line,
        Repeat). For an export file, a missing `end` record (the file was cut short) is a last LineProblem.
        OverLimit when the file expands too far, or after max_invalid bad records."""
        ended = False
        last = 0
        invalid = 0
        recent: OrderedDict[bytes, str | None] = OrderedDict()  # a line's digest -> its problem, or None
        for n, line in self._lines():
            last = n
            if self.header is not None and n == 1:
                continue
            if isinstance(line, LineProblem):
                record: Any = line
            else:
                digest = hashlib.blake2b(line, digest_size=16).digest()
                if digest in recent:
                    known = recent[digest]
                    recent.move_to_end(digest)
                    record = Repeat(n) if known is None else LineProblem(n, known)
                else:
                    record = self._parse(n, line)
                    if ended and not isinstance(record, LineProblem):
                        record = LineProblem(n, "record after the `end` record")
                    if getattr(record, "kind", None) == "end":
                        ended = True
                    recent[digest] = record.message if isinstance(record, LineProblem) else None
                    if len(recent) > RECENT_LINES:
                        recent.popitem(last=False)
            if isinstance(record, LineProblem) and record.record:
                invalid += 1
                if 0 < self.limits.max_invalid < invalid:
                    raise OverLimit(
                        f"{shown(self.path)}: more than {self.limits.max_invalid} invalid records "
                        f"(the last at line {n}: {record.message}; max_invalid "
                        f"{self.limits.max_invalid})"
                    )
            yield n, record
            if isinstance(record, LineProblem) and record.fatal:
                return
        if self.header is not None and not ended:
            yield (
                last + 1,
                LineProblem(last + 1, "the file ends without its `end` record: it was cut short", record=False),
            )

    def _parse(self, n: int, line: bytes) -> Any:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            return LineProblem(n, f"not valid JSON ({clip(str(exc))})")
        if not isinstance(obj, dict):
            return LineProblem(n, "not a JSON object")
        try:
            if self.header is None:
                return PlainRecord.model_validate(obj).message()
            for version in range(self.version, FORMAT_VERSION):
                obj = UPGRADES[version](obj)
            return RECORD.validate_python(obj)
        except ValidationError as exc:
            return LineProblem(n, describe(exc))
