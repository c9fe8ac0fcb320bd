"""The inspector's HTTP server: the standard library's ThreadingHTTPServer on 127.0.0.1 only.

Every request passes three checks before a page is built: the Host header names this server
(127.0.0.1 or localhost with its port: a DNS-rebinding page on another name gets 403), the token
(from the URL once, then from a cookie scoped to this port: another local user or a page that
guesses the port gets 403), and the method (GET and HEAD; every other method, known or not, 405:
nothing is writable). Every answer, the standard library's own errors too (a malformed request line, a
header too long), carries a Content Security Policy that allows no script at all and the other security
headers. A client that goes away before its answer is written is one debug line, never a traceback.
"""

from __future__ import annotations

import calendar
import hmac
import logging
import sys
import time
from collections.abc import Callable
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..wire.errors import clip
from . import pages
from .reader import InspectorError, ReadOnlyData

log = logging.getLogger("sidecar.inspector")

HOST = "127.0.0.1"
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
PAGE_SIZE = 100


class InspectorServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # connections the kernel holds until accepted (a browser opens several at once)

    def __init__(self, data: ReadOnlyData, port: int = 0, token: str | None = None):
        super().__init__((HOST, port), Handler)
        self.data = data
        self.token = token or None
        self.port = self.server_address[1]
        self.hosts = {f"{HOST}:{self.port}", f"localhost:{self.port}"}
        self.cookie = f"memory_inspector_{self.port}"

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/" + (f"?token={self.token}" if self.token else "")

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone mid-answer (a closed tab, an aborted download) is routine: one debug line. Anything
        else is logged with its traceback, and the server goes on."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            log.debug("client %s went away: %s", client_address[0], type(exc).__name__)
            return
        log.error("request from %s failed", client_address[0], exc_info=exc)


class Handler(BaseHTTPRequestHandler):
    server: InspectorServer
    server_version = "memory-sidecar-inspector"
    sys_version = ""
    timeout = 60  # seconds a connection may stay silent before its thread lets it go

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _refuse_method(self) -> None:
        self._send(
            HTTPStatus.METHOD_NOT_ALLOWED, "text/plain", b"read-only: GET and HEAD only\n", True, {"Allow": "GET, HEAD"}
        )

    def __getattr__(self, name: str) -> Any:
        # the base class looks up `do_<METHOD>` for whatever method the request line names (TRACE, CONNECT,
        # PROPFIND, made-up ones) and answers a missing one with its own 501 page: every one is 405 here
        if name.startswith("do_"):
            return self._refuse_method
        raise AttributeError(name)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's errors (a malformed request line, a header or URL too long) with this
        server's headers and a plain-text body quoting at most 200 characters of the request."""
        self.close_connection = True
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = ""
        text = f"{code} {phrase}: {clip(message or '')}\n".encode("utf-8", "replace")
        body = self.command != "HEAD" and code >= 200 and code not in (HTTPStatus.NO_CONTENT, HTTPStatus.NOT_MODIFIED)
        if not getattr(self, "request_version", None) or self.request_version == "HTTP/0.9":
            self.request_version = "HTTP/1.0"  # a request line too broken to name one: answer with headers
        self._send(code, "text/plain", text, body)

    def _send(self, status: int, kind: str, payload: bytes, body: bool, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        headers = {
            "Content-Type": f"{kind}; charset=utf-8",
            "Content-Length": str(len(payload)),
            "Content-Security-Policy": CSP,
            "X-Content-Type-Options": "nosniff",
            "X-Frame-Options": "DENY",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-store",
            **(extra or {}),
        }
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(payload)

    def _html(self, status: int, title: str, inner: str, body: bool) -> None:
        doc = pages.page(title, inner, str(self.server.data.path))
        self._send(status, "text/html", doc.encode("utf-8"), body)

    def _answer(self, body: bool) -> None:
        if (self.headers.get("Host") or "").lower() not in self.server.hosts:
            self._send(HTTPStatus.FORBIDDEN, "text/plain", b"wrong Host header: open the URL printed on stderr\n", body)
            return
        parts = urlsplit(self.path)
        params = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        token = self.server.token
        if token and "token" in params:
            if not hmac.compare_digest(params["token"].encode(), token.encode()):
                self._send(HTTPStatus.FORBIDDEN, "text/plain", b"wrong token\n", body)
                return
            # once seen in the URL, the token lives in a cookie and leaves the address bar (and history)
            rest = "&".join(p for p in parts.query.split("&") if not p.startswith("token="))
            self._send(
                HTTPStatus.SEE_OTHER,
                "text/plain",
                b"",
                body,
                {
                    "Location": parts.path + ("?" + rest if rest else ""),
                    "Set-Cookie": f"{self.server.cookie}={token}; HttpOnly; SameSite=Strict; Path=/",
                },
            )
            return
        if token and not self._cookie_ok(token):
            self._send(HTTPStatus.FORBIDDEN, "text/plain", b"no token: open the URL printed on stderr\n", body)
            return
        if parts.path == "/style.css":
            self._send(HTTPStatus.OK, "text/css", pages.STYLE.encode(), body)
            return
        route = ROUTES.get(parts.path)
        if route is None:
            self._html(HTTPStatus.NOT_FOUND, "not found", pages.error_page(f"no page {clip(parts.path)}"), body)
            return
        try:
            title, inner = _with_retry(lambda: route(self.server.data, params))
        except (InspectorError, ValueError) as exc:
            self._html(HTTPStatus.BAD_REQUEST, "error", pages.error_page(clip(str(exc), 1000)), body)
            return
        except Exception as exc:
            log.exception("page %s failed", parts.path)
            self._html(
                HTTPStatus.INTERNAL_SERVER_ERROR,
                "error",
                pages.error_page(clip(f"{type(exc).__name__}: {exc}", 1000)),
                body,
            )
            return
        self._html(HTTPStatus.OK, title, inner, body)

    def _cookie_ok(self, token: str) -> bool:
        cookie = SimpleCookie()
        try:
            cookie.load(self.headers.get("Cookie") or "")
        except Exception:
            return False
        morsel = cookie.get(self.server.cookie)
        return morsel is not None and hmac.compare_digest(morsel.value.encode(), token.encode())


def _with_retry(read: Callable[[], tuple[str, str]]) -> tuple[str, str]:
    """A read that races the sidecar's compaction (the files of the version it started on removed under
    it) is tried once more, on the newest version."""
    try:
        return read()
    except (OSError, RuntimeError) as exc:
        log.info("read failed (%s); retrying on the newest version", exc)
        return read()


def _user(params: dict[str, str]) -> str:
    user = params.get("user", "")
    if not user:
        raise InspectorError("which user? (the page needs ?user=...)")
    return user


def _users(data: ReadOnlyData, params: dict[str, str]) -> tuple[str, str]:
    return "users", pages.users_page(data.users())


def _messages(data: ReadOnlyData, params: dict[str, str]) -> tuple[str, str]:
    user = _user(params)
    q = params.get("q", "").strip()
    mode = params.get("mode", "hybrid")
    limit = min(max(int(params.get("limit") or 20), 1), 100)
    offset = max(int(params.get("offset") or 0), 0)
    results, error = None, None
    if q:
        try:
            results = data.search(user, q, mode, limit)
        except InspectorError as exc:
            error = str(exc)
    recent, total = data.messages(user, offset, PAGE_SIZE)
    return f"messages of {user}", pages.messages_page(user, q, mode, limit, results, error, recent, total, offset)


def _facts(data: ReadOnlyData, params: dict[str, str]) -> tuple[str, str]:
    user = _user(params)
    return f"facts of {user}", pages.facts_page(user, data.facts(user))


def _graph(data: ReadOnlyData, params: dict[str, str]) -> tuple[str, str]:
    user = _user(params)
    return f"graph of {user}", pages.graph_page(user, data.graph(user))


def as_of(value: str) -> float | None:
    """The timeline's `as_of`: a date (YYYY-MM-DD: the end of that day, UTC), unix seconds, or empty (now)."""
    value = value.strip()
    if not value:
        return None
    if value.isdigit() and len(value) <= 12:
        return float(value)
    try:
        return calendar.timegm(time.strptime(value, "%Y-%m-%d")) + 86_399.0
    except (ValueError, OverflowError):
        raise InspectorError(f"`as_of` {clip(value)!r} is neither a date (YYYY-MM-DD) nor unix seconds") from None


def _timeline(data: ReadOnlyData, params: dict[str, str]) -> tuple[str, str]:
    user = _user(params)
    at = as_of(params.get("as_of", ""))
    return f"timeline of {user}", pages.timeline_page(user, data.graph(user), data.facts(user), at, time.time())


def _stats(data: ReadOnlyData, params: dict[str, str]) -> tuple[str, str]:
    return "stats & health", pages.stats_page(data.stats())


ROUTES: dict[str, Callable[[ReadOnlyData, dict[str, str]], tuple[str, str]]] = {
    "/": _users,
    "/messages": _messages,
    "/facts": _facts,
    "/graph": _graph,
    "/timeline": _timeline,
    "/stats": _stats,
}
