"""A per-user, in-memory copy of the messages table, so a query needs no LanceDB round trip.

Search is exact (brute force over one user's vectors, which is what LanceDB does after its
user_id prefilter anyway); vectors are held as float16 (the scores move by about 1e-4), and the
whole cache is bounded by a byte budget with least-recently-used eviction. The store keeps it
consistent: rows are appended on every committed write, and any delete drops the cache. A long
memory's chunk vectors (`chunks.py`) are held beside the rows (`chunk_vectors.py`, as float32), and a row
that has chunks scores as its best chunk, with that chunk's character `span`. Pure data structure: it never
touches LanceDB itself.
"""

from __future__ import annotations

import heapq
import sys
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from .chunk_vectors import ChunkVectors
from .keywords import KeywordIndex
from .spill import Spill

# Bytes per row for the Python objects beside the vector and the content's characters: the row
# tuple (128), its id string (85), a timestamp float (24), the content string's header (49) and the
# id -> position dict entry (about 40), rounded up, and the positions of its two linked rows (8);
# user ids are interned, so one string per user. The keyword index, once built, counts its own.
ROW_OVERHEAD = 348
BLOCK_ROWS = 256  # vectors scored per matrix product (see blockwise_scores)
_buffers = threading.local()
META_FIELDS = ("id", "user_id", "content", "is_bot", "timestamp", "message_id", "channel_id", "reply_to",
               "username")
_USERNAME = META_FIELDS.index("username")


def blockwise_scores(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """vectors @ query in float32, BLOCK_ROWS rows at a time, each block widened from float16 into one
    float32 buffer kept per thread. A whole-matrix `astype` allocated a float32 copy per call, which
    (above the mmap threshold runtime/native_memory.py sets) was mapped and unmapped every time:
    measured in-process at 1,400 x 384, 1.78 ms against 0.84 ms through the buffer."""
    q = np.asarray(query, dtype=np.float32)
    out = np.empty(len(vectors), dtype=np.float32)
    buffers = getattr(_buffers, "block", None)
    if buffers is None or buffers[0].shape[1] != vectors.shape[1]:
        shape = (BLOCK_ROWS, vectors.shape[1])
        buffers = _buffers.block = (np.empty(shape, dtype=np.float32), np.empty(shape, dtype=np.uint32))
    block, scratch = buffers
    for i in range(0, len(vectors), BLOCK_ROWS):
        n = min(BLOCK_ROWS, len(vectors) - i)
        widen_half(vectors[i:i + n], block[:n], scratch[:n])
        np.matmul(block[:n], q, out=out[i:i + n])
    return out


_HALF_TO_SINGLE = np.float32(2.0 ** 112)  # float16's exponent bias (15) to float32's (127)


def widen_half(half: np.ndarray, out: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """float16 -> float32 into `out` (same shape; `scratch` a uint32 array of that shape), bit for bit
    what `astype(np.float32)` gives for every finite value, subnormals and zeros included: the magnitude's
    bits shifted into float32's place and rescaled by one multiply, then the sign. numpy's own cast does
    not use the CPU's conversion instructions here: measured in-process at 1,300 x 384, 595 us for the
    cast against 245 us for this (and 11 us for the float32 product after it)."""
    bits = half.view(np.uint16)
    word = out.view(np.uint32)
    np.bitwise_and(bits, 0x7FFF, out=word, dtype=np.uint32)
    np.left_shift(word, 13, out=word)
    np.multiply(out, _HALF_TO_SINGLE, out=out)
    np.bitwise_and(bits, 0x8000, out=scratch, dtype=np.uint32)
    np.left_shift(scratch, 16, out=scratch)
    np.bitwise_or(word, scratch, out=word)
    return out


class UserRows:
    """One user's rows: float16 vectors plus the columns a result needs, in insertion order.

    Appends land in small chunks that are joined on the next search, so memory is exactly the
    rows held (no capacity doubling)."""

    def __init__(self, dim: int):
        self.dim = dim
        self._vectors = [np.empty((0, dim), dtype=np.float16)]
        self._timestamps = [np.empty(0, dtype=np.float64)]
        self._is_bot = [np.empty(0, dtype=bool)]
        self.rows: list[tuple] = []
        self._pos: dict[str, int] = {}  # row id -> index (rows found by keyword search)
        self._links: list[np.ndarray] = []  # per row: the positions of the rows its search_text borrows from
        self.keywords: KeywordIndex | None = None  # built on the first keyword search
        self.nbytes = 0
        self._chunks = ChunkVectors(dim)  # chunks of long memories (chunk_vectors.py)
        self._chunked: set[str] = set()  # row ids whose chunks are held

    def __len__(self) -> int:
        return len(self.rows)

    def extend(self, rows: list[dict[str, Any]], vectors: np.ndarray) -> None:
        if not rows:
            return
        self._vectors.append(np.asarray(vectors, dtype=np.float16))
        self._timestamps.append(np.array([r["timestamp"] for r in rows], dtype=np.float64))
        self._is_bot.append(np.array([r["is_bot"] for r in rows], dtype=bool))
        start = len(self.rows)
        self.rows.extend(tuple(sys.intern(v) if f == "user_id" else v for f, v in ((f, r.get(f)) for f in META_FIELDS))
                         for r in rows)
        self._pos.update((self.rows[i][0], i) for i in range(start, len(self.rows)))
        links = np.array([[self._pos.get(r.get("prev_id"), -1), self._pos.get(r.get("prev2_id"), -1)] for r in rows],
                         np.int32)
        self._links.append(links)
        self.nbytes += len(rows) * (self.dim * 2 + 9 + ROW_OVERHEAD) + sum(len(r["content"]) for r in rows)
        if self.keywords is not None:
            self._index(start, links)

    def _index(self, start: int, links: np.ndarray) -> None:
        before = self.keywords.nbytes
        self.keywords.extend([r[2] for r in self.rows[start:]], links[:, 0].tolist(), links[:, 1].tolist())
        self.nbytes += self.keywords.nbytes - before

    def keyword_ids(self, text: str, fields: tuple[str, ...], limit: int, include_bot: bool = True,
                    since: float | None = None, until: float | None = None) -> list[list[str]]:
        """Per field ("content", "search_text"): the ids of the best `limit` rows by BM25, best first
        (messages/keywords.py), filtered before ranking. Builds the user's keyword index on first use."""
        if self.keywords is None:
            self.keywords = KeywordIndex()
            if self.rows:
                self._index(0, np.concatenate(self._links))
        mask = self._mask(include_bot, since, until)
        return [[self.rows[i][0] for i in self.keywords.search(text, f, mask, limit)] for f in fields]

    def _mask(self, include_bot: bool, since: float | None, until: float | None) -> np.ndarray | None:
        """The rows a filter keeps (None: all)."""
        if include_bot and since is None and until is None:
            return None
        _, timestamps, is_bot = self._joined()
        mask = np.ones(len(self.rows), dtype=bool)
        if not include_bot:
            mask &= ~is_bot
        if since is not None:
            mask &= timestamps >= since
        if until is not None:
            mask &= timestamps <= until
        return mask

    def add_chunks(self, message_ids: list[str], spans: np.ndarray, vectors: np.ndarray) -> None:
        """Chunks of held rows (others, and rows whose chunks are held already, are skipped)."""
        keep = [k for k, m in enumerate(message_ids) if m in self._pos and m not in self._chunked]
        if not keep:
            return
        before = self._chunks.nbytes
        self._chunks.add(np.array([self._pos[message_ids[k]] for k in keep], dtype=np.int64),
                         np.asarray(spans, dtype=np.int32).reshape(-1, 2)[keep], np.asarray(vectors)[keep])
        self._chunked.update(message_ids[k] for k in keep)
        self.nbytes += self._chunks.nbytes - before

    def _chunk_best(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Per row: its best chunk's score (-inf: no chunks) and that chunk's index (-1); None without chunks."""
        return self._chunks.best(query, len(self.rows)) if len(self._chunks) else None

    def _joined(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if len(self._vectors) > 1:
            self._vectors = [np.concatenate(self._vectors)]
            self._timestamps = [np.concatenate(self._timestamps)]
            self._is_bot = [np.concatenate(self._is_bot)]
        return self._vectors[0], self._timestamps[0], self._is_bot[0]

    def search(self, query: np.ndarray, limit: int, include_bot: bool = True, since: float | None = None,
               until: float | None = None) -> list[dict[str, Any]]:
        """The best `limit` rows for the query vector, best first, each with its cosine `similarity`."""
        return self.results(self.ranked(query, limit, include_bot, since, until), query)

    def ranked(self, query: np.ndarray, limit: int, include_bot: bool = True, since: float | None = None,
               until: float | None = None) -> list[tuple[int, float]]:
        """`search` as (position, similarity) pairs: no result rows built (a hybrid query fuses 100 of these
        and returns 5)."""
        if not self.rows:
            return []
        vectors, _, _ = self._joined()
        mask = self._mask(include_bot, since, until)
        if mask is None:  # no filter: no gathered copy of the vectors
            candidates = np.arange(len(self.rows))
            scores = blockwise_scores(vectors, query)
        else:
            candidates = np.flatnonzero(mask)
            if not len(candidates):
                return []
            scores = blockwise_scores(vectors[candidates], query)
        chunked = self._chunk_best(query)
        if chunked is not None:  # a long memory scores as its best chunk
            best = chunked[0][candidates]
            scores = np.where(np.isfinite(best), best, scores)
        k = min(limit, len(candidates))
        top = np.argpartition(-scores, k - 1)[:k] if k < len(candidates) else np.arange(len(candidates))
        top = top[np.argsort(-scores[top], kind="stable")]
        return list(zip(candidates[top].tolist(), scores[top].tolist()))

    def newest(self, channel_id: str | None, n: int) -> list[tuple[str, str]]:
        """[(id, content)] of the n newest rows (by timestamp) in this channel (None: no channel), oldest first."""
        rows = heapq.nlargest(n, (r for r in self.rows if r[6] == channel_id), key=lambda r: r[4])
        return [(r[0], r[2]) for r in reversed(rows)]

    def embedded(self, ids: list[str]) -> tuple[list[dict[str, Any]], np.ndarray] | None:
        """The rows with these ids (in that order) and their vectors, float16 widened to float32; None
        when one of them is not held."""
        idx = [self._pos.get(i) for i in ids]
        if None in idx:
            return None
        vectors, _, _ = self._joined()
        return [dict(zip(META_FIELDS, self.rows[i])) for i in idx], vectors[idx].astype(np.float32)

    def by_ids(self, ids: list[str], query: np.ndarray) -> list[dict[str, Any]]:
        """The rows with these ids (in that order; unknown ids skipped), each with its cosine similarity."""
        return self.results(self.scored(ids, query), query)

    def scored(self, ids: list[str], query: np.ndarray) -> list[tuple[int, float]]:
        """`by_ids` as (position, similarity) pairs."""
        idx = [self._pos[i] for i in ids if i in self._pos]
        if not idx:
            return []
        vectors, _, _ = self._joined()
        scores = vectors[idx].astype(np.float32) @ query.astype(np.float32)
        chunked = self._chunk_best(query)
        if chunked is not None:
            best = chunked[0][idx]
            scores = np.where(np.isfinite(best), best, scores)
        return list(zip(idx, scores.tolist()))

    def candidates(self, pairs: list[tuple[int, float]]) -> dict[str, dict[str, Any]]:
        """id -> what fusion needs of a (position, similarity) pair: its `similarity`, `username`, `position`."""
        return {self.rows[i][0]: {"similarity": score, "username": self.rows[i][_USERNAME], "position": i}
                for i, score in pairs}

    def results(self, pairs: list[tuple[int, float]], query: np.ndarray) -> list[dict[str, Any]]:
        """The result rows of (position, similarity) pairs, each with its best chunk's `span` for the query."""
        chunked = self._chunk_best(query)  # the query's own answer, kept from its scoring
        out = []
        for i, score in pairs:
            row = dict(zip(META_FIELDS, self.rows[i]))
            row["similarity"] = score
            if chunked is not None and chunked[1][i] >= 0:
                row["span"] = self._chunks.span(chunked[1][i])
            out.append(row)
        return out


class VectorCache:
    """UserRows of the users queried last, within a byte budget; the least recently used are evicted to
    the spill on disk (spill.py), when there is one, and come back from it on their next `get`."""

    def __init__(self, dim: int, budget_bytes: int, spill_dir: Path | None = None, spill_bytes: int = 0):
        self.dim = dim
        self.budget = budget_bytes
        self._users: "OrderedDict[str, UserRows]" = OrderedDict()
        self.nbytes = 0
        self.spill = Spill(spill_dir, spill_bytes) if budget_bytes and spill_bytes and spill_dir else None
        # every user with rows in the table (read by the start-up warm-up, then kept by `append`); None:
        # not known (before the warm-up, or after another sidecar wrote to the table)
        self.known: set[str] | None = None

    @property
    def enabled(self) -> bool:
        return self.budget > 0

    def get(self, user_id: str) -> UserRows | None:
        entry = self._users.get(user_id)
        if entry is not None:
            self._users.move_to_end(user_id)
        elif self.spill is not None and (entry := self.spill.load(user_id)) is not None:
            self._users[user_id] = entry
            self.nbytes += entry.nbytes
            self._evict()
        return entry

    def put(self, user_id: str, rows: list[dict[str, Any]], vectors: np.ndarray,
            chunks: tuple[list[str], np.ndarray, np.ndarray] | None = None) -> UserRows:
        """Cache a user's complete row set and its chunks (message ids, spans, vectors), replacing any
        entry; returns it even if it cannot be kept."""
        self.discard(user_id)
        entry = UserRows(self.dim)
        entry.extend(rows, vectors)
        if chunks is not None:
            entry.add_chunks(*chunks)
        self._admit(user_id, entry)
        return entry

    def _admit(self, user_id: str, entry: UserRows, evict: bool = True) -> None:
        """Keep a user's complete entry within the budget: evicting the least recently used to make room
        (`evict`), or only into room that is free."""
        if self.enabled and entry.nbytes <= (self.budget if evict else self.budget - self.nbytes):
            self._users[user_id] = entry
            self.nbytes += entry.nbytes
            if evict:
                self._evict()

    def append(self, rows: list[dict[str, Any]], vectors: np.ndarray) -> None:
        """Committed rows: added to the users that are cached, and a user's first rows ever (not in `known`)
        cached as that user's complete set while the budget has room. Other users load from the table on
        demand: after an import, that first query per user read the table (about 10 ms each)."""
        by_user: dict[str, list[int]] = {}
        new: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            uid = r["user_id"]
            if uid in self._users:
                by_user.setdefault(uid, []).append(i)
            elif self.known is not None and uid not in self.known:  # `known` grows after the loop
                new.setdefault(uid, []).append(i)
            if self.spill is not None:
                self.spill.invalidate(uid)  # its file no longer holds every row
        if self.known is not None:
            self.known.update(r["user_id"] for r in rows)
        for uid, idx in new.items():
            entry = UserRows(self.dim)
            entry.extend([rows[i] for i in idx], vectors[idx])
            self._admit(uid, entry, evict=False)  # a new user evicts no one (no spill churn on an import)
        for uid, idx in by_user.items():
            entry = self._users[uid]
            before = entry.nbytes
            entry.extend([rows[i] for i in idx], vectors[idx])
            self.nbytes += entry.nbytes - before
        self._evict()

    def keyword_ids(self, user_id: str, entry: UserRows, *args: Any, **kwargs: Any) -> list[list[str]]:
        """`entry.keyword_ids(...)`, with the bytes of a keyword index it builds counted in the budget."""
        before = entry.nbytes
        found = entry.keyword_ids(*args, **kwargs)
        if entry.nbytes != before and self._users.get(user_id) is entry:
            self.nbytes += entry.nbytes - before
            self._evict()
        return found

    def add_chunks(self, user_id: str, message_ids: list[str], spans: np.ndarray, vectors: np.ndarray) -> None:
        """A memory's new chunks: added if its user is cached."""
        entry = self._users.get(user_id)
        if self.spill is not None:
            self.spill.invalidate(user_id)
        if entry is not None:
            before = entry.nbytes
            entry.add_chunks(message_ids, spans, vectors)
            self.nbytes += entry.nbytes - before
            self._evict()

    def embedded(self, user_id: str, ids: list[str]) -> tuple[list[dict[str, Any]], np.ndarray] | None:
        """The user's rows with these ids and their vectors (see UserRows.embedded) if the user is in memory
        (not the spill: background reads neither load it nor change the LRU order), else None."""
        entry = self._users.get(user_id)
        return entry.embedded(ids) if entry is not None else None

    def discard(self, user_id: str) -> None:
        entry = self._users.pop(user_id, None)
        if entry is not None:
            self.nbytes -= entry.nbytes
        if self.spill is not None:
            self.spill.invalidate(user_id)

    def drop(self, user_id: str) -> None:
        """Forget the user in memory and on disk (a delete: none of the deleted text stays in the spill)."""
        self.discard(user_id)
        if self.spill is not None:
            self.spill.drop(user_id)

    def clear(self) -> None:
        self._users.clear()
        self.nbytes = 0
        self.known = None
        if self.spill is not None:
            self.spill.clear()

    def __len__(self) -> int:
        return len(self._users)

    def stats(self) -> dict[str, int]:
        spill = self.spill
        return {"users": len(self), "bytes": self.nbytes, "budget_bytes": self.budget,
                "spilled_users": len(spill) if spill else 0, "spilled_bytes": spill.nbytes if spill else 0}

    def close(self) -> None:
        """Empty the cache and remove the spill's files."""
        self.clear()
        if self.spill is not None:
            self.spill.close()

    def _evict(self) -> None:
        while self.nbytes > self.budget and self._users:
            uid, entry = self._users.popitem(last=False)
            self.nbytes -= entry.nbytes
            if self.spill is not None:
                self.spill.put(uid, entry)
