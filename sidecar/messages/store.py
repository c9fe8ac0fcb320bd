"""The messages table: writes through the write-ahead log, reads for search and context windows,
deletes, and compaction (of this table and of the tables other domains register).

Knows nothing of JSON or of the protocol. Writes are acknowledged once they are in the write-ahead log
(`wal.py`) and the in-memory vector cache, and committed to LanceDB by a background flusher; every read of
the table first commits what the log holds, so nothing acknowledged is ever missing from an answer.

Locks, always taken in this order: `lock` (table reads, deletes, exclusive compaction, and the
vector cache; the graph's reads by id hold it only to start, storage/reads.py), then the commit
log's (`commit_log.py`) and the compaction schedule's. The flusher never takes `lock`, so a `store`
never waits for a commit in progress.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..storage import (
    COMPACT_MAX_DUTY,
    CompactionSchedule,
    Database,
    SharedStore,
    StoreError,
    TableReads,
    all_finite,
    compact_table,
    sql_in,
    sql_num,
    sql_str,
)
from . import search
from .commit_log import CommitLog, DirectCommit
from .freshness import Freshness
from .long_memories import LongMemories
from .quantized import quantize, widen
from .reembed import Reembedding
from .schema import CONTEXT_MESSAGES, MESSAGES, RESULT_COLUMNS, Context, link_rows, migrate_2_to_3, to_arrow
from .tables import complete_new, ensure_indexes
from .tombstones import Tombstones
from .vector_cache import VectorCache
from .wal import WriteAheadLog

log = logging.getLogger("sidecar.store")

WAL_DIR = "wal"
SPILL_DIR = "spill"  # the vector cache's users evicted to disk (spill.py)
LAST_KEYS = 4096  # (user, channel) pairs whose newest message is remembered for search_text
DELETE_SLICE = 500  # rows a background delete (expiry) removes per hold of the lock
HEAR_SECONDS = 10.0  # object store: how often an idle lease holder looks for other sidecars' writes to compact


class MessageStore(LongMemories, Reembedding):
    def __init__(
        self,
        data_dir: Path | SharedStore,
        model: dict[str, Any],
        compact_every_writes: int = 200,
        compact_interval_seconds: float = 60.0,
        reembed: Callable[[list[str]], np.ndarray] | None = None,
        cache_bytes: int = 16 << 20,
        compact_max_duty: float = COMPACT_MAX_DUTY,
        spill_bytes: int = 0,
        allow_reembed: bool = False,
        model_scripts: frozenset[str] | None = None,
    ):
        self.data_dir = data_dir
        self.model_scripts = model_scripts  # the scripts the model reads (None: every one): hybrid fusion
        self.dim = int(model["dim"])
        self.schedule = CompactionSchedule(compact_every_writes, compact_interval_seconds, compact_max_duty)
        self.lock = threading.RLock()
        # other domains' tables in the same data dir, compacted with this one
        self.also_compact: list[Callable[[bool, timedelta | None], None]] = []  # f(exclusive, keep_versions)
        self.also_close: list[Callable[[], None]] = []  # under `lock`, before the database closes (their reads end)
        self._maintenance = threading.Lock()  # one compaction at a time; deletes never overlap one
        self._reads = TableReads()  # reads running outside `lock`: an exclusive compaction waits for them
        self._last: OrderedDict[tuple[str, str | None], Context] = OrderedDict()  # (user, channel) -> newest
        self.on_stale: list[Callable[[], None]] = []  # told when other sidecars changed the table (object store)
        self._heard = 0.0  # the last background version check (object store, lease holder)

        self.database = db = Database(data_dir, model, allow_reembed=reembed is not None or allow_reembed)
        self.fresh = Freshness(lambda: self.table.version, db.refresh_seconds, self._stale)
        try:
            self._begin_move(allow_reembed)
            self.pending = (
                CommitLog(WriteAheadLog(db.local / WAL_DIR, self.dim), self._commit)
                if db.shared is None
                else DirectCommit(self._commit, db.read_only_reason)
            )
            self.cache = VectorCache(
                self.dim, cache_bytes, db.local / SPILL_DIR if db.shared is None else None, spill_bytes
            )  # evicted users spill to a local dir's disk
            self._open_chunks()
            self.tombstones = Tombstones(db, self.schedule.note_write)
            self.also_compact.append(self.tombstones.compact)
            self.tombstones = Tombstones(db, self.schedule.note_write)
            self.also_compact.append(self.tombstones.compact)
            self._open(reembed)
        except OSError as exc:
            self.database.close()
            raise StoreError(f"cannot open data dir {data_dir}: {exc.strerror or exc}") from None
        except BaseException:
            self.database.close()
            raise
        self.pending.start()

    # ------------------------------------------------------------------ opening

    def _open(self, reembed: Callable[[list[str]], np.ndarray] | None) -> None:
        db = self.database
        if db.is_new:
            self.table = complete_new(db.db, self.dim, self.data_dir)
            db.commit_meta()
        else:
            self.table = db.db.open_table(MESSAGES)
            db.migrate({2: self._migrate_2_to_3, 4: self._migrate_4_to_5})
            self._replay_and_move(reembed)
        ensure_indexes(self.table)

    def _migrate_2_to_3(self) -> None:
        self.table = migrate_2_to_3(self.database.db, self.table, self.dim)

    # ------------------------------------------------------------------ writes

    def add(self, rows: list[dict[str, Any]], vectors: np.ndarray, long: list[bool] | None = None) -> None:
        """Link the rows for keyword search, log them (one write call) and make them visible to queries; the
        flusher commits them to LanceDB. Returns once durable, else raises StoreError (nothing stored). Rows that
        may run past the model's window (`long`; by length when None) are chunked later (long_memories.py)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.shape != (len(rows), self.dim) or not all_finite(vectors):  # LanceDB would refuse the commit
            raise StoreError(
                f"{len(rows)} memories have vectors LanceDB cannot store (shape {vectors.shape}, or values that "
                "are not finite numbers); nothing was stored"
            )
        with self.lock:
            self.fresh.check()
            linked = [dict(r) for r in rows]
            keys = [(r["user_id"], r.get("channel_id")) for r in linked]
            imported = {k for r, k in zip(linked, keys) if r.get("search_text") is not None}
            newest = self._newest([k for k in dict.fromkeys(keys) if k not in self._last or k in imported])
            for r, key in zip(linked, keys):
                if r.get("search_text") is not None:  # an imported row keeps its own links
                    self._last.pop(key, None)  # and the next store of its channel reads the newest again
                    continue
                if key not in self._last:
                    self._last[key] = newest[key]
                r["_prev"] = self._last[key]
            link_rows(linked)
            self._queue_long(rows, long)
            self.pending.append(linked, vectors)
            self.cache.append(linked, vectors)
            for r in linked:
                key = (r["user_id"], r.get("channel_id"))
                if key in self._last:
                    self._last[key] = [*self._last[key], (r["id"], r["content"])][-CONTEXT_MESSAGES:]
                    self._last.move_to_end(key)
            while len(self._last) > LAST_KEYS:
                self._last.popitem(last=False)

    def _commit(self, rows: list[dict[str, Any]], vectors: np.ndarray) -> None:
        """One LanceDB commit for all (linked) rows."""
        self.fresh.own(self.table.add(to_arrow(rows, vectors, self.dim)).version)
        self.schedule.note_write()

    def _stale(self, foreign: bool = True) -> None:
        """Another sidecar changed the table (object store): drop what memory holds of it."""
        self.cache.clear()
        self._last.clear()
        if foreign:
            self.schedule.note_write()  # the lease holder compacts what the others wrote
        for hook in self.on_stale:
            hook()

    def flush(self) -> None:
        """Commit every logged row to LanceDB. Called by the flusher after each write, and by every
        table read before it reads."""
        self.pending.flush()

    @contextmanager
    def _reading(self, user_id: str | None = None) -> Iterator[None]:
        """Hold the table lock with every logged row committed: the way every table read starts.
        A read of one user's rows only (user_id) commits only when that user has logged rows: it
        neither waits for nor makes a commit of other users' rows (new rows need `lock`, held here)."""
        with self.lock:
            self.fresh.check()
            if user_id is None or self.pending.logged(user_id):
                self.flush()
            yield

    @contextmanager
    def snapshot(self) -> Iterator[Any]:
        """The table with every acknowledged row committed, and no compaction or delete until the block ends
        (a long read, an export, sees files that stay); stores and queries keep flowing."""
        with self._maintenance:
            with self._reading():
                table = self.table
            yield table

    def chunks_of(self, user_id: str) -> int:
        """How many chunk vectors the user's long memories have."""
        return self.chunks.count(user_id)

    def existing_ids(self, ids: list[str]) -> set[str]:
        with self._reading():
            found = self.table.search().where(sql_in("id", ids)).select(["id"]).limit(None).to_arrow()
        return set(found.column("id").to_pylist())

    def _newest(self, keys: list[tuple[str, str | None]]) -> dict[tuple[str, str | None], Context]:
        """(user, channel) -> [(id, content)] of the newest stored messages there, oldest first."""
        out, rest = {}, []  # rest: read from the table, all keys at once
        for user_id, channel_id in keys:
            entry = self.cache.get(user_id)
            if entry is not None:  # the cache holds the user's rows: no table read
                out[(user_id, channel_id)] = entry.newest(channel_id, CONTEXT_MESSAGES)
            else:
                rest.append((user_id, channel_id))
        if rest:
            if any(self.pending.logged(user_id) for user_id, _ in rest):
                self.flush()
            out.update(search.newest_by_key(self.table, rest, CONTEXT_MESSAGES))
        return out

    def delete(self, where: str, exclusive: bool = True, on_gone: Callable[[list[str]], None] | None = None) -> int:
        """Delete matching rows; returns how many. exclusive: in one hold of the lock, then compacted off the
        disk (requests wait); else (background expiry) DELETE_SLICE rows per hold of the lock, so requests
        run between slices: rows are gone from every answer as their slice goes, and from the disk at the
        next background compactions. on_gone: told each slice's deleted ids, outside the lock."""
        n = 0
        with self._maintenance:
            with self._reading():
                found = self.table.search().where(where).select(["id", "user_id"]).limit(None).to_arrow()
            # a user's rows together: each slice touches few users (the graph and facts update per user)
            pairs = sorted(zip(found.column("user_id").to_pylist(), found.column("id").to_pylist()))
            step = max(len(pairs), 1) if exclusive else DELETE_SLICE
            for start in range(0, len(pairs), step):
                users, part = zip(*pairs[start : start + step])
                if not exclusive:  # the user_id index narrows the scan to the slice's users
                    where_part = f"({where}) AND {sql_in('user_id', sorted(set(users)))} AND {sql_in('id', part)}"
                with self._reading():
                    gone = self._delete_rows(where if exclusive else where_part)
                n += len(gone)
                if gone and on_gone is not None:
                    on_gone(gone)
        if n:
            if exclusive:
                self.compact()
            else:
                self.schedule.note_write()
        return n

    def _delete_rows(self, where: str) -> list[str]:
        """Delete matching rows and what memory holds of their users; the ids deleted. Caller is `_reading()`."""
        found = self.table.search().where(where).select(["id", "user_id"]).limit(None).to_arrow()
        gone = found.column("id").to_pylist()
        if not gone or not self.table.delete(where).num_deleted_rows:
            return []
        self._drop_chunks(gone)
        users = set(found.column("user_id").to_pylist())
        for user_id in users:  # other users' entries hold none of these rows: they stay cached
            self.cache.drop(user_id)
        for key in [k for k in self._last if k[0] in users]:
            del self._last[key]
        # rows that borrowed a deleted row's text for keyword search get their own text back,
        # so no deleted content survives in another row (they are the same users' rows)
        for start in range(0, len(gone), 500):
            ids = ", ".join(sql_str(i) for i in gone[start : start + 500])
            self.table.update(
                where=f"{sql_in('user_id', sorted(users))} AND (prev_id IN ({ids}) OR prev2_id IN ({ids}))",
                values_sql={"search_text": "content", "prev_id": "NULL", "prev2_id": "NULL"},
            )
        self.fresh.reset()
        return gone

    # ------------------------------------------------------------------ reads

    def search(
        self,
        vector: np.ndarray | Callable[[], np.ndarray],
        user_id: str,
        limit: int,
        include_bot: bool = True,
        since: float | None = None,
        until: float | None = None,
        text: str | None = None,
        mode: str = "semantic",
    ) -> list[dict[str, Any]]:
        """One user's best memories for a query, best first, each with its cosine `similarity`. semantic:
        nearest vectors; keyword: BM25 over the message text; hybrid: both, plus BM25 over search_text (the
        previous two messages of the user in the channel, then this one), fused by weighted reciprocal rank,
        rows by a speaker the query names ranked up. Every list comes from the user's cache entry (BM25 in
        process: keywords.py); with `--cache-mb 0`, semantic search runs on LanceDB and the others over the
        user's rows read for that search. `vector` may be a function computing it."""
        vector = vector() if callable(vector) else vector
        if mode == "semantic":
            return self._semantic(vector, user_id, limit, include_bot, since, until)
        if text is None:
            raise ValueError(f"{mode} search needs the query text")
        with self._user_entry(user_id) as entry:
            if entry is None:  # cache off: the user's rows and chunks, read for this search alone
                entry = search.user_rows(self.table, user_id, self.dim, self.chunks.of_users([user_id]).get(user_id))
            counted = partial(self.cache.keyword_ids, user_id, entry)
            flt = (include_bot, since, until)
            return search.rank_rows(entry, text, vector, mode, limit, flt, counted, self.model_scripts)[0]

    @contextmanager
    def _user_entry(self, user_id: str) -> Iterator[Any]:
        """`lock` held, and the user's cache entry: at once when cached (it has every acknowledged row, so
        no commit is needed), else loaded after the user's logged rows are committed; None with the cache
        off (then the table has every row of the user)."""
        with self.lock:
            self.fresh.check()
            entry = self.cache.get(user_id) if self.cache.enabled else None
            if entry is not None:
                yield entry
                return
        with self._reading(user_id):
            yield self._entry(user_id)

    def _entry(self, user_id: str) -> Any:
        """The user's cache entry (loaded on a miss), or None when the cache is off. Caller is `_reading()`."""
        if not self.cache.enabled:
            return None
        entry = self.cache.get(user_id)
        if entry is None:
            rows, vectors = search.cache_rows(self.table, f"user_id = {sql_str(user_id)}", self.dim)
            entry = self.cache.put(user_id, rows, vectors, self.chunks.of_users([user_id]).get(user_id))
        return entry

    def _semantic(
        self, vector: np.ndarray, user_id: str, limit: int, include_bot: bool, since: float | None, until: float | None
    ) -> list[dict[str, Any]]:
        with self._user_entry(user_id) as entry:
            if entry is not None:
                return entry.search(vector, limit, include_bot, since, until)
            return self._semantic_uncached(vector, search.where(user_id, include_bot, since, until), limit)

    def embedded(self, ids: list[str], user_id: str | None = None) -> tuple[list[dict[str, Any]], np.ndarray]:
        """The rows of these ids that exist (in that order) and their float32 vectors; with user_id (whose ids
        they all are), from the vector cache when it holds them, at its precision (quantized.py) either way."""
        if user_id is not None:
            with self.lock:
                self.fresh.check()
                if (got := self.cache.embedded(user_id, ids)) is not None:
                    return got
        with self._unlocked_read() as table:
            rows, vectors = search.rows_with_vectors(table, ids, self.dim)
        return rows, vectors if user_id is None else widen(*quantize(vectors))

    def embedded_by_user(self, ids: dict[str, list[str]]) -> dict[str, tuple[list[dict[str, Any]], np.ndarray]]:
        """`embedded(ids, user_id)` for several users (user -> their ids): the users the vector cache does not
        hold read together, 500 ids a read (one read per user: 600 reads, 3.6 s, of a cleanup over 1,000
        users); each user gets only their own rows."""
        out: dict[str, tuple[list[dict[str, Any]], np.ndarray]] = {}
        with self.lock:
            self.fresh.check()
            for user_id, user_ids in ids.items():
                if (got := self.cache.embedded(user_id, user_ids)) is not None:
                    out[user_id] = got
        rest = {u: i for u, i in ids.items() if u not in out}
        if rest:
            with self._unlocked_read() as table:
                rows, vectors = search.rows_with_vectors(
                    table, [i for user_ids in rest.values() for i in user_ids], self.dim
                )
            vectors = widen(*quantize(vectors))
            at: dict[str, list[int]] = {u: [] for u in rest}
            for k, r in enumerate(rows):
                if r["user_id"] in at:
                    at[r["user_id"]].append(k)
            for user_id, idx in at.items():
                out[user_id] = ([rows[k] for k in idx], vectors[idx])
        return out

    def missing_by_users(self, done: Callable[[list[str]], pa.Array]) -> Iterator[tuple[pa.Array, int, int, int]]:
        """search.missing_by_users over this table, each group one read that stores and queries need not wait for."""
        return search.missing_by_users(self._unlocked_read, done)

    def _unlocked_read(self) -> Any:
        """The table, every logged row committed, for a read that stores and queries need not wait for."""
        return self._reads.outside(self._reading(), lambda: self.table)

    def cache_stats(self) -> dict[str, int]:
        with self.lock:
            return self.cache.stats()

    def warm_cache(self) -> int:
        """Load as many users as the cache budget holds (largest first). Returns the users loaded."""
        return search.warm_cache(self) if self.cache.enabled else 0

    def latest(self, where: str, limit: int, user_id: str | None = None) -> list[dict[str, Any]]:
        """Rows matching `where`, newest first by timestamp: the `limit` newest, plus every other row
        whose timestamp equals the oldest of those, so that the caller can break timestamp ties by its
        own rule and still get a deterministic window (LanceDB's order among equal timestamps depends
        on the fragment layout, which compaction changes). Two reads (search.newest_timestamps says
        why). user_id: `where` reads only that user's rows (see `_reading`)."""
        with self._reading(user_id):
            top = search.newest_timestamps(self.table, where, limit)
            if not top:
                return []
            rows = self.rows(f"({where}) AND timestamp >= {sql_num(min(top))}", user_id)
        rows.sort(key=lambda r: r["timestamp"], reverse=True)
        return rows

    def rows(self, where: str, user_id: str | None = None) -> list[dict[str, Any]]:
        """Every row matching `where`, in no particular order."""
        with self._reading(user_id):
            return self.table.search().where(where).select(RESULT_COLUMNS).limit(None).to_arrow().to_pylist()

    def count(self, where: str | None = None) -> int:
        if where is None:  # exact without a commit: logged rows are not in the table until committed
            with self.lock, self.pending.frozen() as logged:
                return self.table.count_rows() + sum(len(rows) for rows, _ in logged)
        with self._reading():
            return self.table.count_rows(where)

    def users(self) -> int:
        with self.lock, self.pending.frozen() as logged:  # exact without a commit, like count()
            col = self.table.search().select(["user_id"]).limit(None).to_arrow().column("user_id")
            users = {r["user_id"] for rows, _ in logged for r in rows}
        return len(users.union(col.unique().to_pylist()))

    def disk_bytes(self) -> int:
        return self.database.disk_bytes()

    # ------------------------------------------------------------------ maintenance

    def compact_due(self) -> bool:
        if self.fresh.enabled and self.database.maintains() and time.monotonic() - self._heard > HEAR_SECONDS:
            self._heard = time.monotonic()  # the lease holder hears of the other sidecars' writes here
            with self.lock:
                self.fresh.check()
        return not self._maintenance.locked() and self.schedule.due() and self.database.maintains()

    @property
    def keep_versions(self) -> timedelta | None:
        """Object store: versions younger than this stay (other sidecars may be reading them, and their
        commits in flight have files no version names yet); None: a local dir, nothing else reads it."""
        return None if self.fresh.interval is None else timedelta(seconds=max(60.0, 10 * self.fresh.interval))

    def compact(self, exclusive: bool = True) -> None:
        """Merge small fragments, fold new rows into the indexes and drop old versions. exclusive=True
        (deletes, cleanup, re-embed): requests wait, and every old version and unreferenced file goes at
        once, so deleted rows are gone from disk when this returns. exclusive=False (the background
        schedule): requests keep flowing (LanceDB commits appends and a compaction concurrently: 791
        single-row adds during six compactions, none lost, add p50 3 ms); versions younger than a minute
        are left for the next round, since a request may still be reading them."""
        if not self.database.maintains():  # object store: the lease holder compacts (it hears of these writes)
            return
        with self._maintenance:
            t0 = time.perf_counter()
            self.flush()
            pending = self.schedule.pending()
            if self.keep_versions is not None:  # never delete_unverified: another sidecar's commit in flight
                compact_table(self.table, False, self.keep_versions)
                with self.lock:
                    self._stale(foreign=False)  # a compaction's versions look like anyone's: reload
                    self.fresh.reset()
            elif exclusive:  # no commit may run meanwhile: holding `lock` stops new log entries
                with self.lock, self.pending.flush_lock:
                    self._reads.wait_idle()  # it deletes the files of every older version
                    self.flush()
                    compact_table(self.table, True)
            else:
                compact_table(self.table, False)
            for other in self.also_compact:  # the other domains' tables (each takes the locks it needs)
                other(exclusive, self.keep_versions)
            took = time.perf_counter() - t0
            pause = self.schedule.done(pending, took)
            log.info(
                "compacted %s in %.0f ms%s; the next background compaction in %.0f s at the earliest",
                MESSAGES,
                took * 1000,
                "" if exclusive else " (concurrent)",
                pause,
            )

    def close(self) -> None:
        """Commit what the log holds (it is replayed at the next start if that fails) and unlock."""
        if self.reembedder is not None:
            self.reembedder.stop()  # its state is in meta.json: the next start resumes it
        self._close_chunks()
        self.pending.close()
        with self.lock:
            for wait in (self._reads.wait_idle, *self.also_close):
                wait()
            self.cache.close()
            self.database.close()
