"""Acknowledged, not yet committed: rows that are in the write-ahead log and wait for their LanceDB
commit, the background flusher that commits them, and the replay of a log left by a crash.

A commit the flusher retries is looked into after ISOLATE_AFTER refusals in a row: the batch is committed in
halves until the rows LanceDB refuses are found, and those are set aside (as below) only when the rest of the
batch committed, which shows the store itself takes writes; a store that refuses everything (a full disk) keeps
every row logged and retried.

A replay never stops the start: rows LanceDB refuses (a vector of NaN, a row of the wrong shape: what a
sidecar before the checks on every write could log) are set aside in `<data dir>/quarantine/` as JSON
Lines an `import` reads (plain records: re-embedded, ids kept), the rest committed; `health` says so
(status `degraded`) and every start logs it on stderr while the folder holds such a file.

Locks: `flush_lock` (one commit at a time), then `lock` (the list of logged rows). The store's own
table lock, when held, is always taken before both.
"""

from __future__ import annotations

import base64
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ..storage import StoreError, all_finite, sql_in
from .wal import WalError, WriteAheadLog

log = logging.getLogger("sidecar.store")

# A logged row waits at most this long for its commit, and at most FLUSH_ROWS rows wait together:
# every commit is a LanceDB fragment that keyword search scans unindexed until the next compaction
# (measured at 10k rows: 4.1 ms per full-text query, 12.4 ms after 100 single-row commits), and
# compactions are counted in commits. A read that needs a user's logged rows commits them at once.
FLUSH_DELAY_SECONDS = 1.0
FLUSH_ROWS = 512

Batch = tuple[list[dict[str, Any]], np.ndarray]

QUARANTINE_DIR = "quarantine"  # beside wal/: logged rows a replay could not commit
ISOLATE_AFTER = 3  # refused background commits in a row before the flusher looks for the rows at fault
MAX_FAILED_COMMITS = 64  # commits a replay tries while it looks for the rows LanceDB refuses; then the rest wait there
_KEPT = ("id", "user_id", "content", "timestamp", "is_bot", "message_id", "channel_id", "reply_to", "username")


def row_problem(row: Any, vector: np.ndarray) -> str | None:
    """Why a logged row cannot be committed as it is (checked before trying), or None."""
    if not isinstance(row, dict):
        return "the logged row is not an object"
    for key in ("id", "user_id", "content"):
        if not isinstance(row.get(key), str):
            return f"the logged row has no string `{key}`"
    ts = row.get("timestamp")
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts):
        return "the logged row has no numeric `timestamp`"
    if not all_finite(vector):
        return "its vector has values that are not finite numbers (NaN or infinity)"
    return None


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
        self._refusals = 0  # background commits refused in a row
        self._flusher: threading.Thread | None = None
        self.quarantine = wal.dir.parent / QUARANTINE_DIR
        self.quarantined = _quarantined_rows(self.quarantine)  # rows set aside by this or an earlier start

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
            batch = [r for logged_rows, _ in items for r in logged_rows]
            vectors = np.concatenate([v for _, v in items])
            try:
                self._commit(batch, vectors)
            except BaseException as exc:
                if isinstance(exc, Exception) and self._isolated(batch, vectors):
                    self.wal.remove(sealed)
                    return
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
            self._refusals = 0
            with self.lock:
                self._committing = []
            self.wal.remove(sealed)

    def _isolated(self, rows: list[dict[str, Any]], vectors: np.ndarray) -> bool:
        """After ISOLATE_AFTER refusals in a row: commit the batch in halves; when some of it commits, set the rows
        LanceDB refused aside and say True (the batch is done). False: nothing committed, the batch is retried."""
        self._refusals += 1
        if self._refusals < ISOLATE_AFTER or len(rows) < 2:
            return False
        refused = self._commit_fitting(rows, vectors, [0])
        if len(refused) == len(rows):
            return False  # the store refuses every write: keep them logged
        if refused:
            self._set_aside(refused)
        self._refusals = 0
        with self.lock:
            self._committing = []
        return True

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
        """Commit the rows of log segments left by a process that did not close cleanly; rows LanceDB refuses
        are set aside in the quarantine folder (the start goes on)."""
        segments = self.wal.segments()
        if not segments:
            self._tell_quarantined()
            return
        rows: list[Any] = []
        vectors: list[np.ndarray] = []
        for path in segments:
            for r, v in self.wal.read(path):
                rows.extend(r)
                vectors.append(v)
        vec = np.concatenate(vectors) if vectors else np.empty((0, self.wal.dim), dtype=np.float32)
        refused: list[tuple[Any, np.ndarray, str]] = []
        fit: list[int] = []
        for i, r in enumerate(rows):
            problem = row_problem(r, vec[i])
            if problem is None:
                fit.append(i)
            else:
                refused.append((r, vec[i], problem))
        rows, vec = [rows[i] for i in fit], vec[fit]
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
        failed = self._commit_fitting([rows[i] for i in keep], vec[keep], [0]) if keep else []
        refused += failed
        if refused:
            self._set_aside(refused)
        log.warning(
            "write-ahead log: %d acknowledged memories recovered from %d segments (%d were already committed%s)",
            len(keep) - len(failed),
            len(segments),
            len(rows) - len(keep),
            f"; {len(refused)} could not be committed and were set aside" if refused else "",
        )
        self.wal.remove(segments)
        self._tell_quarantined()

    def _commit_fitting(
        self, rows: list[dict[str, Any]], vectors: np.ndarray, failed: list[int]
    ) -> list[tuple[Any, np.ndarray, str]]:
        """Commit the rows, halving a batch LanceDB refuses until the rows at fault are found (at most
        MAX_FAILED_COMMITS refusals, then the rest of the refused batch is set aside with them); returns them."""
        try:
            self._commit(rows, vectors)
            return []
        except Exception as exc:
            failed[0] += 1
            if len(rows) == 1 or failed[0] > MAX_FAILED_COMMITS:
                reason = f"LanceDB refused the commit: {exc}"
                return [(r, v, reason) for r, v in zip(rows, vectors)]
        half = len(rows) // 2
        return self._commit_fitting(rows[:half], vectors[:half], failed) + self._commit_fitting(
            rows[half:], vectors[half:], failed
        )

    def _set_aside(self, refused: list[tuple[Any, np.ndarray, str]]) -> None:
        """The refused rows as JSON Lines in a new file of the quarantine folder (0600, synced before the log
        segments that held them are removed): plain records an `import` reads, each with its `reason` and
        its logged `vector` (base64 of little-endian float32)."""
        self.quarantine.mkdir(mode=0o700, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        lines = []
        for row, vector, reason in refused:
            if isinstance(row, dict):
                out = {k: row[k] for k in _KEPT if k in row}
            else:
                out = {"row": row}
            out["reason"] = reason
            out["vector"] = base64.b64encode(np.ascontiguousarray(vector, dtype="<f4").tobytes()).decode("ascii")
            lines.append(orjson.dumps(out, option=orjson.OPT_SERIALIZE_NUMPY))
        for n in range(1000):
            path = self.quarantine / f"wal-{stamp}-{n}.jsonl"
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
                break
            except FileExistsError:
                continue
        else:
            raise StoreError(f"cannot name a new file in {self.quarantine}")
        with os.fdopen(fd, "wb") as f:
            f.write(b"\n".join(lines) + b"\n")
            f.flush()
            os.fsync(f.fileno())
        self.quarantined += len(refused)
        log.error(
            "write-ahead log: %d acknowledged memories could not be committed (%s) and were set aside in %s; "
            "import that file (copied out of the data dir) to store them again",
            len(refused),
            refused[0][2],
            path,
        )

    def _tell_quarantined(self) -> None:
        if self.quarantined:
            log.error(
                "%d memories wait in %s: the write-ahead log held them and LanceDB refused them; import its files "
                "(copied out of the data dir) to store them again, then remove them (health says degraded until then)",
                self.quarantined,
                self.quarantine,
            )

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


def _quarantined_rows(folder: Path) -> int:
    """Lines in the quarantine folder's files: memories set aside that wait for an import."""
    try:
        files = [p for p in folder.iterdir() if p.suffix == ".jsonl" and p.is_file()]
    except OSError:
        return 0
    n = 0
    for p in files:
        try:
            with open(p, "rb") as f:
                n += sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
        except OSError:
            continue
    return n


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
        self.quarantined = 0  # no log to replay: nothing is ever set aside
        self.quarantine: Path | None = None

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
