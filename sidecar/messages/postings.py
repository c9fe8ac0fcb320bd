"""The postings of a keyword index (keywords.py): (term key, row, term frequency in the row's text, term
frequency in the part of it a later row's search_text borrows), sorted by key, with an unsorted tail
for new rows that is merged in past a share of the sorted part. Pure data structure.

Terms of one or two characters of the Basic Multilingual Plane (every bigram of Han, Kana and Hangul,
which are most of a Chinese, Japanese or Korean memory's terms) are keyed by their code points, exactly,
in 32 bits (`short_key`); longer terms by a 64-bit hash. Frequencies are capped at 255: BM25's term
frequency saturates long before (k1 1.2: 255 scores 99.6% of 1,000)."""

from __future__ import annotations

import numpy as np

TF_MAX = 255


def short_key(term: str) -> int | None:
    """The 32-bit key of a term of one or two BMP characters (its code points), else None."""
    if len(term) == 1:
        code = ord(term)
        return code if code < 0x10000 else None
    if len(term) == 2:
        a, b = ord(term[0]), ord(term[1])
        if a < 0x10000 and b < 0x10000:
            return (a << 16) | b
    return None


class Postings:
    """One key width's postings: sorted columns plus an unsorted tail."""

    def __init__(self, key_dtype: type) -> None:
        self.dtypes = (key_dtype, np.int32, np.uint8, np.uint8)
        self.posting_bytes = sum(np.dtype(dt).itemsize for dt in self.dtypes)
        self._sorted: tuple[np.ndarray, ...] = tuple(np.empty(0, dt) for dt in self.dtypes)
        self._tail: list[tuple[np.ndarray, ...]] = []
        self._tail_len = 0

    def __len__(self) -> int:
        return len(self._sorted[0]) + self._tail_len

    def add(self, keys: list[int], rows: list[int], tf: list[int], tail: list[int]) -> None:
        if not keys:
            return
        self._tail.append(tuple(np.array(c, dt) for c, dt in zip((keys, rows, tf, tail), self.dtypes)))
        self._tail_len += len(keys)
        if self._tail_len > max(4096, len(self._sorted[0]) // 8):
            parts = [self._sorted, *self._tail]
            joined = [np.concatenate([p[i] for p in parts]) for i in range(4)]
            order = np.argsort(joined[0], kind="stable")
            self._sorted = tuple(a[order] for a in joined)
            self._tail, self._tail_len = [], 0

    def _joined_tail(self) -> tuple[np.ndarray, ...] | None:
        if len(self._tail) > 1:
            self._tail = [tuple(np.concatenate([t[i] for t in self._tail]) for i in range(4))]
        return self._tail[0] if self._tail else None

    def frequencies(self, key: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """Dense per-row term frequencies of one key: in the row's text, and in its borrowed part."""
        tf = np.zeros(rows, np.float32)
        tail = np.zeros(rows, np.float32)
        keys, pos, f, tf_tail = self._sorted
        lo, hi = np.searchsorted(keys, key, "left"), np.searchsorted(keys, key, "right")
        tf[pos[lo:hi]] = f[lo:hi]
        tail[pos[lo:hi]] = tf_tail[lo:hi]
        joined = self._joined_tail()
        if joined is not None:
            h, p, f2, t2 = joined
            at = h == key
            tf[p[at]] = f2[at]
            tail[p[at]] = t2[at]
        return tf, tail

    def frequencies_of(self, keys: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """`frequencies` of several keys at once: (len(keys), rows) arrays, a key's row in each (one pass over
        the tail for all of them, where a call per key scans it once each)."""
        found: tuple[np.ndarray, np.ndarray] = np.unique(keys.astype(self.dtypes[0]), return_inverse=True)
        unique, back = found
        tf = np.zeros((len(unique), rows), np.float32)
        tail = np.zeros((len(unique), rows), np.float32)
        ordered, pos, f, tf_tail = self._sorted
        lo, hi = np.searchsorted(ordered, unique, "left"), np.searchsorted(ordered, unique, "right")
        counts = hi - lo
        if counts.any():
            which = np.repeat(np.arange(len(unique)), counts)
            at = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
            tf[which, pos[at]] = f[at]
            tail[which, pos[at]] = tf_tail[at]
        joined = self._joined_tail()
        if joined is not None and len(unique):
            h, p, f2, t2 = joined
            slot = np.minimum(np.searchsorted(unique, h), len(unique) - 1)
            hit = unique[slot] == h
            tf[slot[hit], p[hit]] = f2[hit]
            tail[slot[hit], p[hit]] = t2[hit]
        return tf[back], tail[back]

    def document_frequencies(self, keys: np.ndarray) -> np.ndarray:
        """Rows holding each key, in the sorted part and the tail."""
        keys = keys.astype(self.dtypes[0])
        ordered = self._sorted[0]
        found = np.searchsorted(ordered, keys, "right") - np.searchsorted(ordered, keys, "left")
        joined = self._joined_tail()
        if joined is not None:
            tail = np.sort(joined[0])
            found += np.searchsorted(tail, keys, "right") - np.searchsorted(tail, keys, "left")
        return found
