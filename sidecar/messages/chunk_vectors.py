"""One user's long-memory chunk vectors in the vector cache: a row that has chunks scores as its best one.

A long memory has a chunk per 150 tokens (chunker.py), so a user of long memories holds several times more
chunk vectors than rows, and scoring them is most of such a user's query. Three choices keep it small,
each measured in-process on one user of 400 memories of 1-3k characters (1,200 chunks; 3,000 after 600 more):
- The vectors are float16 values (as the rows' were until the rows became int8, quantized.py; so scores
  are as before, to the last bit of a float32 that BLAS may round by a chunk's place in the matrix) held
  widened to float32: widening 1,200 of them
  block by block on every query took 211 us, the float32 product 10 us. They take twice the bytes of
  float16 in the cache budget.
- Chunks arrive a memory at a time; they land in a tail that is merged into the main block once it outgrows
  an eighth of it, instead of the whole set being copied on the next query after each memory.
- Each row's best chunk is a segmented maximum over the chunks grouped by row (the grouping is computed
  once per change): a lexicographic sort of all chunks per query took 157 us at 3,000.
Pure data structure, used under the message store's lock like the rest of the cache.
"""

from __future__ import annotations

import numpy as np

# per chunk beside its vector: its row (8) and span (8), and the grouping's copy of the span, its place in the
# grouped order and its run (8 each)
CHUNK_BYTES = 40
MERGE_MIN = 256  # tail chunks always allowed before a merge into the main block


class ChunkVectors:
    def __init__(self, dim: int):
        self.dim = dim
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (float32 vectors, rows, spans)
        self._groups: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._memo: tuple[bytes, int, tuple[np.ndarray, np.ndarray]] | None = None  # the last query's answer
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def __getstate__(self) -> dict[str, object]:  # spilled without the last query's scores
        return {**self.__dict__, "_memo": None}

    @property
    def nbytes(self) -> int:
        return self.count * (self.dim * 4 + CHUNK_BYTES)

    def add(self, rows: np.ndarray, spans: np.ndarray, vectors: np.ndarray) -> None:
        """Chunks of rows (positions in the user's rows), their [start, end) spans and vectors."""
        self._parts.append(
            (
                np.asarray(vectors, dtype=np.float16).astype(np.float32),
                np.asarray(rows, np.int64),
                np.asarray(spans, dtype=np.int32).reshape(-1, 2),
            )
        )
        self.count += len(rows)
        main = len(self._parts[0][1])
        if len(self._parts) > 1 and self.count - main > max(MERGE_MIN, main // 8):
            self._parts = [_joined(self._parts)]
        self._groups = None
        self._memo = None

    def _grouped(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(spans, order, starts, owners, run): all chunks' spans; the chunks listed row by row (in the order
        they came within a row); where each row's run starts in that list; the row of each run (ascending);
        and the run of each entry of the list."""
        if self._groups is None:
            if len(self._parts) > 2:
                self._parts = [self._parts[0], _joined(self._parts[1:])]
            rows = np.concatenate([p[1] for p in self._parts])
            spans = np.concatenate([p[2] for p in self._parts])
            order = np.argsort(rows, kind="stable")
            by_row = rows[order]
            starts = np.flatnonzero(np.r_[True, by_row[1:] != by_row[:-1]])
            run = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(order)]))
            self._groups = (spans, order, starts, by_row[starts], run)
        return self._groups

    def best(self, query: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
        """Per row (of n_rows): its best chunk's score (-inf: no chunks) and that chunk's index (-1), for
        `span`; of equal scores the chunk that came first. The last query's answer is kept: a hybrid query
        asks twice (its candidates, then its fused rows)."""
        q = np.asarray(query, dtype=np.float32)
        key = q.tobytes()
        if self._memo is not None and self._memo[0] == key and self._memo[1] == n_rows:
            return self._memo[2]
        _spans, order, starts, owners, run = self._grouped()
        scores = np.concatenate([p[0] @ q for p in self._parts]) if len(self._parts) > 1 else self._parts[0][0] @ q
        listed = np.where(np.isnan(scores), -np.inf, scores)[order]  # a NaN never wins (and never breaks a run)
        top = np.maximum.reduceat(listed, starts)
        hit = np.flatnonzero(listed == top[run])  # each run's maxima, in list order
        first = hit[np.r_[True, run[hit][1:] != run[hit][:-1]]]
        best = np.full(n_rows, -np.inf, dtype=np.float32)
        pick = np.full(n_rows, -1, dtype=np.int64)
        best[owners] = top
        pick[owners] = order[first]
        self._memo = (key, n_rows, (best, pick))
        return self._memo[2]

    def span(self, chunk: int) -> list[int]:
        """The [start, end) characters of a chunk (an index from `best`)."""
        return self._grouped()[0][chunk].tolist()


def _joined(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return tuple(np.concatenate(column) for column in zip(*parts))  # type: ignore[return-value]
