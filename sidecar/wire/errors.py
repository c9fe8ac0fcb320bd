"""One exception class per protocol error code. Each renders itself as an error response.

Codes are part of the wire contract: never rename one, only add.
"""

from __future__ import annotations

from typing import Any


class SidecarError(Exception):
    code = "internal"

    def __init__(self, message: str, request_id: Any = None):
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
    InvalidJson, InvalidRequest, UnknownType, NotFound, TooLarge, Disabled, BadFile, Conflict, Internal,
    StartupFailed,
)
ERROR_CODES = tuple(c.code for c in ERROR_CLASSES)
