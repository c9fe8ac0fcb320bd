"""BM25 over one user's cached rows, in process: the keyword half of a query without a LanceDB round trip.

Two fields are ranked, as LanceDB's full-text indexes rank them: `content` (the row's own text) and
`search_text` (the previous two messages of the same user and channel, each cut to its last
CONTEXT_CHARS characters, then the row's text; messages/schema.py). The second is never stored
here: it is derived from the first through each row's links to its previous rows, so the index holds
one posting per (term, row) and nothing else.

Text analysis follows LanceDB's default (tantivy's `simple` tokenizer, lower case, ASCII folding,
Snowball English stemming, English stop words, tokens of 40 characters or more dropped), and the
scoring is tantivy's BM25 (k1 1.2, b 0.75, idf ln(1 + (N - n + 0.5) / (n + 0.5))) with the
statistics of the user's own rows. The index is derived data: built from the cached rows on the
first keyword search of a user, extended with every row the cache gets, dropped with the cache entry.
Pure data structure: no I/O.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter

import numpy as np

from ..storage.lazy_import import defer_package_init
from .schema import CONTEXT_CHARS

K1, B = 1.2, 0.75
MAX_TOKEN_CHARS = 40
# English stop words (NLTK's list, as LanceDB's tokenizer has it), compared with the *stemmed* token,
# as LanceDB does: "being" (-> "be") is dropped, "during" (-> "dure") is kept. Probed against LanceDB 0.40.
STOP_WORDS = frozenset("""
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself
    it its itself they them their theirs themselves what which who whom this that these those am is are was were be
    been being have has had having do does did doing a an the and but if or because as until while of at by for with
    about against between into through during before after above below to from up down in out on off over under
    again further then once here there when where why how all any both each few more most other some such no nor not
    only own same so than too very s t can will just don should now d ll m o re ve y ain aren couldn didn doesn
    hadn hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn""".split())
_WORD = re.compile(r"[^\W_]+")
_STEMS: dict[str, str] = {}
_STEMS_MAX = 200_000


def _english_stemmer():
    """Snowball's English stemmer alone: `snowballstemmer`'s own `__init__` imports the stemmers of all its
    30-odd languages (12-15 ms and 2.9 MiB of start-up), so that package is registered with its `__init__`
    deferred and the English module imported by path (the same class `snowballstemmer.stemmer("english")`
    gives when PyStemmer is not installed)."""
    defer_package_init("snowballstemmer")
    from snowballstemmer.english_stemmer import EnglishStemmer

    return EnglishStemmer()


_STEMMER = _english_stemmer()
_DTYPES = (np.int64, np.int32, np.uint16, np.uint16)
# bytes per posting (term hash, row, two term frequencies) and per row (lengths and links), for the cache budget
POSTING_BYTES = 16
ROW_BYTES = 16


def _fold(text: str) -> str:
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def terms(text: str) -> list[str]:
    """The index terms of a text, in order (over-long tokens dropped, stemmed, stop words dropped)."""
    out = []
    for word in _WORD.findall(_fold(text).lower()):
        if len(word) >= MAX_TOKEN_CHARS:
            continue
        stem = _STEMS.get(word)
        if stem is None:
            if len(_STEMS) >= _STEMS_MAX:
                _STEMS.clear()
            stem = _STEMS[word] = _STEMMER.stemWord(word)
        if stem not in STOP_WORDS:
            out.append(stem)
    return out


class KeywordIndex:
    """Postings of one user's rows: (term hash, row, term frequency in the row's text, term frequency in
    the part of it a later row's search_text borrows). Rows are numbered as the cache numbers them.

    New postings land in an unsorted tail that is scanned; past a share of the sorted part they are
    merged into it, so appends stay cheap and lookups logarithmic."""

    def __init__(self) -> None:
        self._sorted = tuple(np.empty(0, dt) for dt in _DTYPES)
        self._tail: list[tuple[np.ndarray, ...]] = []
        self._tail_len = 0
        self._length: list[np.ndarray] = []  # per row: terms in its text, terms in its borrowed part
        self._borrowed: list[np.ndarray] = []
        self._prev: list[np.ndarray] = []  # per row: the rows (positions) its search_text borrows from, or -1
        self._prev2: list[np.ndarray] = []
        self.rows = 0
        self.nbytes = 0

    def extend(self, contents: list[str], prev: list[int], prev2: list[int]) -> None:
        """Index rows numbered from `self.rows` on; prev/prev2: the positions of their previous rows (-1: none)."""
        h: list[int] = []
        pos: list[int] = []
        tf: list[int] = []
        tail_tf: list[int] = []
        lengths, borrowed = [], []
        for k, content in enumerate(contents):
            row = self.rows + k
            words = terms(content)
            counts = Counter(words)
            tail = Counter(terms(content[-CONTEXT_CHARS:])) if len(content) > CONTEXT_CHARS else counts
            lengths.append(len(words))
            borrowed.append(sum(tail.values()) if tail is not counts else len(words))
            keys = counts.keys() | tail.keys() if tail is not counts else counts.keys()
            for term in keys:
                h.append(hash(term))
                pos.append(row)
                tf.append(min(counts.get(term, 0), 65535))
                tail_tf.append(min(tail.get(term, 0), 65535))
        self._tail.append(tuple(np.array(c, dt) for c, dt in zip((h, pos, tf, tail_tf), _DTYPES)))
        self._tail_len += len(h)
        self._length.append(np.array(lengths, np.float32))
        self._borrowed.append(np.array(borrowed, np.float32))
        self._prev.append(np.array(prev, np.int32))
        self._prev2.append(np.array(prev2, np.int32))
        self.rows += len(contents)
        self.nbytes += len(h) * POSTING_BYTES + len(contents) * ROW_BYTES
        if self._tail_len > max(4096, len(self._sorted[0]) // 8):
            self._merge()

    def _merge(self) -> None:
        parts = [self._sorted, *self._tail]
        joined = [np.concatenate([p[i] for p in parts]) for i in range(4)]
        order = np.argsort(joined[0], kind="stable")
        self._sorted = tuple(a[order] for a in joined)
        self._tail, self._tail_len = [], 0

    def _columns(self) -> tuple[np.ndarray, ...]:
        for name in ("_length", "_borrowed", "_prev", "_prev2"):
            parts = getattr(self, name)
            if len(parts) > 1:
                setattr(self, name, [np.concatenate(parts)])
        return self._length[0], self._borrowed[0], self._prev[0], self._prev2[0]

    def _frequencies(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        """Dense per-row term frequencies of one term: in the row's text, and in its borrowed part."""
        tf = np.zeros(self.rows, np.float32)
        tail = np.zeros(self.rows, np.float32)
        keys, pos, f, tf_tail = self._sorted
        lo, hi = np.searchsorted(keys, term, "left"), np.searchsorted(keys, term, "right")
        tf[pos[lo:hi]] = f[lo:hi]
        tail[pos[lo:hi]] = tf_tail[lo:hi]
        if len(self._tail) > 1:
            self._tail = [tuple(np.concatenate([t[i] for t in self._tail]) for i in range(4))]
        if self._tail:
            h, p, f2, t2 = self._tail[0]
            at = h == term
            tf[p[at]] = f2[at]
            tail[p[at]] = t2[at]
        return tf, tail

    def search(self, text: str, field: str, candidates: np.ndarray | None, limit: int) -> list[int]:
        """The best `limit` rows (positions) for the query text in `field` ("content" or "search_text"),
        best first; rows outside `candidates` (a boolean mask; None: all) are never returned, and rows
        sharing no term with the query neither."""
        query = Counter(terms(text))
        if not query or not self.rows or limit <= 0:
            return []
        length, borrowed, prev, prev2 = self._columns()
        has1, has2 = prev >= 0, prev2 >= 0
        if field == "search_text":
            length = length + np.where(has1, borrowed[prev], 0) + np.where(has2, borrowed[prev2], 0)
        norm = K1 * (1 - B + B * length / max(float(length.mean()), 1e-9))
        scores = np.zeros(self.rows, np.float32)
        for term, times in query.items():
            tf, tail = self._frequencies(hash(term))
            if field == "search_text":
                tf = tf + np.where(has1, tail[prev], 0) + np.where(has2, tail[prev2], 0)
            n = int(np.count_nonzero(tf))
            if not n:
                continue
            idf = math.log(1 + (self.rows - n + 0.5) / (n + 0.5))
            scores += times * idf * tf * (K1 + 1) / (tf + norm)
        hit = scores > 0
        if candidates is not None:
            hit &= candidates
        found = np.flatnonzero(hit)
        if len(found) > limit:
            found = found[np.argpartition(-scores[found], limit - 1)[:limit]]
        return found[np.lexsort((found, -scores[found]))].tolist()
