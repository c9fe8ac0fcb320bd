"""Table reads that run outside a store's lock, and the one operation that must not overlap them.

A background read (the graph reading the rows of a trace, catching up on missed messages) can take
tens to hundreds of milliseconds on a big table. Held under the store's lock, every store and query
waits for it: under a soak that was most of the request thread's idle time. LanceDB reads a version
while writers commit new ones, so a read needs the lock only while logged rows are committed and the
table is picked. What a read cannot survive is its files being deleted under it, and only an
exclusive compaction does that (every old version's files go at once); it takes the lock, so no read
starts, then waits here for the reads already running to end. Background compactions keep versions
younger than a minute and need not wait, so this suits reads that take seconds at most; a read that may
outlast that minute (an export) takes `MessageStore.snapshot()` instead, which holds every compaction off."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any


class TableReads:
    """Counts the reads running outside the lock. Thread-safe."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0

    @contextmanager
    def outside(self, locked: AbstractContextManager[Any], table: Callable[[], Any]) -> Iterator[Any]:
        """Enter `locked` (the store's lock with logged rows committed), pick `table()` and count the read,
        leave `locked`, then yield the table for the read itself."""
        with locked:
            picked = table()
            with self._cond:
                self._running += 1
        try:
            yield picked
        finally:
            with self._cond:
                self._running -= 1
                if not self._running:
                    self._cond.notify_all()

    def wait_idle(self) -> None:
        """Return once no read runs. The caller holds the store's lock, so none starts meanwhile."""
        with self._cond:
            self._cond.wait_for(lambda: not self._running)

    @property
    def running(self) -> int:
        with self._cond:
            return self._running
