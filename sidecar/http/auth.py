"""Who may call the HTTP face: the bearer token (made into a 0600 file, or the operator's file), compared in
constant time, and the Host header held to the address the server listens on (a page in a browser that
rebinds its own name to 127.0.0.1 sends its own name as Host)."""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from ..wire.errors import BadHost, SidecarError, Unauthorized

TOKEN_FILE = "http-token"  # in a local data dir, when --token-file names none
MIN_TOKEN_CHARS = 16


class TokenFileError(ValueError):
    """The token file cannot be made or used; the message says why and what to do."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def load_token(path: Path, create: bool) -> str:
    """The token in `path`; with `create`, a new random one written there first when the file is missing
    (0600, created exclusively: two servers never write it at once)."""
    if create and not path.exists():
        token = secrets.token_urlsafe(32)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        except FileExistsError:
            pass  # made meanwhile: read it below
        except OSError as exc:
            raise TokenFileError(f"cannot create the token file {path}: {exc.strerror or exc}") from None
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(token.encode() + b"\n")
            return token
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise TokenFileError(
            f"the token file {path} does not exist: make it first (one line, at least {MIN_TOKEN_CHARS} "
            'characters, readable only by this user), e.g. python -c "import secrets; print(secrets.token_urlsafe(32))"'
            f" > {path}; chmod 600 {path}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenFileError(f"cannot read the token file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if len(token) < MIN_TOKEN_CHARS or not token.isascii() or any(c.isspace() for c in token):
        raise TokenFileError(
            f"the token file {path} must hold one token of at least {MIN_TOKEN_CHARS} printable ASCII characters"
        )
    return token


@dataclass(frozen=True)
class Guard:
    """The checks every request passes before its body is read."""

    token: str
    hosts: frozenset[str] | None  # the Host values accepted (lower case); None: any (a wildcard address)

    @classmethod
    def for_listen(cls, token: str, host: str, port: int) -> Guard:
        if is_wildcard(host):
            return cls(token, None)
        names = {host.lower()}
        if is_loopback(host):
            names |= {"localhost", "127.0.0.1", "::1"}
        shown = {f"[{n}]" if ":" in n else n for n in names}
        return cls(token, frozenset(shown | {f"{n}:{port}" for n in shown}))

    def check(self, host: str | None, authorization: str | None, query: str) -> SidecarError | None:
        """The error that refuses this request, or None. The Host first: a rebinding page learns nothing more."""
        if self.hosts is not None and (host or "").lower() not in self.hosts:
            return BadHost(
                "the Host header must name the address this server listens on "
                f"({', '.join(sorted(self.hosts))}); got {host!r:.100}"
            )
        if "token=" in query.lower() or "access_token=" in query.lower():
            return Unauthorized(
                "a token in the URL is refused (URLs end up in logs and histories): "
                "send it as the header Authorization: Bearer <token>"
            )
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return Unauthorized("send the token as the header Authorization: Bearer <token> (see --token-file)")
        if not hmac.compare_digest(given.strip().encode("utf-8", "replace"), self.token.encode()):
            return Unauthorized("wrong token (the server's token file holds the right one)")
        return None
