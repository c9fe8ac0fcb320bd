"""Compact columns for the vector cache's rows (vector_cache.py): strings as one UTF-8 buffer and their end
offsets, and ids found by their hashes in sorted arrays. A cached row held as a tuple of Python objects
cost about 750 bytes beside its vector (measured in-process: 100,000 rows of 10-25 words took 145 MiB of
RSS, 73 of them vectors); held in these columns, its text's bytes and a few dozen more. Pure data
structures: no I/O.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

import numpy as np

ID_INDEX_MIN_TAIL = 64  # ids appended since the last sort that are scanned, not bisected, before a re-sort


class TextColumn:
    """Strings or None, appended in order, read by position: one bytearray of their UTF-8 bytes and an
    `array` of each value's end offset (a None's is stored as -1 - end), 8 bytes per value beside its text."""

    __slots__ = ("_data", "_ends")

    def __init__(self) -> None:
        self._data = bytearray()
        self._ends = array("q")

    def extend(self, values: Iterable[str | None]) -> None:
        data, ends = self._data, self._ends
        for v in values:
            if v is None:
                ends.append(-1 - len(data))
            else:
                data += v.encode()
                ends.append(len(data))

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, i: int) -> str | None:
        if i < 0:
            i += len(self._ends)
        end = self._ends[i]
        if end < 0:
            return None
        start = self._ends[i - 1] if i else 0
        return self._data[start if start >= 0 else -1 - start : end].decode()

    @property
    def nbytes(self) -> int:
        return len(self._data) + 8 * len(self._ends)


class IdIndex:
    """Row positions of ids, by the ids' hashes: a part sorted by hash that is bisected and a tail of the
    newest ids that is scanned, sorted in when it grows past an eighth of the whole (a store to a cached
    user appends one id; re-sorting every time would cost a big user's query O(n log n)). A hash names
    candidates only: `find` confirms each against the ids themselves. The hashes are this process's
    (`hash(str)` is salted per process): pickled, an index is only read back by the process that wrote it
    (the spill's files are signed with a key each process draws, spill.py)."""

    __slots__ = ("_hashes", "_sorted_keys", "_sorted_pos")

    def __init__(self) -> None:
        self._hashes = array("q")  # per row, in row order
        self._sorted_keys = np.empty(0, np.int64)  # hashes of rows [0, len(_sorted_keys)), sorted
        self._sorted_pos = np.empty(0, np.int32)

    def extend(self, ids: Iterable[str]) -> None:
        self._hashes.extend(hash(i) for i in ids)
        tail = len(self._hashes) - len(self._sorted_keys)
        if tail > max(ID_INDEX_MIN_TAIL, len(self._sorted_keys) // 8):
            keys = np.array(self._hashes, dtype=np.int64)
            order = np.argsort(keys, kind="stable")
            self._sorted_keys, self._sorted_pos = keys[order], order.astype(np.int32)

    def find(self, ids: list[str], column: TextColumn) -> list[int | None]:
        """The position of each id (None: not held), confirmed against `column`, the ids by position; an id
        held twice gives its newest position, as a dict of id -> position would."""
        if not ids:
            return []
        keys = np.fromiter((hash(i) for i in ids), np.int64, len(ids))
        done = len(self._sorted_keys)
        lo = np.searchsorted(self._sorted_keys, keys, "left").tolist()
        hi = np.searchsorted(self._sorted_keys, keys, "right").tolist()
        tail = np.frombuffer(self._hashes[done:], np.int64) if len(self._hashes) > done else None
        out: list[int | None] = []
        for k, wanted in enumerate(ids):
            found = None
            if tail is not None:
                found = next(
                    (done + j for j in np.flatnonzero(tail == keys[k]).tolist()[::-1] if column[done + j] == wanted),
                    None,
                )
            if found is None:
                found = next(
                    (p for p in sorted(self._sorted_pos[lo[k] : hi[k]].tolist(), reverse=True) if column[p] == wanted),
                    None,
                )
            out.append(found)
        return out

    @property
    def nbytes(self) -> int:
        """20 bytes per id (its hash, and its hash and position once sorted): counted before the sort too, so
        that an entry counts what the warm-up's estimate says (`vector_cache.row_bytes`)."""
        return 20 * len(self._hashes)
