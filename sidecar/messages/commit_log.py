"""Acknowledged, not yet committed: rows that are in the write-ahead log and wait for their LanceDB
commit, the background flusher that commits them, and the replay of a log left by a crash.

Locks: `flush_lock` (one commit at a time), then `lock` (the list of logged rows). The store's own
table lock, when held, is always taken before both.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..storage import StoreError, sql_in
from .wal import WalError, WriteAheadLog

log = logging.getLogger("sidecar.store")

# A logged row waits at most this long for its commit, and at most FLUSH_ROWS rows wait together:
# every commit is a LanceDB fragment that keyword search scans unindexed until the next compaction
# (measured at 10k rows: 4.1 ms per full-text query, 12.4 ms after 100 single-row commits), and
# compactions are counted in commits. A read that needs a user's logged rows commits them at once.
FLUSH_DELAY_SECONDS = 1.0
FLUSH_ROWS = 512

Batch = tuple[list[dict[str, Any]], np.ndarray]


class CommitLog:
    def __init__(self, wal: WriteAheadLog, commit: Callable[[list[dict[str, Any]], np.ndarray], None]):
        self.wal = wal
        self._commit = commit  # one LanceDB commit of rows and their vectors
        self.flush_lock = threading.RLock()
        self.lock = threading.Lock()
        self._cond = threading.Condition(self.lock)
        self._uncommitted: list[Batch] = []  # logged, not yet in LanceDB
        self._committing: list[Batch] = []  # taken by the commit in progress
        self._since = 0.0  # when the oldest logged row was logged
        self._closing = False
        self._flusher: threading.Thread | None = None

    def start(self) -> None:
        self._flusher = threading.Thread(target=self._flush_loop, name="wal-flusher", daemon=True)
        self._flusher.start()

    def append(self, rows: list[dict[str, Any]], vectors: np.ndarray) -> None:
        """Log the rows (one write call); they are durable when this returns. StoreError otherwise."""
        with self.lock:
            try:
                self.wal.append(rows, vectors)
            except WalError as exc:
                raise StoreError(str(exc)) from None
            if not self._uncommitted:
                self._since = time.monotonic()
            self._uncommitted.append((rows, vectors))
            self._cond.notify()

    def flush(self) -> None:
        """Commit every logged row to LanceDB, then drop the log segments that held them."""
        with self.flush_lock:
            with self.lock:
                if not self._uncommitted:
                    return
                items, self._uncommitted = self._uncommitted, []
                self._committing = items
                sealed = self.wal.seal()
            try:
                self._commit([r for rows, _ in items for r in rows], np.concatenate([v for _, v in items]))
            except BaseException as exc:
                with self.lock:  # still logged and still visible: retried later
                    if not self._uncommitted:
                        self._since = time.monotonic()
                    self._uncommitted[:0] = items
                    self._committing = []
                    self.wal.unseal(sealed)
                if not isinstance(exc, Exception):
                    raise
                raise StoreError(
                    f"cannot commit {sum(len(r) for r, _ in items)} logged memories to LanceDB "
                    f"({exc}); they stay in the write-ahead log"
                ) from exc
            with self.lock:
                self._committing = []
            self.wal.remove(sealed)

    def logged(self, user_id: str) -> bool:
        """Whether the user has rows not yet readable from the table."""
        with self.lock:
            return any(r["user_id"] == user_id for rows, _ in (*self._uncommitted, *self._committing) for r in rows)

    @contextmanager
    def frozen(self) -> Iterator[list[Batch]]:
        """No commit starts or ends meanwhile: the table plus the yielded batches are every row."""
        with self.flush_lock, self.lock:
            yield self._uncommitted

    def _flush_loop(self) -> None:
        backoff = 0.0
        while self._wait_for_rows(backoff):
            try:
                self.flush()
                backoff = 0.0
            except Exception:
                log.exception("background commit failed; retrying")
                backoff = min(30.0, max(1.0, backoff * 2))
                with self.lock:
                    self._since = time.monotonic()

    def _wait_for_rows(self, backoff: float) -> bool:
        """Until logged rows are due for a commit (True) or the log closes (False)."""
        with self.lock:
            while not self._closing:
                if not self._uncommitted:
                    self._cond.wait()
                    continue
                if sum(len(rows) for rows, _ in self._uncommitted) >= FLUSH_ROWS and not backoff:
                    return True
                wait = self._since + max(FLUSH_DELAY_SECONDS, backoff) - time.monotonic()
                if wait <= 0:
                    return True
                self._cond.wait(wait)  # woken by new rows and by close()
            return False

    def replay(self, table: Any) -> None:
        """Commit the rows of log segments left by a process that did not close cleanly."""
        segments = self.wal.segments()
        if not segments:
            return
        rows: list[dict[str, Any]] = []
        vectors: list[np.ndarray] = []
        for path in segments:
            for r, v in self.wal.read(path):
                rows.extend(r)
                vectors.append(v)
        have: set[str] = set()
        ids = [r["id"] for r in rows]
        for start in range(0, len(ids), 500):  # committed before the crash, log not yet dropped
            have.update(
                table.search()
                .where(sql_in("id", ids[start : start + 500]))
                .select(["id"])
                .limit(None)
                .to_arrow()
                .column("id")
                .to_pylist()
            )
        keep = [i for i, r in enumerate(rows) if r["id"] not in have]
        if keep:
            self._commit([rows[i] for i in keep], np.concatenate(vectors)[keep])
        log.warning(
            "write-ahead log: %d acknowledged memories recovered from %d segments (%d were already committed)",
            len(keep),
            len(segments),
            len(rows) - len(keep),
        )
        self.wal.remove(segments)

    def close(self) -> None:
        """Stop the flusher, commit what is logged (replayed at the next start if that fails), close the log."""
        with self.lock:
            self._closing = True
            self._cond.notify_all()
        if self._flusher is not None:
            self._flusher.join()
        try:
            self.flush()
        except StoreError as exc:
            log.error("%s; they are committed at the next start", exc)
        self.wal.close()


class DirectCommit:
    """Object-store mode: a `store` is committed to LanceDB before it is acknowledged.

    A local write-ahead log would not do: the log of a machine that is killed cannot be replayed by
    the sidecar that survives it on another machine. So every acknowledged memory is in the table
    (in the bucket) when the answer goes out; consecutive stores queued together still share one
    commit (the server's group commit). The cost is the commit's round trips on every store
    (docs/performance.md, Object store). Same interface as CommitLog, with nothing ever pending.
    `guard` says why this sidecar may not write now (a store without conditional writes, and
    another sidecar holds the lease), or None."""

    def __init__(self, commit: Callable[[list[dict[str, Any]], np.ndarray], None], guard: Callable[[], str | None]):
        self._commit = commit
        self._guard = guard
        self.flush_lock = threading.RLock()

    def start(self) -> None:
        pass

    def append(self, rows: list[dict[str, Any]], vectors: np.ndarray) -> None:
        reason = self._guard()
        if reason is not None:
            raise StoreError(reason)
        with self.flush_lock:
            try:
                self._commit(rows, vectors)
            except Exception as exc:
                raise StoreError(
                    f"cannot commit {len(rows)} memories to the object store ({exc}); nothing was stored"
                ) from exc

    def flush(self) -> None:
        pass

    def logged(self, user_id: str) -> bool:
        return False

    @contextmanager
    def frozen(self) -> Iterator[list[Batch]]:
        with self.flush_lock:
            yield []

    def replay(self, table: Any) -> None:
        pass

    def close(self) -> None:
        pass
