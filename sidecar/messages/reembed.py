"""`--reembed` on a local data dir: moving every stored memory to the current model in the background.

At the opening (`convert`, no embedding, seconds): the data dir's meta.json names the new model and the
re-embedding (storage.Database.begin_reembed); the ids of the memories are written, sorted, to
`reembed.ids`; the messages table is rewritten with the new model's width and zero vectors, the chunks table
is made again (long memories are queued for the chunker), and the facts are re-embedded (few). Then
requests are served while `Reembedder` embeds the memories in the order of the ids file, a batch at a time,
stepping aside while requests are in hand; each batch is one LanceDB update and advances `done` in
meta.json, so a crash resumes at the batch it was in. Until a memory's turn comes, its vector is zero:
semantic search gives it similarity 0 and keyword search (the hybrid default's other half) finds it as
before. A memory stored meanwhile is embedded by the new model at once. When every memory is done, the
hooks run (the graph's trace vectors are made again from the new vectors) and meta.json drops the state.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ..storage import sql_in
from .chunks import CHUNKS
from .schema import MESSAGES, message_schema, reembedded

if TYPE_CHECKING:
    from ..storage import CompactionSchedule
    from .vector_cache import VectorCache

log = logging.getLogger("sidecar.store")

IDS_FILE = "reembed.ids"
BATCH = 512  # memories per LanceDB update (one update took 80-95 ms on 20k and 100k rows, whatever its size)
EMBED_BATCH = 64  # memories per embedding run; requests in hand are let through between runs
STEP_ASIDE_MAX = 0.25  # wait at most this long for requests in hand before a run
LOG_EVERY = 10.0  # seconds between progress lines on stderr


def write_ids(data_dir: Path, ids: list[str]) -> None:
    """The memories to re-embed, sorted, one per line (written whole, then renamed)."""
    path = data_dir / IDS_FILE
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(sorted(ids)))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_ids(data_dir: Path) -> list[str]:
    try:
        text = (data_dir / IDS_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [line for line in text.split("\n") if line]


def zero_vectors(table: Any, dim: int) -> pa.Table:
    """Every row of the messages table with a zero vector of width `dim` (the table's vectors are not read)."""
    schema = message_schema(dim)
    names = [f.name for f in schema if f.name != "vector"]
    data = table.search().select(names).limit(None).to_arrow()
    zeros = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(data.num_rows * dim, dtype=np.float32)), dim)
    return pa.table({f.name: (zeros if f.name == "vector" else data.column(f.name)) for f in schema}, schema=schema)


class Reembedder:
    """The background half: embeds the memories of the ids file from meta.json's `done` on."""

    def __init__(
        self,
        store: Any,
        embed: Callable[[list[str]], np.ndarray],
        busy: Callable[[], bool] | None = None,
        done_hooks: list[Callable[[], None]] | None = None,
    ):
        self.store = store
        self.embed = embed
        self.busy = busy
        self.done_hooks = done_hooks if done_hooks is not None else []
        self.ids = read_ids(store.data_dir)
        state = store.database.reembedding or {}
        self.done = min(int(state.get("done", 0)), len(self.ids))
        self.total = len(self.ids)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reembed", daemon=True)

    def start(self) -> None:
        log.warning(
            "re-embedding %d memories with %s in the background (%d done before); queries meanwhile find "
            "the ones not yet done by keyword",
            self.total,
            self.store.database.model.get("name"),
            self.done,
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def stats(self) -> dict[str, int]:
        return {"done": self.done, "total": self.total}

    def _embed_stepping(self, texts: list[str]) -> np.ndarray:
        """The texts' vectors, EMBED_BATCH at a time, each run after the requests in hand (up to STEP_ASIDE_MAX)."""
        parts = []
        for start in range(0, len(texts), EMBED_BATCH):
            aside_until = time.monotonic() + STEP_ASIDE_MAX
            while self.busy is not None and self.busy() and time.monotonic() < aside_until:
                time.sleep(0.005)
            parts.append(self.embed(texts[start : start + EMBED_BATCH]))
        return np.concatenate(parts) if parts else np.empty((0, self.store.dim), np.float32)

    def _run(self) -> None:
        try:
            last = time.monotonic()
            while self.done < self.total and not self._stop.is_set():
                batch = self.ids[self.done : self.done + BATCH]
                self.store.reembed_rows(batch, self._embed_stepping)
                self.done += len(batch)
                self.store.database.note_reembed(done=self.done)
                if time.monotonic() - last >= LOG_EVERY or self.done == self.total:
                    last = time.monotonic()
                    log.warning("re-embedded %d/%d memories", self.done, self.total)
            if self._stop.is_set():
                return
            for hook in self.done_hooks:
                hook()
            self.store.database.end_reembed()
            (self.store.data_dir / IDS_FILE).unlink(missing_ok=True)
            log.warning("re-embedding done: every memory is embedded by %s", self.store.database.model.get("name"))
        except Exception:
            log.exception("re-embedding stopped by an error; it resumes at the next start")


def rows_of(table: Any, ids: list[str], dim: int) -> pa.Table:
    """The rows of these ids, every column of the messages schema."""
    schema = message_schema(dim)
    return table.search().where(sql_in("id", ids)).select([f.name for f in schema]).limit(None).to_arrow()


def with_vectors(rows: pa.Table, vectors: np.ndarray, dim: int) -> pa.Table:
    flat = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1)
    rows = rows.set_column(
        rows.schema.get_field_index("vector"), "vector", pa.FixedSizeListArray.from_arrays(pa.array(flat), dim)
    )
    return rows.cast(message_schema(dim))


class Reembedding:
    """The message store's side of a model change (a mixin of `MessageStore`, as long_memories.py is)."""

    database: Any
    table: Any
    dim: int
    data_dir: Path
    lock: Any
    reembedder: Reembedder | None
    _convert_now: bool
    cache: VectorCache
    pending: Any  # CommitLog or DirectCommit (commit_log.py)
    schedule: CompactionSchedule

    if TYPE_CHECKING:  # MessageStore's and LongMemories', the classes this one is mixed with

        def _reading(self, user_id: str | None = None) -> AbstractContextManager[None]: ...
        def compact(self, exclusive: bool = True) -> None: ...
        def _reset_chunks(self) -> None: ...
        def _queue_all_long(self) -> None: ...

    def _begin_move(self, allow_reembed: bool) -> None:
        """Whether the opening converts the tables (`_convert`): a local data dir of another model, with
        --reembed, or one whose move was cut before its conversion ended. From here on it is the new model's."""
        db = self.database
        self.reembedder = None
        self._convert_now = db.shared is None and (
            (db.model_changed and allow_reembed)
            or (db.reembedding is not None and db.reembedding.get("phase") != "embed")
        )
        if self._convert_now:
            db.begin_reembed(0)  # a crash from here on resumes the move
            if CHUNKS in db.tables():
                db.db.drop_table(CHUNKS)  # made again at the new width (long memories are queued again)

    def _reembed(self, embed: Callable[[list[str]], np.ndarray]) -> None:
        self.table = reembedded(self.database.db, self.table, self.dim, embed)
        self._reset_chunks()
        self.cache.clear()
        self.compact()

    def _replay_and_move(self, reembed: Callable[[list[str]], np.ndarray] | None) -> None:
        """At the opening: commit the log, then convert for a background move, or (`reembed`: an object store)
        re-embed everything now; meta.json is updated once every domain has re-embedded."""
        self._replay()
        if self._convert_now:
            self._convert()
        elif self.database.model_changed and reembed is not None:
            self._reembed(reembed)

    def _replay(self) -> None:
        """Commit what the write-ahead log holds, at the width of the vectors in it: the old model's when the
        data dir is being moved to another one and its log was written before."""
        width = self.table.schema.field("vector").type.list_size
        if width == self.dim:
            self.pending.replay(self.table)
            return
        wal = getattr(self.pending, "wal", None)
        if wal is None:
            return
        self.dim, wal.dim = width, width
        try:
            self.pending.replay(self.table)
        finally:
            self.dim, wal.dim = self.database.dim, self.database.dim

    def _convert(self) -> None:
        """The opening half of a background re-embedding (reembed.py): the ids to do, the messages table at the
        new width with zero vectors, long memories queued for their chunks."""
        data = zero_vectors(self.table, self.dim)
        write_ids(self.data_dir, data.column("id").to_pylist())
        log.warning(
            "re-embedding: %d memories converted to %d-d, to be embedded in the background", data.num_rows, self.dim
        )
        self.table = self.database.db.create_table(MESSAGES, data=data, schema=data.schema, mode="overwrite")
        self._queue_all_long()
        self.cache.clear()
        self.database.note_reembed(phase="embed", total=data.num_rows, done=0)

    def start_reembedding(
        self,
        embed: Callable[[list[str]], np.ndarray],
        busy: Callable[[], bool] | None = None,
        done_hooks: list[Callable[[], None]] | None = None,
    ) -> None:
        """Embed, in the background, the memories a model change left without a vector (reembed.py)."""
        if self.database.shared is None and self.database.reembedding is not None:
            self.reembedder = Reembedder(self, embed, busy, done_hooks)
            self.reembedder.start()

    def reembed_stats(self) -> dict[str, int] | None:
        """{"done", "total"} memories while a re-embedding runs, else None."""
        r = self.reembedder
        return r.stats() if r is not None and self.database.reembedding is not None else None

    def reembed_rows(self, ids: list[str], embed: Callable[[list[str]], np.ndarray]) -> None:
        """Embed these memories again (those still stored) and write their new vectors: read under the lock,
        embedded outside it, written as one update under it; their users' cache entries are reloaded."""
        with self._reading():
            rows = rows_of(self.table, ids, self.dim)
        if not rows.num_rows:
            return
        new = with_vectors(rows, embed(rows.column("content").to_pylist()), self.dim)
        with self.lock:
            self.table.merge_insert("id").when_matched_update_all().execute(new)
            self.schedule.note_write()
            for user_id in set(new.column("user_id").to_pylist()):
                self.cache.drop(user_id)

    def vectors_of(self, ids: list[str]) -> dict[str, np.ndarray]:
        """id -> stored vector, for the ids still stored."""
        out: dict[str, np.ndarray] = {}
        with self._reading():
            for start in range(0, len(ids), 500):
                part = (
                    self.table.search()
                    .where(sql_in("id", ids[start : start + 500]))
                    .select(["id", "vector"])
                    .limit(None)
                    .to_arrow()
                )
                flat = part.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
                out.update(zip(part.column("id").to_pylist(), flat.reshape(-1, self.dim)))
        return out
