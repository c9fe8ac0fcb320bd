"""A per-user, in-memory copy of the messages table, so a query needs no LanceDB round trip.

Search is exact (brute force over one user's vectors, which is what LanceDB does after its
user_id prefilter anyway); vectors are held as int8 with a scale per row (quantized.py: a cosine moves by
about 3e-4), text in compact columns (columns.py), and the
whole cache is bounded by a byte budget with least-recently-used eviction. The store keeps it
consistent: rows are appended on every committed write, and any delete drops the cache. A long
memory's chunk vectors (`chunks.py`) are held beside the rows (`chunk_vectors.py`, as float32), and a row
that has chunks scores as its best chunk, with that chunk's character `span`. Pure data structure: it never
touches LanceDB itself.
"""

from __future__ import annotations

import heapq
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any, cast

import numpy as np

from .chunk_vectors import ChunkVectors
from .columns import IdIndex, TextColumn
from .keywords import KeywordIndex
from .quantized import quantize, scores, widen
from .spill import Spill

# Bytes per row beside its vector and scale, timestamp, is_bot flag and texts: its links (8), two name
# slots (16), the id index (20) and four text columns' offsets (32). The keyword index, once built, counts
# its own.
ROW_OVERHEAD = 76
# the spilled users' new rows held in memory (spill.py): up to this share of the budget, beside it (counted in
# it, a store could evict users to make room; realuse (b)'s store p50 was 2.2x the floor in that one run)
TAIL_SHARE = 16
TEXT_FIELDS = ("id", "content", "message_id", "reply_to")  # held as UTF-8 (columns.py)
NAMED_FIELDS = ("channel_id", "username")  # few distinct values: interned strings
KEPT_FIELDS = ("user_id", "timestamp", "is_bot", "prev_id", "prev2_id", *TEXT_FIELDS, *NAMED_FIELDS)  # `extend` reads


def row_bytes(dim: int, text_bytes: int) -> int:
    """What the cache counts for a row whose TEXT_FIELDS hold `text_bytes` bytes of UTF-8, before it is held."""
    return dim + 4 + 8 + 1 + ROW_OVERHEAD + text_bytes


class UserRows:
    """One user's rows: int8 vectors (quantized.py) plus the columns a result needs, in insertion order.

    Appends land in small chunks that are joined on the next search, so memory is exactly the
    rows held (no capacity doubling). Text is held in compact columns (columns.py), not as Python
    objects per row; channel and speaker names, which repeat, are interned."""

    def __init__(self, dim: int):
        self.dim = dim
        self.user_id: str | None = None  # one user per entry
        self._vectors = [np.empty((0, dim), dtype=np.int8)]  # quantized.py
        self._scales = [np.empty(0, dtype=np.float32)]
        self._timestamps = [np.empty(0, dtype=np.float64)]
        self._is_bot = [np.empty(0, dtype=bool)]
        # per row: the positions of the two rows its search_text borrows from (-1: none)
        self._links = [np.empty((0, 2), dtype=np.int32)]
        self._text = {f: TextColumn() for f in TEXT_FIELDS}
        self._named: dict[str, list[str | None]] = {f: [] for f in NAMED_FIELDS}
        self._ids = IdIndex()
        self.keywords: KeywordIndex | None = None  # built on the first keyword search
        self.nbytes = 0
        self._chunks = ChunkVectors(dim)  # chunks of long memories (chunk_vectors.py)
        self._chunked: set[str] = set()  # row ids whose chunks are held

    def __len__(self) -> int:
        return len(self._text["id"])

    def row(self, i: int) -> dict[str, Any]:
        """Row i as a result row (schema.py's RESULT_COLUMNS)."""
        _, timestamps, is_bot = self._joined()
        t, n = self._text, self._named
        return {
            "id": t["id"][i],
            "user_id": self.user_id,
            "content": t["content"][i],
            "is_bot": bool(is_bot[i]),
            "timestamp": float(timestamps[i]),
            "message_id": t["message_id"][i],
            "channel_id": n["channel_id"][i],
            "reply_to": t["reply_to"][i],
            "username": n["username"][i],
        }

    def positions(self, ids: list[str]) -> list[int | None]:
        return self._ids.find(ids, self._text["id"])

    def extend(self, rows: list[dict[str, Any]], vectors: np.ndarray) -> None:
        if not rows:
            return
        self.user_id = self.user_id or sys.intern(rows[0]["user_id"])
        before = self._own_bytes()
        rows8, scales = quantize(vectors)
        self._vectors.append(rows8)
        self._scales.append(scales)
        self._timestamps.append(np.array([r["timestamp"] for r in rows], dtype=np.float64))
        self._is_bot.append(np.array([r["is_bot"] for r in rows], dtype=bool))
        start = len(self)
        for f, column in self._text.items():
            column.extend(r.get(f) for r in rows)
        for f, values in self._named.items():
            values.extend(v if (v := r.get(f)) is None else sys.intern(v) for r in rows)
        self._ids.extend(r["id"] for r in rows)
        links = np.full((len(rows), 2), -1, np.int32)
        batch = {r["id"]: start + k for k, r in enumerate(rows)}  # most links point into their own batch
        wanted = []
        for k, r in enumerate(rows):
            for j, linked in enumerate((r.get("prev_id"), r.get("prev2_id"))):
                if linked is not None:
                    if (p := batch.get(linked)) is not None:
                        links[k, j] = p
                    else:
                        wanted.append((k, j, linked))
        for (k, j, _), p in zip(wanted, self.positions([i for _, _, i in wanted])):
            if p is not None:
                links[k, j] = p
        self._links.append(links)
        self.nbytes += self._own_bytes() - before
        if self.keywords is not None:
            self._index(start, links)

    def _own_bytes(self) -> int:
        """The bytes of the rows themselves (not their chunks or keyword index)."""
        fixed = self.dim + 4 + 8 + 1 + 8 + 8 * len(NAMED_FIELDS)  # vector, scale, timestamp, is_bot, links, names
        return len(self) * fixed + sum(c.nbytes for c in self._text.values()) + self._ids.nbytes

    def _index(self, start: int, links: np.ndarray) -> None:
        keywords = self.keywords
        assert keywords is not None
        before = keywords.nbytes
        content = self._text["content"]  # never null (messages/schema.py), as "id"
        added = cast("list[str]", [content[i] for i in range(start, len(self))])
        keywords.extend(added, links[:, 0].tolist(), links[:, 1].tolist())
        self.nbytes += keywords.nbytes - before

    def keyword_ids(
        self,
        text: str,
        fields: tuple[str, ...],
        limit: int,
        include_bot: bool = True,
        since: float | None = None,
        until: float | None = None,
        scored: bool = False,
    ) -> list[list[Any]]:
        """Per field ("content", "search_text"): the ids of the best `limit` rows by BM25, best first
        (messages/keywords.py), filtered before ranking; `scored`: (id, BM25 score) pairs. Builds the user's
        keyword index on first use."""
        if self.keywords is None:
            self.keywords = KeywordIndex()
            if len(self):
                self._index(0, self._joined_links())
        mask = self._mask(include_bot, since, until)
        ids = self._text["id"]
        found = [self.keywords.ranked(text, f, mask, limit) for f in fields]
        return [[(ids[i], bm25) if scored else ids[i] for i, bm25 in pairs] for pairs in found]

    def _mask(self, include_bot: bool, since: float | None, until: float | None) -> np.ndarray | None:
        """The rows a filter keeps (None: all)."""
        if include_bot and since is None and until is None:
            return None
        _, timestamps, is_bot = self._joined()
        mask = np.ones(len(self), dtype=bool)
        if not include_bot:
            mask &= ~is_bot
        if since is not None:
            mask &= timestamps >= since
        if until is not None:
            mask &= timestamps <= until
        return mask

    def add_chunks(self, message_ids: list[str], spans: np.ndarray, vectors: np.ndarray) -> None:
        """Chunks of held rows (others, and rows whose chunks are held already, are skipped)."""
        positions = self.positions(message_ids)
        keep = [k for k, m in enumerate(message_ids) if positions[k] is not None and m not in self._chunked]
        if not keep:
            return
        before = self._chunks.nbytes
        self._chunks.add(
            np.array([positions[k] for k in keep], dtype=np.int64),
            np.asarray(spans, dtype=np.int32).reshape(-1, 2)[keep],
            np.asarray(vectors)[keep],
        )
        self._chunked.update(message_ids[k] for k in keep)
        self.nbytes += self._chunks.nbytes - before

    def _chunk_best(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Per row: its best chunk's score (-inf: no chunks) and that chunk's index (-1); None without chunks."""
        return self._chunks.best(query, len(self)) if len(self._chunks) else None

    def _joined(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(vectors, timestamps, is_bot); the vectors' scales are `_scales[0]` after it."""
        if len(self._vectors) > 1:
            self._vectors = [np.concatenate(self._vectors)]
            self._scales = [np.concatenate(self._scales)]
            self._timestamps = [np.concatenate(self._timestamps)]
            self._is_bot = [np.concatenate(self._is_bot)]
        return self._vectors[0], self._timestamps[0], self._is_bot[0]

    def _joined_links(self) -> np.ndarray:
        if len(self._links) > 1:
            self._links = [np.concatenate(self._links)]
        return self._links[0]

    def search(
        self,
        query: np.ndarray,
        limit: int,
        include_bot: bool = True,
        since: float | None = None,
        until: float | None = None,
    ) -> list[dict[str, Any]]:
        """The best `limit` rows for the query vector, best first, each with its cosine `similarity`."""
        return self.results(self.ranked(query, limit, include_bot, since, until), query)

    def ranked(
        self,
        query: np.ndarray,
        limit: int,
        include_bot: bool = True,
        since: float | None = None,
        until: float | None = None,
    ) -> list[tuple[int, float]]:
        """`search` as (position, similarity) pairs: no result rows built (a hybrid query fuses 100 of these
        and returns 5)."""
        if not len(self):
            return []
        vectors, _, _ = self._joined()
        mask = self._mask(include_bot, since, until)
        if mask is None:  # no filter: no gathered copy of the vectors
            candidates = np.arange(len(self))
            found = scores(vectors, self._scales[0], query)
        else:
            candidates = np.flatnonzero(mask)
            if not len(candidates):
                return []
            found = scores(vectors[candidates], self._scales[0][candidates], query)
        chunked = self._chunk_best(query)
        if chunked is not None:  # a long memory scores as its best chunk
            best = chunked[0][candidates]
            found = np.where(np.isfinite(best), best, found)
        k = min(limit, len(candidates))
        top = np.argpartition(-found, k - 1)[:k] if k < len(candidates) else np.arange(len(candidates))
        top = top[np.argsort(-found[top], kind="stable")]
        return list(zip(candidates[top].tolist(), found[top].tolist()))

    def newest(self, channel_id: str | None, n: int) -> list[tuple[str, str]]:
        """[(id, content)] of the n newest rows (by timestamp) in this channel (None: no channel), oldest first."""
        _, timestamps, _ = self._joined()
        here = [i for i, c in enumerate(self._named["channel_id"]) if c == channel_id]
        newest = heapq.nlargest(n, here, key=timestamps.__getitem__)
        ids, content = self._text["id"], self._text["content"]
        return cast("list[tuple[str, str]]", [(ids[i], content[i]) for i in reversed(newest)])

    def embedded(self, ids: list[str]) -> tuple[list[dict[str, Any]], np.ndarray] | None:
        """The rows with these ids (in that order) and their vectors, widened to float32; None
        when one of them is not held."""
        idx = [i for i in self.positions(ids) if i is not None]
        if len(idx) < len(ids):
            return None
        vectors, _, _ = self._joined()
        return [self.row(i) for i in idx], widen(vectors[idx], self._scales[0][idx])

    def by_ids(self, ids: list[str], query: np.ndarray) -> list[dict[str, Any]]:
        """The rows with these ids (in that order; unknown ids skipped), each with its cosine similarity."""
        return self.results(self.scored(ids, query), query)

    def scored(self, ids: list[str], query: np.ndarray) -> list[tuple[int, float]]:
        """`by_ids` as (position, similarity) pairs."""
        idx = [i for i in self.positions(ids) if i is not None]
        if not idx:
            return []
        vectors, _, _ = self._joined()
        found = scores(vectors[idx], self._scales[0][idx], query)
        chunked = self._chunk_best(query)
        if chunked is not None:
            best = chunked[0][idx]
            found = np.where(np.isfinite(best), best, found)
        return list(zip(idx, found.tolist()))

    def candidates(self, pairs: list[tuple[int, float]]) -> dict[str, dict[str, Any]]:
        """id -> what fusion needs of a (position, similarity) pair: its `similarity`, `username`, `position`."""
        ids, names = self._text["id"], self._named["username"]
        return {cast(str, ids[i]): {"similarity": score, "username": names[i], "position": i} for i, score in pairs}

    def results(self, pairs: list[tuple[int, float]], query: np.ndarray) -> list[dict[str, Any]]:
        """The result rows of (position, similarity) pairs, each with its best chunk's `span` for the query."""
        chunked = self._chunk_best(query)  # the query's own answer, kept from its scoring
        out = []
        for i, score in pairs:
            row = self.row(i)
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
        self._users: OrderedDict[str, UserRows] = OrderedDict()
        self.nbytes = 0
        self.spill = (
            Spill(spill_dir, spill_bytes, budget_bytes // TAIL_SHARE)
            if budget_bytes and spill_bytes and spill_dir
            else None
        )
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

    def put(
        self,
        user_id: str,
        rows: list[dict[str, Any]],
        vectors: np.ndarray,
        chunks: tuple[list[str], np.ndarray, np.ndarray] | None = None,
    ) -> UserRows:
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
        cached as that user's complete set while the budget has room, and a spilled user's rows held as its
        file's tail (spill.py). Other users load from the table on demand: after an import, that first query
        per user read the table (about 10 ms each)."""
        by_user: dict[str, list[int]] = {}
        new: dict[str, list[int]] = {}
        on_disk: dict[str, list[int]] = {}  # users with a valid spill file
        for i, r in enumerate(rows):
            uid = r["user_id"]
            if uid in self._users:
                by_user.setdefault(uid, []).append(i)
            elif self.known is not None and uid not in self.known:  # `known` grows after the loop
                new.setdefault(uid, []).append(i)
            elif self.spill is not None and uid in self.spill:
                on_disk.setdefault(uid, []).append(i)
        if self.spill is not None:
            for uid in (*by_user, *new):  # (a new user may have a file: an empty entry, from a query)
                self.spill.invalidate(uid)  # its file no longer holds every row
            for uid, idx in on_disk.items():  # the file's tail (spill.py), or the file goes stale
                self.spill.add(uid, [{f: rows[i].get(f) for f in KEPT_FIELDS} for i in idx], vectors[idx])
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
        tails = spill.tail_nbytes if spill else 0  # rows of spilled users, held for their files (spill.py)
        return {
            "users": len(self),
            "bytes": self.nbytes + tails,
            "budget_bytes": self.budget,
            "spilled_users": len(spill) if spill else 0,
            "spilled_bytes": spill.nbytes if spill else 0,
        }

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
