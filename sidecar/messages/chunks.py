"""Long memories: the `chunks` table (one vector per overlapping token window of a memory longer than the
model's window) and the durable list of memories waiting to be chunked.

A memory of at most 254 tokens has no chunks: its row's vector covers it, so short memories cost nothing
here. A longer one keeps its row (the first window's vector, keyword search over the whole text) and gets
one chunk per window of CHUNK_TOKENS tokens, CHUNK_OVERLAP shared with the next, each with its character
span. Chunks are derived data: they are embedded in the background (`chunker.py`) after the memory is
acknowledged, and the pending list (`chunks.pending`, handed to the operating system before the
acknowledgement, like the write-ahead log) says which memories still need them after a restart.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from ..storage import compact_table, cosine_search, sql_in, sql_str

log = logging.getLogger("sidecar.store")

CHUNKS = "chunks"
CHUNK_TOKENS = 200
CHUNK_OVERLAP = 50
# A text of at most this many characters cannot run past the window (a token covers at least one
# character; the window holds 254 besides [CLS] and [SEP]): such memories are never queued.
SHORT_CHARS = 254
PENDING_FILE = "chunks.pending"


def chunk_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("message_id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("is_bot", pa.bool_(), nullable=False),  # the memory's, for the same filters as the messages
            pa.field("timestamp", pa.float64(), nullable=False),
            pa.field("start", pa.int32(), nullable=False),  # the chunk's characters: content[start:end]
            pa.field("end", pa.int32(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
        ]
    )


class ChunkTable:
    """The chunks table. `users`: the users that have chunks (a cache load of anyone else reads none)."""

    def __init__(self, database: Any, dim: int, note_write: Callable[[], None]):
        self.dim = dim
        self._note_write = note_write  # each commit counts towards the compaction schedule (one fragment each)
        self.table = database.open_or_create(CHUNKS, chunk_schema(dim))
        indexed = {tuple(ix.columns) for ix in self.table.list_indices()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for column in ("user_id", "message_id"):  # a cache load reads one user's, a delete some memories'
                if (column,) not in indexed:
                    self.table.create_scalar_index(column, index_type="BTREE")
        self.write_lock = threading.Lock()  # an add is never cut by an exclusive compaction
        self._written = False
        col = self.table.search().select(["user_id"]).limit(None).to_arrow().column("user_id")
        self.users: set[str] = set(col.unique().to_pylist())

    def add(self, row: dict[str, Any], spans: list[tuple[int, int]], vectors: np.ndarray) -> None:
        n = len(spans)
        data = pa.table(
            {
                "message_id": [row["id"]] * n,
                "user_id": [row["user_id"]] * n,
                "is_bot": [bool(row["is_bot"])] * n,
                "timestamp": [float(row["timestamp"])] * n,
                "start": [s for s, _ in spans],
                "end": [e for _, e in spans],
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.astype(np.float32).reshape(-1)), self.dim),
            },
            schema=chunk_schema(self.dim),
        )
        with self.write_lock:
            self.table.add(data)
            self._written = True
        self.users.add(row["user_id"])
        self._note_write()

    def having(self, ids: list[str]) -> set[str]:
        """The ids among these that have chunks."""
        found: set[str] = set()
        for start in range(0, len(ids), 500):
            got = self.table.search().where(sql_in("message_id", ids[start : start + 500])).select(["message_id"])
            found.update(got.limit(None).to_arrow().column("message_id").to_pylist())
        return found

    def delete_ids(self, ids: list[str]) -> None:
        with self.write_lock:
            for start in range(0, len(ids), 500):
                self.table.delete(sql_in("message_id", ids[start : start + 500]))
                self._written = True

    def delete_all(self) -> None:
        with self.write_lock:
            self.table.delete("true")
            self._written = True
        self.users.clear()

    def of_users(self, user_ids: list[str]) -> dict[str, tuple[list[str], np.ndarray, np.ndarray]]:
        """user_id -> (message ids, (n, 2) int32 spans, (n, dim) float16 vectors) of their chunks."""
        wanted = [u for u in user_ids if u in self.users]
        if not wanted:
            return {}
        data = (
            self.table.search()
            .where(sql_in("user_id", wanted))
            .select(["user_id", "message_id", "start", "end", "vector"])
            .limit(None)
            .to_arrow()
        )
        vectors = (
            data.column("vector")
            .combine_chunks()
            .flatten()
            .to_numpy(zero_copy_only=False)
            .reshape(-1, self.dim)
            .astype(np.float16)
        )
        spans = np.stack([data.column("start").to_numpy(), data.column("end").to_numpy()], axis=1).astype(np.int32)
        users = data.column("user_id").to_pylist()
        ids = data.column("message_id").to_pylist()
        out: dict[str, tuple[list[str], np.ndarray, np.ndarray]] = {}
        for uid in set(users):
            idx = [i for i, u in enumerate(users) if u == uid]
            out[uid] = ([ids[i] for i in idx], spans[idx], vectors[idx])
        return out

    def search(self, vector: np.ndarray, where: str, limit: int) -> list[dict[str, Any]]:
        """The best chunks for a query among those matching `where` (the messages' filter columns)."""
        return cosine_search(self.table, vector, where, ["message_id", "start", "end"], limit)

    def count(self, user_id: str | None = None) -> int:
        """Chunks in all, or of one user."""
        if user_id is None:
            return self.table.count_rows()
        return self.table.count_rows(f"user_id = {sql_str(user_id)}") if user_id in self.users else 0

    def compact(self, exclusive: bool, keep: timedelta | None = None) -> None:
        """keep (an object store shared with other sidecars): versions younger than this stay, and files no
        version names yet are never deleted (another sidecar's commit may be in flight)."""
        if not self._written:
            return
        if exclusive and keep is None:
            with self.write_lock:
                compact_table(self.table, True)
        else:
            compact_table(self.table, False, keep)
        self._written = False


class PendingChunks:
    """The ids of memories waiting for their chunks, in order: an append-only file of JSON lines
    (["+", id] queued, ["-", id] done), emptied once nothing is pending and rewritten with only the
    pending ids at every start (a line cut by a crash must not swallow the next append) and when the done
    marks pile up. Like the write-ahead log, each append is handed to the operating system before the
    store is acknowledged (it survives the process being killed), without an fsync."""

    def __init__(self, data_dir: Path | None):
        """data_dir None (an object store, where no sidecar can replay another's local file): in memory
        only; the lease holder queues every long memory without chunks instead (`_queue_all_long`)."""
        self.path = data_dir / PENDING_FILE if data_dir is not None else None
        self.lock = threading.Lock()
        self.ids: OrderedDict[str, None] = OrderedDict()
        self._file: Any = None
        self._lines = 0
        if self.path is None:
            return
        if self.path.exists():
            for raw in self.path.read_bytes().splitlines():
                try:
                    op, rid = orjson.loads(raw)
                except (orjson.JSONDecodeError, ValueError, TypeError):
                    continue  # a line cut by a crash: its append was never acknowledged
                if op == "+":
                    self.ids[rid] = None
                else:
                    self.ids.pop(rid, None)
        self._file = open(self.path, "ab")
        self._lines = 0
        self._rewrite()

    def add(self, ids: list[str]) -> None:
        """In the operating system's hands when this returns (OSError otherwise)."""
        if not ids:
            return
        with self.lock:
            self._write(b"".join(orjson.dumps(["+", i]) + b"\n" for i in ids))
            for i in ids:
                self.ids[i] = None

    def done(self, ids: list[str]) -> None:
        """A done mark lost in a crash only makes the job run again (harmlessly)."""
        with self.lock:
            ids = [i for i in ids if i in self.ids]
            if not ids:
                return
            for i in ids:
                del self.ids[i]
            if not self.ids or self._lines + len(ids) > 4 * len(self.ids) + 1024:
                self._rewrite()  # nothing pending (the file is emptied), or the done marks piled up
            else:
                self._write(b"".join(orjson.dumps(["-", i]) + b"\n" for i in ids))

    def _write(self, data: bytes) -> None:
        if self._file is None:
            return
        self._file.write(data)
        self._file.flush()
        self._lines += data.count(b"\n")

    def _rewrite(self) -> None:
        """The file replaced by one holding only the pending ids (atomically: a crash leaves one or the other)."""
        if self.path is None:
            return
        tmp = self.path.with_suffix(".tmp")
        tmp.write_bytes(b"".join(orjson.dumps(["+", i]) + b"\n" for i in self.ids))
        os.replace(tmp, self.path)
        self._file.close()
        self._file = open(self.path, "ab")
        self._lines = len(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def close(self) -> None:
        with self.lock:
            if self._file is not None:
                self._file.close()
