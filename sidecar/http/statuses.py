"""Which HTTP status answers which error code: the one place the HTTP face maps them (docs/http.md). The
body is always the pipe's error object, `{"type":"error","code":...,"message":...}`."""

from __future__ import annotations

STATUS_BY_CODE = {
    "invalid_json": 400,
    "invalid_request": 400,
    "unknown_type": 400,
    "bad_file": 400,
    "unauthorized": 401,
    "disabled": 403,
    "not_found": 404,
    "conflict": 409,
    "too_large": 413,
    "bad_host": 421,
    "io_error": 500,
    "internal": 500,
    "startup_failed": 500,
}


def status_of(code: str) -> int:
    """The HTTP status of an error code (500 for a code this table does not know)."""
    return STATUS_BY_CODE.get(code, 500)
