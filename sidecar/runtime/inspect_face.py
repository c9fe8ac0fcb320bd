"""`memory-sidecar inspect`: the runtime's half of the read-only web page. Loads the embedding model
(so that search scores are the sidecar's own), opens the data dir read-only (no lock, no writes), and
serves on 127.0.0.1 until a stop signal (SIGINT or SIGTERM; Ctrl+C or Ctrl+Break on Windows)."""

from __future__ import annotations

import logging
import secrets
import sys
import threading
from pathlib import Path

from .config import Config
from .platform import on_stop_signals

log = logging.getLogger("sidecar.inspector")


def run(config: Config) -> int:
    """Serve until a signal; returns the exit code (0, or 1 when the data dir or the model cannot be opened)."""
    if config.shared:
        print(
            f"memory-sidecar inspect: {config.data_dir} is an object-store location; the inspector reads local "
            "data dirs only (export it with `memory-sidecar export` and import it into a local one)",
            file=sys.stderr,
        )
        return 1
    try:
        from ..embedding.embedder import Embedder
        from ..embedding.model import resolve_model
        from ..inspector import InspectorError, InspectorServer, ReadOnlyData

        files = resolve_model(
            config.model_dir,
            config.offline,
            config.model_sha256,
            config.model,
            config.query_prefix,
            config.passage_prefix,
        )
        embedder = Embedder(files, threads=config.threads)
        identity = files.identity
        assert isinstance(config.data_dir, Path)  # a local data dir (object-store locations are refused above)
        data = ReadOnlyData(config.data_dir, embedder.embed_query, identity, files.spec.scripts)
        token = secrets.token_urlsafe(24) if config.token is None else config.token
        server = InspectorServer(data, config.port, token)
    except (InspectorError, OSError, RuntimeError) as exc:
        print(f"memory-sidecar inspect: {exc}", file=sys.stderr)
        return 1
    if not data.same_model:
        log.warning(
            "%s was embedded by another model than %s: only keyword search is meaningful", config.data_dir, files.name
        )

    def on_signal(signum: int, _frame: object) -> None:
        log.info("received signal %d, stopping", signum)
        threading.Thread(target=server.shutdown, daemon=True).start()  # shutdown() waits for serve_forever

    on_stop_signals(on_signal)
    print(f"memory-sidecar inspect: serving {config.data_dir} read-only at {server.url}", file=sys.stderr, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
    return 0
