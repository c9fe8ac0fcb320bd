"""The HTTP face (`memory-sidecar serve`), beside the NDJSON transport: an HTTP/1.1 JSON API over the same
request handler, for bots that run in several processes (docs/http.md). The routes and the body limit
(app.py), the token and the Host check (auth.py), the status of each error code (statuses.py), the OpenAPI
description (openapi.py), uvicorn with a deadline for headers (server.py). Needs the optional `http` extra.
Imports only `wire`: the runtime hands it the dispatcher's request handler."""

from .app import READS, Settings, build_app
from .auth import TOKEN_FILE, Guard, TokenFileError, is_loopback, is_wildcard, load_token
from .openapi import document
from .server import bind, make_server
from .statuses import STATUS_BY_CODE, status_of

__all__ = [
    "READS",
    "STATUS_BY_CODE",
    "TOKEN_FILE",
    "Guard",
    "Settings",
    "TokenFileError",
    "bind",
    "build_app",
    "document",
    "is_loopback",
    "is_wildcard",
    "load_token",
    "make_server",
    "status_of",
]
