"""Object-store mode: what this process holds in memory (the vector cache, the newest messages per
channel, the graphs) follows the messages table's version, so other sidecars' writes and deletes
reach it within the refresh interval.

LanceDB itself looks for a newer version at most every half interval (`read_consistency_interval`), and
`check` reads the table's version as often: an answer is never older than the interval. A version this
process did not make (its own commits advance it by one; any other step is another sidecar's, or a
compaction) drops the caches: they reload from the table, so a forgotten user is gone from every sidecar's
answers within the interval.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger("sidecar.store")


class Freshness:
    def __init__(self, version: Callable[[], int], interval: float | None, on_stale: Callable[[], None]):
        self._version = version  # reads the table's version (LanceDB refreshes it)
        self.interval = interval  # None: a local data dir, written by this process only
        self._on_stale = on_stale
        self._seen: int | None = None  # the version the caches reflect
        self._checked = 0.0

    @property
    def enabled(self) -> bool:
        return self.interval is not None

    def own(self, version: int) -> None:
        """This process committed `version` (the caller holds the store's lock)."""
        if not self.enabled:
            return
        if self._seen is not None and version != self._seen + 1:
            self._stale(version)
        self._seen = version

    def check(self, force: bool = False) -> bool:
        """Drop the caches when the table moved on without us; True when it did (the caller holds the lock)."""
        if self.interval is None or (not force and time.monotonic() - self._checked < self.interval / 2):
            return False
        self._checked = time.monotonic()
        version = self._version()
        if self._seen is None or version == self._seen:
            self._seen = version
            return False
        self._stale(version)
        return True

    def reset(self) -> None:
        """The caches were dropped by this process (a delete, a compaction): they reload from now."""
        if self.enabled:
            self._seen = self._version()

    def _stale(self, version: int) -> None:
        log.debug("table version %s -> %s not made here: caches dropped", self._seen, version)
        self._seen = version
        self._on_stale()
