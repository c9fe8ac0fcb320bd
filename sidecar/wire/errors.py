"""One exception class per protocol error code. Each renders itself as an error response.

Codes are part of the wire contract: never rename one, only add.

Answers of bounded size, on every face: whatever a message quotes of the input it refuses (an id, a path,
a type name, a field of a file's record) goes through `quote` or `clip`, at most MAX_QUOTE characters of
it; and every SidecarError's message is cut at MAX_MESSAGE characters whatever it holds, the backstop for
a quote that came from somewhere else (a library's exception text).
"""

from __future__ import annotations

from typing import Any

MAX_QUOTE = 200  # characters of the refused input an error message may quote
MAX_MESSAGE = 1000  # characters of any error message (fixed text and quotes together)


def clip(text: str, limit: int = MAX_QUOTE) -> str:
    """`text`, or its first `limit` characters and how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def quote(value: Any, limit: int = MAX_QUOTE) -> str:
    """repr() of a value a message quotes (a string: at most `limit` of its characters)."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(value)
    return f"{text[:limit]!r}... ({len(text)} characters)"


class SidecarError(Exception):
    code = "internal"

    def __init__(self, message: str, request_id: Any = None):
        message = clip(message, MAX_MESSAGE)
        super().__init__(message)
        self.message = message
        self.request_id = request_id

    def to_response(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "error", "code": self.code, "message": self.message}
        if self.request_id is not None:
            out["request_id"] = self.request_id
        return out


class InvalidJson(SidecarError):
    """The line is not valid UTF-8 JSON."""

    code = "invalid_json"


class InvalidRequest(SidecarError):
    """Valid JSON, but not a valid request: not an object, missing or mistyped fields, bad values."""

    code = "invalid_request"


class UnknownType(SidecarError):
    """The request's `type` names no command."""

    code = "unknown_type"


class NotFound(SidecarError):
    """The request names something that does not exist (e.g. `delete` of an unknown id)."""

    code = "not_found"


class TooLarge(SidecarError):
    """A line, a content, a batch or a limit is over the configured maximum."""

    code = "too_large"


class BadFile(SidecarError):
    """`import` of a file that cannot be used: missing, unreadable, corrupt or cut short, a newer format
    version, or (with `strict`) a bad record; nothing was written."""

    code = "bad_file"


class Conflict(SidecarError):
    """`import` with on_conflict `fail` of a file holding an id that is already stored; nothing was written."""

    code = "conflict"


class IoError(SidecarError):
    """`export` could not write its file (a read-only file system, a full disk, no permission, a folder that
    cannot be created); the partial file is removed and nothing else changed."""

    code = "io_error"


class Unauthorized(SidecarError):
    """HTTP face: no bearer token, a wrong one, or a token in the URL (`Authorization: Bearer <token>` only)."""

    code = "unauthorized"


class BadHost(SidecarError):
    """HTTP face: the Host header names another host than the address `serve` listens on (DNS rebinding)."""

    code = "bad_host"


class Internal(SidecarError):
    """Unexpected failure while serving a request; the process keeps serving."""

    code = "internal"


class Disabled(SidecarError):
    """A feature switched off by configuration (e.g. graph memory with --no-graph), or a write on a sidecar that
    serves an object store read-only (another sidecar holds the writer lease)."""

    code = "disabled"


class StartupFailed(SidecarError):
    """Sent once, instead of `ready`, when the model or the store cannot be opened; the process then exits 1."""

    code = "startup_failed"


ERROR_CLASSES: tuple[type[SidecarError], ...] = (
    InvalidJson,
    InvalidRequest,
    UnknownType,
    NotFound,
    TooLarge,
    Disabled,
    BadFile,
    Conflict,
    IoError,
    Internal,
    StartupFailed,
    Unauthorized,
    BadHost,
)
ERROR_CODES = tuple(c.code for c in ERROR_CLASSES)
