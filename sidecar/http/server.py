"""uvicorn (h11, asyncio) serving the ASGI app on a socket bound before the store opens: keep-alive, the
connection limit (503 beyond it), a deadline for a request's headers (a slowloris or idle connection is closed,
408) and body (app.py), and the graceful stop: on SIGTERM/SIGINT (Windows: CTRL_BREAK too) or a `shutdown`
request it stops accepting, finishes the requests in hand, then returns."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..wire import encode
from ..wire.errors import InvalidRequest

log = logging.getLogger("sidecar.http")

KEEP_ALIVE_SECONDS = 5  # an idle keep-alive connection is closed after this
GRACE_SECONDS = 30  # at a stop, requests in hand get this long to finish
MAX_CONNECTIONS = 4096  # open connections (and requests in hand) before new requests get 503
MAX_HEADER_BYTES = 64 * 1024  # a request line and headers longer than this get 400


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (raises OSError: an address in use, a host that is not this machine's)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=2048, reuse_port=False)


class DeadlineH11(H11Protocol):
    """h11 with a deadline for each request's line and headers, from the connection's start or the previous
    answer (uvicorn has none: a client sending a byte a second would hold its connection for ever)."""

    header_seconds = 10.0

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            # asyncio sets it only on sockets made with proto IPPROTO_TCP, and socket.create_server makes
            # them with 0: without it an answer's headers and body are two writes, the second held back by
            # Nagle until the client's delayed ACK: 40 ms a request (measured 44 ms p50 for `ping`, 0.3 ms with it)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._header_timer: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        self._timed = self.cycle
        self._header_timer = self.loop.call_later(self.header_seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is not None and self.cycle is not self._timed:  # this request's headers are complete
            self._disarm()

    def on_response_complete(self) -> None:
        # armed before uvicorn starts a pipelined request already read: that one's new cycle is then not the
        # one timed, and the deadline leaves it alone
        self._disarm()
        if not self.transport.is_closing():
            self._arm()
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _too_slow(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.cycle is not self._timed:  # a request's headers came meanwhile
            return
        body = encode(
            InvalidRequest(
                f"the request line and headers did not arrive within {self.header_seconds:g} s (--request-timeout)"
            ).to_response()
        )
        head = "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
        self.transport.write(f"{head}content-length: {len(body)}\r\n\r\n".encode() + body)
        self.transport.close()


class Server(uvicorn.Server):
    """uvicorn's server, telling `on_ready` once it accepts requests."""

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[], None]):
        super().__init__(config)
        self.on_ready = on_ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.on_ready()


def make_server(app: ASGIApp, request_seconds: float, on_ready: Callable[[], None]) -> Server:
    protocol = type("Protocol", (DeadlineH11,), {"header_seconds": request_seconds})
    config = uvicorn.Config(
        app,
        http=protocol,
        loop="asyncio",
        lifespan="off",
        ws="none",
        interface="asgi3",
        log_config=None,  # the process's own logging (stderr)
        access_log=False,
        server_header=False,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=GRACE_SECONDS,
        limit_concurrency=MAX_CONNECTIONS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
    )
    return Server(config, on_ready)
