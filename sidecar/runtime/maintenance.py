"""Background maintenance of a running sidecar, whichever face serves it (NDJSON or MCP)."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from ..text import warm_redaction
from . import native_memory
from .config import Config

if TYPE_CHECKING:
    from ..graph import GraphService
    from ..messages import MemoryService
    from ..storage import Database

CONSOLIDATE_BUDGET = 0.5  # seconds of graph consolidation per maintenance tick (a tick is 1 s apart)

log = logging.getLogger("sidecar.server")


def maintain(cfg: Config, service: MemoryService, graph: GraphService | None, stop: threading.Event) -> None:
    """Expiry once at start and then every cleanup interval; cache warm-up, then the graph's start-up
    catch-up (messages stored without their episodes); compaction when due;
    graph consolidation when due; freed heap pages returned every few seconds, and the library pages
    that the warm-up left mapped released once (native_memory). On an object store shared
    by several sidecars, expiry, compaction and the catch-up run only on the lease holder (again when the
    lease passes here), and graph consolidation only on a sidecar that may write."""
    database = service.store.database
    next_expiry = time.monotonic() if cfg.ttl_days > 0 else float("inf")
    next_trim = time.monotonic() + native_memory.TRIM_INTERVAL_SECONDS
    warm = True
    held = False  # whether this sidecar maintained the store when last looked at, once the warm-up is done
    while not stop.is_set():
        try:
            if graph is not None and not warm:
                held = _follow_lease(database, graph, held)
            if time.monotonic() >= next_trim:
                native_memory.trim()
                next_trim = time.monotonic() + native_memory.TRIM_INTERVAL_SECONDS
            if time.monotonic() >= next_expiry and database.maintains():
                service.expire(cfg.ttl_days, background=True)
                next_expiry = (
                    time.monotonic() + cfg.cleanup_interval_hours * 3600
                    if cfg.cleanup_interval_hours > 0
                    else float("inf")
                )
            elif warm:
                warm = False
                t0 = time.monotonic()
                users = service.store.warm_cache()
                log.info("cache: %d users loaded in %.0f ms", users, (time.monotonic() - t0) * 1000)
                warm_redaction()  # the secrets' patterns, compiled here rather than in the first store
                native_memory.release_code_pages()
                if graph is not None:  # at once: a graph command sent meanwhile waits for the catch-up
                    held = _follow_lease(database, graph, held)
            elif service.store.compact_due():
                service.store.compact(exclusive=False)
                native_memory.trim()
            elif graph is not None and database.read_only_reason() is None and graph.consolidation_due():
                graph.consolidate_all(budget=CONSOLIDATE_BUDGET)  # 200 new episodes, or 5 min after the first
        except Exception:
            log.exception("background maintenance failed; will retry")
            if cfg.ttl_days > 0:  # expiry off stays off: expire(0) would delete every memory
                next_expiry = time.monotonic() + 60
        stop.wait(1.0)


def _follow_lease(database: Database, graph: GraphService, held: bool) -> bool:
    """Start the graph's catch-up if this sidecar has come to maintain the store (at start, once the
    cache's warm-up is done: their two whole-table scans at once set the start's peak; or when the lease
    passes here): it builds what was stored and not built. Returns whether it maintains the store."""
    holds = database.maintains()
    if holds and not held:
        graph.catch_up_in_background()
    elif not holds:
        graph.caught_up.set()  # the holder builds what is stored: graph commands need not wait for it
    return holds
