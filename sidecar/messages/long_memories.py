"""The message store's side of long memories (`chunks.py`, `chunker.py`): queueing memories that may run
past the model's window, the background chunker's reads and commits, the forward migration that queues
an old store's long memories, and semantic search over chunks when the vector cache is off.

A mixin of `MessageStore` (it uses the store's table, lock, cache and reads), kept apart so the store
module stays about messages.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from ..storage import cosine_search, sql_str
from . import search
from .chunker import Chunker, EmbedWindows, Windows
from .chunks import SHORT_CHARS, ChunkTable, PendingChunks
from .schema import RESULT_COLUMNS

log = logging.getLogger("sidecar.store")


class LongMemories:
    table: Any
    lock: Any
    cache: Any
    dim: int
    data_dir: Any
    database: Any
    also_compact: list[Callable[..., None]]
    schedule: Any

    def _open_chunks(self) -> None:
        self.chunks = ChunkTable(self.database, self.dim, self.schedule.note_write)
        self.pending_chunks = PendingChunks(self.data_dir if self.database.shared is None else None)
        self.chunker: Chunker | None = None
        self.also_compact.append(self.chunks.compact)

    def start_chunking(
        self,
        windows: Windows,
        embed: EmbedWindows,
    ) -> None:
        """Start the background chunker (the composition root hands it the embedder's functions); it
        resumes the memories left pending by the last run (on an object store, which keeps no pending file,
        the lease holder queues every long memory that has no chunks)."""
        if self.database.shared is not None and self.database.maintains():
            self._queue_all_long()
        self.chunker = Chunker(self.pending_chunks, windows, embed, self._chunk_source, self._chunked)
        self.chunker.start()

    def _queue_long(self, rows: list[dict[str, Any]], long: list[bool] | None) -> None:
        """Before the rows are acknowledged: the ones that may run past the window are recorded as pending
        (durably) and queued. long: per row, from the embedder (None: judged by length)."""
        flags = long if long is not None else [len(r["content"]) > SHORT_CHARS for r in rows]
        chosen = [r for r, f in zip(rows, flags) if f and len(r["content"]) > SHORT_CHARS]
        if not chosen:
            return
        if self.chunker is not None:
            self.chunker.queue(chosen)
        else:  # not started (yet): the chunker picks them up from the pending list
            self.pending_chunks.add([r["id"] for r in chosen])

    def _queue_all_long(self) -> None:
        """Every stored memory that may run past the window becomes pending (migration, re-embedding)."""
        data = (
            self.table.search()
            .where(f"character_length(content) > {SHORT_CHARS}")
            .select(["id"])
            .limit(None)
            .to_arrow()
        )
        ids = data.column("id").to_pylist()
        have = self.chunks.having(ids)
        self.pending_chunks.add([i for i in ids if i not in have])
        log.info(
            "%d long memories queued for chunked embedding", len(ids) - len(have)
        )  # routine: every object-store start

    def _migrate_4_to_5(self) -> None:
        """Version 5 adds the chunks table (created at open); the long memories already stored are chunked
        in the background."""
        self._queue_all_long()

    def _chunk_source(self, rid: str) -> dict[str, Any] | None:
        rows = self.rows(f"id = {sql_str(rid)}")  # type: ignore[attr-defined]
        return rows[0] if rows else None

    def _chunked(self, row: dict[str, Any], spans: list[tuple[int, int]], vectors: np.ndarray) -> bool:
        """The chunker's commit: written (outside the store lock), then kept only if the memory still
        exists; the cache of its user takes them. A delete racing it removes them either way."""
        self.chunks.add(row, spans, vectors)
        with self._reading(row["user_id"]):  # type: ignore[attr-defined]
            found = self.table.search().where(f"id = {sql_str(row['id'])}").select(["id"]).limit(1).to_arrow()
            if not found.num_rows:
                self.chunks.delete_ids([row["id"]])
                return False
            self.cache.add_chunks(row["user_id"], [row["id"]] * len(spans), np.asarray(spans), vectors)
        return True

    def _drop_chunks(self, ids: list[str]) -> None:
        """Deleted memories: their chunks go, and their pending jobs stop (the chunker skips, or stops
        embedding, a memory no longer pending). Caller holds the lock."""
        self.pending_chunks.done(ids)
        if self.chunks.users:
            self.chunks.delete_ids(ids)

    def _reset_chunks(self) -> None:
        """Re-embedding with another model: every chunk is embedded again."""
        self.chunks.delete_all()
        self._queue_all_long()

    def _semantic_uncached(self, vector: np.ndarray, where: str, limit: int) -> list[dict[str, Any]]:
        """Semantic search on the tables (vector cache off): rows by their vector, long memories by their
        best chunk (with its span)."""
        rows = cosine_search(self.table, vector, where, RESULT_COLUMNS, limit)
        if not self.chunks.users:
            return rows
        best: dict[str, dict[str, Any]] = {}
        for hit in self.chunks.search(vector, where, limit * 8):
            best.setdefault(hit["message_id"], hit)
        have = {r["id"] for r in rows}
        rows += search.rows_by_ids(self.table, [i for i in best if i not in have], vector, self.dim)
        for r in rows:
            found = best.get(r["id"])
            if found is not None:
                r["similarity"], r["span"] = found["similarity"], [found["start"], found["end"]]
        rows.sort(key=lambda r: -r["similarity"])
        return rows[:limit]

    def chunk_stats(self) -> dict[str, int]:
        return {"vectors": self.chunks.count(), "pending": len(self.pending_chunks)}

    def _close_chunks(self) -> None:
        if self.chunker is not None:
            self.chunker.stop()
        else:
            self.pending_chunks.close()
