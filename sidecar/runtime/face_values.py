"""Parsers of the values of options that only one face takes (config.FACE_OPTIONS): the MCP face's user, the
inspector's port and token, the HTTP face's address and origins."""

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


DEFAULT_PORT = 7438  # the HTTP face's port (docs/http.md)
DEFAULT_LISTEN = f"127.0.0.1:{DEFAULT_PORT}"


def parse_listen(value: str) -> tuple[str, int]:
    """HOST:PORT, [IPv6]:PORT, or :PORT (loopback) -> (host, port)."""
    v = value.strip()
    host, sep, port = v.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"must be HOST:PORT (e.g. 127.0.0.1:{DEFAULT_PORT}, [::1]:0), got {quote(value)}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"an IPv6 address goes in brackets ([::1]:{DEFAULT_PORT}), got {quote(value)}")
    return (host or "127.0.0.1"), parse_port(port)


def check_listen(value: str) -> str:
    parse_listen(value)
    return value.strip()


def parse_origins(value: str) -> tuple[str, ...]:
    origins = tuple(o.strip().rstrip("/") for o in value.split(",") if o.strip())
    for o in origins:
        if o != "*" and not (o.startswith(("http://", "https://")) and "/" not in o.split("://", 1)[1]):
            raise ValueError(f"an origin is scheme://host[:port] (or *), got {quote(o)}")
    return origins
