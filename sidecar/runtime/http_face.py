"""`memory-sidecar serve`: the runtime's half of the HTTP face. The stdout guard, the composition root,
background maintenance and the closing of the store are the NDJSON server's; the routes, the token, the Host
check and the HTTP server are sidecar/http. Order: bind the address (an address in use fails at once), open
the store (its lock refuses a second server on the data dir), read or make the token file, serve, say
`ready` (with `url` and `token_file`) on stdout; a stop signal or a `shutdown` request finishes the requests
in hand, then the store closes and the process exits 0."""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from .. import __version__
from ..wire import PROTOCOL_VERSION, ReadyResponse, encode
from ..wire.errors import StartupFailed
from ..wire.transport import protect_stdout
from . import collector, native_memory
from .config import Config
from .face_values import parse_listen
from .frozen import bundle_dir
from .maintenance import maintain
from .mcp_face import install_hint
from .platform import on_stop_signals, open_to_others

log = logging.getLogger("sidecar.server")


def extra_missing() -> str | None:
    """Why the HTTP face cannot run here (with the command that fixes it), or None. The frozen binary has it."""
    if bundle_dir() is not None:
        return None
    for module in ("starlette", "uvicorn"):
        if importlib.util.find_spec(module) is None:
            hint = install_hint().replace("[mcp]", "[http]")
            return f"the optional HTTP extra is not installed (no `{module}` module); install it with: {hint}"
    return None


class Startup(Exception):
    """Start-up cannot go on; the message says why (and what to do)."""


def _token_path(config: Config, loopback: bool) -> tuple[Path, bool]:
    """The token file and whether it may be made here."""
    if config.token_file:
        return Path(config.token_file).expanduser(), loopback
    if not loopback:
        raise Startup(
            f"--listen {config.listen} is not a loopback address: give --token-file, a token file you made "
            "(anyone who can reach the address and has the token reads and writes every user's memory)"
        )
    if config.shared:
        raise Startup("an object-store data dir has no local folder for the token: give --token-file")
    assert isinstance(config.data_dir, Path)
    from ..http import TOKEN_FILE

    return config.data_dir / TOKEN_FILE, True


def run(config: Config) -> int:
    """Serve HTTP until a stop signal or a `shutdown` request. Returns 0, or 1 when start-up failed (a
    `startup_failed` line on stdout says why, as the pipe's does)."""
    proto_out = os.fdopen(protect_stdout(), "wb", buffering=0)
    stop = threading.Event()
    server: Any = None

    def on_signal(signum: int, _frame: object) -> None:
        log.info("received signal %d, shutting down", signum)
        stop.set()
        if server is not None:
            server.should_exit = True

    on_stop_signals(on_signal)
    t0 = time.monotonic()
    app = sock = None
    try:
        from ..http import Guard, Settings, TokenFileError, bind, build_app, is_loopback, load_token, make_server

        host, port = parse_listen(config.listen)
        loopback = is_loopback(host)
        token_path, create = _token_path(config, loopback)
        try:
            sock = bind(host, port)
        except OSError as exc:
            raise Startup(f"cannot listen on {config.listen}: {exc.strerror or exc}") from None
        from .app import build

        app = build(config)
        try:
            token = load_token(token_path, create)
        except TokenFileError as exc:
            raise Startup(str(exc)) from None
        if open_to_others(token_path):
            log.warning("the token file %s is readable by other users: chmod 600 %s", token_path, token_path)
        if not loopback:
            log.warning(
                "listening on %s, not a loopback address: every client that can reach it and holds the token "
                "reads and writes every user's memory; put TLS in front of it (a reverse proxy) off this machine",
                config.listen,
            )
        port = sock.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{port}"
        settings = Settings(
            guard=Guard.for_listen(token, host, port),
            max_body_bytes=config.max_line_bytes,
            body_seconds=config.request_timeout,
            allow_origins=config.allow_origin or (),
        )
        native_memory.release_code_pages()
    except Exception as exc:
        message = str(exc) if not isinstance(exc, ImportError) else f"missing dependency: {exc}"
        log.error("start-up failed: %s", message)
        proto_out.write(encode(StartupFailed(f"start-up failed: {message}").to_response()))
        if app is not None:
            app.close()
        if sock is not None:
            sock.close()
        return 1
    built = app

    def on_ready() -> None:
        ready = ReadyResponse(
            version=__version__,
            protocol=PROTOCOL_VERSION,
            model=built.service.embedder.files.name,
            dim=built.service.embedder.files.dim,
            model_digest=built.service.embedder.files.digest,
            data_dir=str(config.data_dir),
            memories=built.store.count(),
            startup_ms=round((time.monotonic() - t0) * 1000),
            url=url,
            token_file=str(token_path),
        )
        proto_out.write(encode(ready))
        log.info("serving %s on %s (token in %s)", config.data_dir, url, token_path)
        collector.settle()

    def shutdown_requested() -> None:
        log.info("shutdown request, shutting down")
        server.should_exit = True

    maintenance = threading.Thread(
        target=maintain, args=(config, built.service, built.graph, stop), name="maintenance", daemon=True
    )
    try:
        server = make_server(
            build_app(built.dispatcher.handle, settings, shutdown_requested, built.activity.handling),
            config.request_timeout,
            on_ready,
        )
        maintenance.start()
        if not stop.is_set():
            server.run(sockets=[sock])
        log.info("HTTP server stopped; closing the store")
        return 0
    finally:
        stop.set()
        if maintenance.is_alive():
            maintenance.join(timeout=1.0)  # a compaction cut short is harmless: commits are atomic
        built.close()
        sock.close()
