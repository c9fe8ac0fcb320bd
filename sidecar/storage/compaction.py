"""When background compaction runs: by commits and by time, kept to a duty cycle. Counts commits to
every table of the data dir (messages, facts, graph), so one schedule serves them all."""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

# Background compaction takes at most this share of wall time by default (--compact-max-duty):
# after one that took d seconds, the next waits at least d * (1 / share - 1). LanceDB's `optimize`
# rewrites every index in full, so its cost grows with the table (measured with other work running:
# about 2 s per 100k rows with 20 small commits to fold in, 7-8 s at 400k), while the schedule (a
# minute, or 200 commits) does not. Extrapolated, a store of a million memories under steady writes
# would otherwise spend about a third of its time compacting.
COMPACT_MAX_DUTY = 0.1


def compaction_due(
    now: float,
    pending_writes: int,
    first_pending_at: float | None,
    every_writes: int,
    interval_seconds: float,
    not_before: float,
) -> bool:
    """Whether a background compaction should start: something was written, not before `not_before`
    (the duty-cycle pause after the last one), and either `every_writes` commits are waiting or the
    oldest waited `interval_seconds` (0: never by time)."""
    if not pending_writes or now < not_before:
        return False
    if pending_writes >= every_writes:
        return True
    return bool(interval_seconds and first_pending_at is not None and now - first_pending_at >= interval_seconds)


class CompactionSchedule:
    """Commits counted since the last compaction, and the duty-cycle pause after one. Thread-safe."""

    def __init__(self, every_writes: int = 200, interval_seconds: float = 60.0, max_duty: float = COMPACT_MAX_DUTY):
        self.every_writes = every_writes
        self.interval_seconds = interval_seconds
        self.max_duty = max_duty
        self._lock = threading.Lock()
        self._pending = 0  # commits since the last compaction
        self._first_pending_at: float | None = None
        self._not_before = 0.0  # monotonic: the duty-cycle pause after the last compaction

    def note_write(self, weight: int = 1) -> None:
        """Count one commit (to any table) towards the schedule, as `weight` commits (a commit of much text)."""
        with self._lock:
            self._pending += weight
            if self._first_pending_at is None:
                self._first_pending_at = time.monotonic()

    def due(self) -> bool:
        return compaction_due(
            time.monotonic(),
            self._pending,
            self._first_pending_at,
            self.every_writes,
            self.interval_seconds,
            self._not_before,
        )

    def pending(self) -> int:
        """The commits a compaction starting now folds in (pass to `done`)."""
        with self._lock:
            return self._pending

    def done(self, folded: int, took: float) -> float:
        """A compaction that folded in `folded` commits took `took` seconds; returns the pause before the next."""
        with self._lock:
            self._pending = max(0, self._pending - folded)
            self._first_pending_at = time.monotonic() if self._pending else None
            pause = took * (1 / self.max_duty - 1)
            self._not_before = time.monotonic() + pause
            return pause


READS_KEEP = timedelta(minutes=1)  # a concurrent compaction keeps younger versions: reads may be on them


def compact_table(table: Any, exclusive: bool, keep: timedelta | None = None) -> None:
    """Merge a table's fragments, fold new rows into its indexes and drop old versions. exclusive (the
    caller keeps every read and write out): every old version and unreferenced file goes at once. Else
    versions younger than READS_KEEP stay for the reads running meanwhile. keep (an object store shared
    with other sidecars): versions younger than this stay too, and files no version names yet (another
    sidecar's commit in flight) are never deleted."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exclusive and keep is None:
            table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
        else:
            table.optimize(cleanup_older_than=max(keep or timedelta(0), READS_KEEP))


def compact_tables(tables: Iterable[Any], what: str, keep: timedelta | None = None, exclusive: bool = True) -> None:
    """`compact_table` for each of several small tables, logged as one (the caller holds the lock that keeps
    out whatever `exclusive` says must stay out)."""
    t0 = time.perf_counter()
    for table in tables:
        compact_table(table, exclusive, keep)
    logging.getLogger("sidecar.storage").info(
        "compacted %s%s in %.0f ms", what, "" if exclusive else " (concurrent)", (time.perf_counter() - t0) * 1000
    )
