"""The process lifecycle: guard stdout, queue requests while loading, say `ready`, serve in order,
run expiry and compaction in the background, and leave by one graceful path (shutdown request,
end of stdin, a stop signal, or the parent process gone: platform.py).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from .. import __version__
from ..wire import PROTOCOL_VERSION, ReadyResponse, encode
from ..wire.errors import StartupFailed, TooLarge
from ..wire.transport import Eof, Incoming, Line, Oversized, StdioTransport
from . import collector, native_memory, process_start
from .config import Config
from .frozen import onefile_unpack_dir
from .maintenance import maintain
from .platform import ParentWatch, on_stop_signals

if TYPE_CHECKING:  # app.py imports the domains: loaded once the model starts loading
    from .app import App
    from .dispatcher import Dispatcher

log = logging.getLogger("sidecar.server")

POLL_SECONDS = 0.25  # how often the idle loop checks for signals and a dead parent
GROUP_MAX = 64  # most queued requests taken together (consecutive stores share one commit)


class Server:
    def __init__(self, config: Config, transport: StdioTransport | None = None, parent: ParentWatch | None = None):
        self.config = config
        self.transport = transport or StdioTransport(config.max_line_bytes)
        self.stop = threading.Event()
        # the process not to outlive (in a onefile build: PyInstaller's launcher)
        self.parent = parent or ParentWatch()
        self._started = threading.Event()
        self.app: App | None = None

    # ------------------------------------------------------------------ lifecycle

    def _on_signal(self, signum: int, _frame: object) -> None:
        log.info("received signal %d, shutting down", signum)
        self.stop.set()

    def _parent_gone(self) -> bool:
        return self.parent.gone()

    def _watch_parent_during_startup(self) -> None:
        """Loading the model and opening the store take seconds and cannot be interrupted; a host
        that dies meanwhile must not leave us running until `ready`. Leaving here is as safe as a
        SIGKILL (LanceDB commits are atomic), and nobody is left to read an error line."""
        while not self._started.wait(POLL_SECONDS):
            if self._parent_gone():
                log.warning("parent process is gone during start-up, exiting")
                from .frozen import exit_now

                exit_now(1, self.parent)

    def run(self) -> int:
        t0 = time.monotonic()
        self.transport.start_reader()  # requests sent before `ready` wait in the queue
        on_stop_signals(self._on_signal)
        threading.Thread(target=self._watch_parent_during_startup, name="startup-watchdog", daemon=True).start()
        model = None
        try:
            from ..embedding.loading import ModelLoad

            cfg = self.config  # the model loads beside the imports that follow (embedding/loading.py)
            model = ModelLoad(
                cfg.model_dir,
                cfg.offline,
                cfg.model_sha256,
                cfg.threads,
                cfg.model,
                cfg.query_prefix,
                cfg.passage_prefix,
            )
            from .app import build

            self.app = build(cfg, model)
        except Exception as exc:
            if model is not None:
                model.settle()  # never exit while onnxruntime makes its session (ModelLoad.settle)
            message = str(exc) if not isinstance(exc, ImportError) else f"missing dependency: {exc}"
            log.error("start-up failed: %s", message)
            self.transport.send(encode(StartupFailed(f"start-up failed: {message}").to_response()))
            self.transport.close()
            return 1
        finally:
            self._started.set()
        app = self.app
        assert app is not None
        try:
            files = app.service.embedder.files
            memories = app.store.count()
            native_memory.release_code_pages()  # what loading mapped and serving does not use
            # from the start of the process the host spawned: a onefile build's launcher (our parent), else us
            since_spawn, _ = process_start.since_spawn(self.parent.pid if onefile_unpack_dir() else os.getpid())
            ready = ReadyResponse(
                version=__version__,
                protocol=PROTOCOL_VERSION,
                model=files.name,
                dim=files.dim,
                model_digest=files.digest,
                data_dir=str(self.config.data_dir),
                memories=memories,
                startup_ms=round(since_spawn * 1000),
            )
            self.transport.send(encode(ready))
            log.info(
                "ready %d ms after the %s started (%d ms in Server.run)",
                ready.startup_ms,
                "launcher" if onefile_unpack_dir() else "process",
                (time.monotonic() - t0) * 1000,
            )
            collector.settle()  # start-up's objects frozen, the collector back on (collector.py)
            maintenance = threading.Thread(target=self._maintain, args=(app.service,), name="maintenance", daemon=True)
            maintenance.start()
            self._serve(app.dispatcher)
            self.stop.set()
            maintenance.join(timeout=1.0)  # a compaction cut short is harmless: commits are atomic
            return 0
        finally:
            app.close()
            self.transport.close()

    def _next(self, backlog: deque) -> Incoming:
        return backlog.popleft() if backlog else self.transport.incoming.get(timeout=POLL_SECONDS)

    def _drain(self, first: bytes, backlog: deque) -> list[bytes]:
        """The line in hand plus the lines already queued behind it (never waits for more)."""
        lines = [first]
        while len(lines) < GROUP_MAX:
            try:
                nxt = backlog.popleft() if backlog else self.transport.incoming.get_nowait()
            except queue.Empty:
                break
            if not isinstance(nxt, Line):
                backlog.appendleft(nxt)
                break
            lines.append(nxt.data)
        return lines

    def _serve(self, dispatcher: Dispatcher) -> None:
        assert self.app is not None
        backlog: deque = deque()
        while not self.stop.is_set():
            try:
                item = self._next(backlog)
            except queue.Empty:
                if self._parent_gone():
                    log.warning("parent process is gone, shutting down")
                    return
                continue
            if isinstance(item, Eof):
                log.info("end of input, shutting down")
                return
            if isinstance(item, Oversized):
                err = TooLarge(
                    f"request line of {item.size} bytes is over the limit of "
                    f"{self.config.max_line_bytes} bytes (--max-line-bytes)"
                )
                results = [(encode(err.to_response()), False)]
            else:
                lines = self._drain(item.data, backlog)
                with self.app.activity.handling():
                    results = dispatcher.handle_lines(lines) if len(lines) > 1 else [dispatcher.handle_line(lines[0])]
            for line, shutdown in results:
                if not self.transport.send(line):
                    log.warning("stdout is closed, shutting down")
                    return
                if shutdown:
                    return
            if self._parent_gone():
                log.warning("parent process is gone, shutting down")
                return

    def _maintain(self, service) -> None:
        assert self.app is not None
        maintain(self.config, service, self.app.graph, self.stop)
