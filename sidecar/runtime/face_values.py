"""Parsers of the values of options that only one face takes (config.FACE_OPTIONS): the MCP face's user, the
inspector's port and token."""

from __future__ import annotations

from ..wire.errors import quote


def parse_user_id(value: str) -> str:
    v = value.strip()
    if not v or len(v) > 512 or "\0" in v:
        raise ValueError(f"must be a non-empty user id of at most 512 characters, got {quote(value)}")
    return v


def parse_port(value: str) -> int:
    v = int(value)
    if not 0 <= v <= 65535:
        raise ValueError(f"must be a TCP port (0 for a free one), got {quote(value)}")
    return v


def parse_token(value: str) -> str:
    v = value.strip()
    if not all(c.isascii() and (c.isalnum() or c in "-_") for c in v):
        raise ValueError("may hold only letters, digits, '-' and '_' (it goes into a URL and a cookie)")
    return v
