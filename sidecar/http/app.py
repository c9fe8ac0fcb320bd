"""The routes: POST /v1/command (any request the pipe takes), the seed's shortcuts (POST /ingest, /recall,
/context; GET /health), GET /openapi.json. Every request passes the Guard (Host, then the token) before its
body is read; the body is read with the pipe's line limit and a deadline; the typed request goes to the
runtime's request handler in a worker thread: reads side by side, a write alone (the order the services
expect), and every outcome is the pipe's object, an error with the status of its code (statuses.py)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import orjson
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..wire import (
    ChannelContextRequest,
    ContextRequest,
    EntitiesRequest,
    EntityRequest,
    FactHistoryRequest,
    FactsRequest,
    GraphRecallRequest,
    HealthRequest,
    HistoryRequest,
    MemoryInstructionsRequest,
    PingRequest,
    QueryRequest,
    RecallRequest,
    ShutdownRequest,
    StatsRequest,
    SyncRequest,
    decode,
    encode,
    validate_request,
)
from ..wire.errors import InvalidJson, InvalidRequest, NotFound, SidecarError, TooLarge
from .auth import Guard
from .openapi import SHORTCUTS, document
from .statuses import status_of

log = logging.getLogger("sidecar.http")

Handle = Callable[[Any], BaseModel]  # a typed wire request -> its response; raises SidecarError
# Requests that only read: several run at once. Every other request (a write, `sync`, `export`, ...) runs alone,
# after the reads in hand and before those that came after it, so a write acknowledged is seen by what follows.
READS = (
    QueryRequest,
    FactsRequest,
    RecallRequest,
    FactHistoryRequest,
    ContextRequest,
    ChannelContextRequest,
    HistoryRequest,
    StatsRequest,
    HealthRequest,
    MemoryInstructionsRequest,
    EntitiesRequest,
    EntityRequest,
    GraphRecallRequest,
)
# Requests that only wait (for background extraction) or touch nothing: outside the lock, so that a `sync` of up to
# its timeout does not hold up the other clients
WAITS = (SyncRequest, PingRequest)
JSON = "application/json"


@dataclass(frozen=True)
class Settings:
    guard: Guard
    max_body_bytes: int  # the pipe's --max-line-bytes
    body_seconds: float  # the whole body must arrive within this (--request-timeout)
    threads: int = 8  # requests handled at once (reads side by side; a write alone)
    allow_origins: tuple[str, ...] = ()  # CORS: none unless --allow-origin


class ReadWrite:
    """Many readers or one writer; a waiting writer goes before readers that come after it."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._writing and not self._waiting)
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            self._cond.wait_for(lambda: not self._writing and not self._readers)
            self._waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()


def error_response(exc: SidecarError, close: bool = False) -> Response:
    headers = {"connection": "close"} if close else None
    return Response(encode(exc.to_response()), status_code=status_of(exc.code), media_type=JSON, headers=headers)


class GuardMiddleware:
    """Host and token before anything else (a 404 too); the error object as the body."""

    def __init__(self, app: ASGIApp, guard: Guard):
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        refused = self.guard.check(
            headers.get("host"), headers.get("authorization"), scope["query_string"].decode("latin-1")
        )
        if refused is not None:
            extra = {"www-authenticate": "Bearer"} if refused.code == "unauthorized" else {}
            response = error_response(refused, close=True)
            response.headers.update(extra)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class BodyTimeout(InvalidRequest):
    """The body did not arrive in time: 408, answered as `invalid_request`."""


async def read_body(request: Request, settings: Settings) -> bytes:
    limit = settings.max_body_bytes
    length = request.headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise InvalidRequest(f"Content-Length must be a number of bytes, got {length!r:.60}")
        if int(length) > limit:
            raise TooLarge(f"request body of {int(length)} bytes is over the limit of {limit} bytes (--max-line-bytes)")
    chunks, size = [], 0
    try:
        with anyio.fail_after(settings.body_seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise TooLarge(f"request body is over the limit of {limit} bytes (--max-line-bytes)")
                chunks.append(chunk)
    except TimeoutError:
        raise BodyTimeout(
            f"the request body did not arrive within {settings.body_seconds:g} s (--request-timeout)"
        ) from None
    return b"".join(chunks)


def build_app(
    handle: Handle,
    settings: Settings,
    stop: Callable[[], None],
    handling: Callable[[], AbstractContextManager[None]],
) -> ASGIApp:
    """The ASGI application. `stop` ends the server (after a `shutdown` request's answer); `handling()` is
    held around every request (background work steps aside meanwhile)."""
    lock = ReadWrite()
    limiter = anyio.CapacityLimiter(settings.threads)

    def call(request: Any) -> BaseModel:
        if isinstance(request, WAITS):
            return handle(request)
        with lock.read() if isinstance(request, READS) else lock.write():
            return handle(request)

    async def answer(request: Any) -> Response:
        with handling():
            try:
                response = await anyio.to_thread.run_sync(call, request, limiter=limiter)
            except SidecarError as exc:
                return error_response(exc)
        task = BackgroundTask(stop) if isinstance(request, ShutdownRequest) else None
        return Response(encode(response), media_type=JSON, background=task)

    async def body_of(http: Request) -> bytes | Response:
        try:
            return await read_body(http, settings)
        except SidecarError as exc:  # the rest of the body is not read: the connection closes
            if isinstance(exc, BodyTimeout):
                return Response(
                    encode(exc.to_response()), status_code=408, media_type=JSON, headers={"connection": "close"}
                )
            return error_response(exc, close=True)

    async def command(http: Request) -> Response:
        body = await body_of(http)
        if isinstance(body, Response):
            return body
        try:
            request = decode(body)
        except SidecarError as exc:
            return error_response(exc)
        return await answer(request)

    def shortcut(kind: str) -> Callable[[Request], Any]:
        async def route(http: Request) -> Response:
            body = await body_of(http)
            if isinstance(body, Response):
                return body
            try:
                try:
                    obj = orjson.loads(body)
                except orjson.JSONDecodeError as exc:
                    raise InvalidJson(f"body is not valid JSON: {exc}") from None
                if isinstance(obj, dict):
                    if obj.setdefault("type", kind) != kind:
                        raise InvalidRequest(
                            f"{http.url.path} takes a `{kind}` request; "
                            f"`type` {obj['type']!r:.60} belongs on /v1/command"
                        )
                request = validate_request(obj)
            except SidecarError as exc:
                return error_response(exc)
            return await answer(request)

        return route

    async def health(_http: Request) -> Response:
        return await answer(HealthRequest(type="health"))

    spec = orjson.dumps(document())

    async def openapi(_http: Request) -> Response:
        return Response(spec, media_type=JSON)

    async def http_error(http: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            known = ", ".join(
                ["POST /v1/command", *(f"POST {p}" for p in SHORTCUTS), "GET /health", "GET /openapi.json"]
            )
            return error_response(NotFound(f"no route {http.url.path!r:.100}; the routes: {known}"))
        err = InvalidRequest(f"{http.method} is not allowed on {http.url.path!r:.100}")
        return Response(encode(err.to_response()), status_code=exc.status_code, media_type=JSON, headers=exc.headers)

    routes = [
        Route("/v1/command", command, methods=["POST"]),
        *(Route(path, shortcut(kind), methods=["POST"]) for path, kind in SHORTCUTS.items()),
        Route("/health", health, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
    ]
    app: ASGIApp = Starlette(routes=routes, exception_handlers={HTTPException: http_error})
    app = GuardMiddleware(app, settings.guard)
    if settings.allow_origins:  # outside the guard: a browser's preflight carries no token
        app = CORSMiddleware(
            app,
            allow_origins=list(settings.allow_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["authorization", "content-type"],
        )
    return app
