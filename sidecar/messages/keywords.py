"""BM25 over one user's cached rows, in process: the keyword half of a query without a LanceDB round trip.

Two fields are ranked: `content` (the row's own text) and `search_text` (the previous two messages of
the same user and channel, each cut to its last CONTEXT_CHARS characters, then the row's text;
messages/schema.py). The second is never stored here: it is derived from the first through each row's
links to its previous rows, so the index holds one posting per (term, row) and nothing else.

Text analysis is sidecar/text's, for every script: Han, Kana, Hangul, Thai and the other spaceless
scripts as bigrams, words stemmed in their memory's language with its stop words dropped (English as
LanceDB's default tokenizer has it). The index counts the languages of its rows; a query is analysed in
each language that holds at least QUERY_LANGUAGE_SHARE of them. Beside the terms, the words' grams
(sidecar/text: trigrams of each word, in every language but English) with lengths of their own: a query
word's grams, scored as one more BM25 field at GRAM_WEIGHT (the word's grams sharing it), stand in for the
word's stems in a row where they score more, and never add to them, so another form of a word is found
and an exact match ranks as it did. The scoring is tantivy's BM25 (k1 1.2,
b 0.75, idf ln(1 + (N - n + 0.5) / (n + 0.5))) with the statistics of the user's own rows; a query with more
than MAX_QUERY_TERMS distinct terms (a pasted page of Chinese has thousands of bigrams) keeps the ones
with the highest tf-idf, as Lucene's MoreLikeThis keeps 25. The index is derived data: built from the
cached rows on the first keyword search of a user, extended with every row the cache gets, dropped with
the cache entry. Pure data structure: no I/O.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ..storage.lazy_import import defer_package_init
from ..text import GRAM_MARK, UNIGRAM_WEIGHT, analyse_fields, query_fields
from ..text import terms as text_terms
from .postings import TF_MAX, Postings, short_key
from .schema import CONTEXT_CHARS

K1, B = 1.2, 0.75
MAX_QUERY_TERMS = 32
GRAM_WEIGHT = 0.3  # a query word's grams together, against the word's own term
MAX_QUERY_GRAMS = 24  # grams looked up per query: those of its first words (at least one word's)
QUERY_LANGUAGE_SHARE = 0.01  # a language a query is stemmed in: at least this share of the rows (or 1 row)
# snowballstemmer's own `__init__` imports the stemmers of all its 30-odd languages (12-15 ms and 2.9 MiB of
# start-up): the package is registered with its `__init__` deferred, and sidecar/text imports each
# language's module as it is first needed
defer_package_init("snowballstemmer")
# bytes per row (lengths and links), for the cache budget; a posting counts its own (postings.py)
ROW_BYTES = 16


def terms(text: str) -> list[str]:
    """The index terms of a memory, in order (sidecar/text: by script, stemmed in its language)."""
    return text_terms(text)


class KeywordIndex:
    """Postings of one user's rows (postings.py: words by a 64-bit hash, terms of one or two characters by
    their code points, grams by a 32-bit hash). Rows are numbered as the cache numbers them."""

    def __init__(self) -> None:
        self._words = Postings(np.int64)
        self._pairs = Postings(np.uint32)
        self._grams = Postings(np.uint32)
        self._length: list[np.ndarray] = []  # per row: terms in its text, terms in its borrowed part
        self._borrowed: list[np.ndarray] = []
        self._prev: list[np.ndarray] = []  # per row: the rows (positions) its search_text borrows from, or -1
        self._prev2: list[np.ndarray] = []
        self._glength: list[np.ndarray] = []  # per row: grams in its text, in its borrowed part
        self._gborrowed: list[np.ndarray] = []
        self.rows = 0
        self._norms: dict[tuple[str, bool], np.ndarray] = {}  # (field, grams?) -> BM25's length part per row
        self.nbytes = 0
        self.languages: Counter[str] = Counter()  # the languages of the rows, as sidecar/text decided them

    def extend(self, contents: list[str], prev: list[int], prev2: list[int]) -> None:
        """Index rows numbered from `self.rows` on; prev/prev2: the positions of their previous rows (-1: none)."""
        columns: dict[Postings, tuple[list[int], ...]] = {
            p: ([], [], [], []) for p in (self._words, self._pairs, self._grams)
        }
        lengths, borrowed, glengths, gborrowed = [], [], [], []
        for k, content in enumerate(contents):
            row = self.rows + k
            language, words, grams = analyse_fields(content)
            if language is not None:
                self.languages[language] += 1
            counts = Counter(words)
            gcounts = Counter(grams)
            if len(content) > CONTEXT_CHARS:
                _, tail_words, tail_grams = analyse_fields(content[-CONTEXT_CHARS:], language)
                tail, gtail = Counter(tail_words), Counter(tail_grams)
            else:
                tail, gtail = counts, gcounts
            lengths.append(len(words))
            borrowed.append(sum(tail.values()) if tail is not counts else len(words))
            glengths.append(len(grams))
            gborrowed.append(sum(gtail.values()) if gtail is not gcounts else len(grams))
            if gcounts:
                own_tail = tail is counts
                counts = counts + gcounts
                tail = counts if own_tail else tail + gtail
            keys = counts.keys() | tail.keys() if tail is not counts else counts.keys()
            for term in keys:
                postings, key = self._postings(term)
                h, pos, tf, tail_tf = columns[postings]
                h.append(key)
                pos.append(row)
                tf.append(min(counts.get(term, 0), TF_MAX))
                tail_tf.append(min(tail.get(term, 0), TF_MAX))
        before = self._posting_bytes()
        for postings, found in columns.items():
            postings.add(*found)
        self._length.append(np.array(lengths, np.float32))
        self._borrowed.append(np.array(borrowed, np.float32))
        self._prev.append(np.array(prev, np.int32))
        self._prev2.append(np.array(prev2, np.int32))
        self._glength.append(np.array(glengths, np.float32))
        self._gborrowed.append(np.array(gborrowed, np.float32))
        self.rows += len(contents)
        self._norms.clear()
        self.nbytes += self._posting_bytes() - before + len(contents) * ROW_BYTES

    def _posting_bytes(self) -> int:
        return sum(p.posting_bytes * len(p) for p in (self._words, self._pairs, self._grams))

    def _postings(self, term: str) -> tuple[Postings, int]:
        """Where a term's postings are, under which key: a gram under 32 bits of its hash (a rare collision
        only blurs a fallback), a term of one or two characters under its code points, a longer one under
        its 64-bit hash."""
        if term[0] == GRAM_MARK:
            return self._grams, hash(term) & 0xFFFFFFFF
        short = short_key(term) if len(term) <= 2 else None
        return (self._words, hash(term)) if short is None else (self._pairs, short)

    def _columns(self) -> tuple[np.ndarray, ...]:
        for name in ("_length", "_borrowed", "_prev", "_prev2", "_glength", "_gborrowed"):
            parts = getattr(self, name)
            if len(parts) > 1:
                setattr(self, name, [np.concatenate(parts)])
        return (self._length[0], self._borrowed[0], self._prev[0], self._prev2[0], self._glength[0], self._gborrowed[0])

    def _frequencies(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Dense per-row term frequencies of one term: in the row's text, and in its borrowed part."""
        postings, key = self._postings(term)
        return postings.frequencies(key, self.rows)

    def query_languages(self) -> list[str]:
        """The languages a query is analysed in: those of at least QUERY_LANGUAGE_SHARE of the rows (a line
        the detector took for another language now and then does not add that language's stems)."""
        least = max(1.0, QUERY_LANGUAGE_SHARE * sum(self.languages.values()))
        return sorted(code for code, n in self.languages.items() if n >= least)

    def _query(self, text: str) -> tuple[dict[str, int], list[tuple[list[str], list[str]]], dict[str, int]]:
        """The query's terms and their counts, past MAX_QUERY_TERMS distinct ones the best by tf-idf among
        those the index holds; the stems and grams of its first words that have grams, MAX_QUERY_GRAMS
        grams in all at most (a word's grams all or none; the first word's always); and its unigrams with their
        counts, MAX_QUERY_TERMS of them at most (`_rarest`)."""
        terms, words, singles = query_fields(text, self.query_languages())
        kept: list[tuple[list[str], list[str]]] = []
        grams = 0
        for stems, found in words:
            grams += len(found)
            if kept and grams > MAX_QUERY_GRAMS:
                break
            kept.append((stems, found))
        return self._best(Counter(terms), MAX_QUERY_TERMS), kept, self._rarest(Counter(singles), MAX_QUERY_TERMS)

    def _rarest(self, singles: Counter[str], most: int) -> dict[str, int]:
        """Past `most` distinct unigrams, the `most` held by the fewest rows, among those some row holds (a
        pasted page of Chinese has hundreds of distinct characters)."""
        if len(singles) <= most:
            return singles
        held = [(n, g) for g, n in self._gram_frequencies(list(singles)).items() if n]
        return {g: singles[g] for _, g in sorted(held)[:most]}

    def _best(self, query: Counter[str], most: int) -> dict[str, int]:
        if len(query) <= most:
            return query
        found = self._document_frequencies(list(query))
        scored = [
            (times * math.log(1 + (self.rows - n + 0.5) / (n + 0.5)), term)
            for (term, times), n in zip(query.items(), found.tolist())
            if n
        ]
        return {term: query[term] for _, term in sorted(scored, reverse=True)[:most]}

    def _document_frequencies(self, terms: list[str]) -> np.ndarray:
        """Rows holding each term."""
        shorts = [short_key(t) for t in terms]
        found = np.zeros(len(terms), np.int64)
        words = [i for i, k in enumerate(shorts) if k is None]
        pairs = [i for i, k in enumerate(shorts) if k is not None]
        if words:
            found[words] = self._words.document_frequencies(np.array([hash(terms[i]) for i in words], np.int64))
        if pairs:
            found[pairs] = self._pairs.document_frequencies(np.array([shorts[i] for i in pairs], np.uint32))
        return found

    def _gram_frequencies(self, grams: list[str]) -> dict[str, int]:
        """Rows holding each gram (a gram no row holds costs no further look-up)."""
        if not grams:
            return {}
        keys = np.array([self._postings(g)[1] for g in grams], np.uint32)
        return dict(zip(grams, self._grams.document_frequencies(keys).tolist()))

    def search(self, text: str, field: str, candidates: np.ndarray | None, limit: int) -> list[int]:
        """The best `limit` rows (positions) for the query text in `field` ("content" or "search_text"),
        best first; rows outside `candidates` (a boolean mask; None: all) are never returned, and rows
        sharing no term with the query neither."""
        return [pos for pos, _ in self.ranked(text, field, candidates, limit)]

    def ranked(self, text: str, field: str, candidates: np.ndarray | None, limit: int) -> list[tuple[int, float]]:
        """`search` as (position, BM25 score) pairs."""
        if not self.rows or limit <= 0:
            return []
        query, words, singles = self._query(text)
        if not query and not words and not singles:
            return []
        length, borrowed, prev, prev2, glength, gborrowed = self._columns()
        has1, has2 = prev >= 0, prev2 >= 0

        def field_norm(lengths: np.ndarray, borrows: np.ndarray) -> np.ndarray:
            """BM25's length part per row, kept until rows are added (the same for every query)."""
            key = (field, lengths is glength)
            found = self._norms.get(key)
            if found is None:
                if field == "search_text":
                    lengths = lengths + np.where(has1, borrows[prev], 0) + np.where(has2, borrows[prev2], 0)
                found = self._norms[key] = K1 * (1 - B + B * lengths / max(float(lengths.mean()), 1e-9))
            return found

        def bm25(term: str, norm: np.ndarray) -> np.ndarray | None:
            tf, tail = self._frequencies(term)
            if field == "search_text":
                tf = tf + np.where(has1, tail[prev], 0) + np.where(has2, tail[prev2], 0)
            n = int(np.count_nonzero(tf))
            if not n:
                return None
            idf = math.log(1 + (self.rows - n + 0.5) / (n + 0.5))
            return idf * tf * (K1 + 1) / (tf + norm)

        scores = np.zeros(self.rows, np.float32)
        norm = field_norm(length, borrowed)
        by_term: dict[str, np.ndarray | None] = {}
        for term, times in query.items():
            by_term[term] = found = bm25(term, norm)
            if found is not None:
                scores += times * found
        # a word's grams stand in for its stems where they score more (another form of the word), never add to them
        gram_norm = field_norm(glength, gborrowed) if words or singles else None
        if singles:  # the characters of Han, Kana and Hangul runs: added to the terms, all in one pass
            assert gram_norm is not None  # (there are unigrams)
            keys = np.array([self._postings(g)[1] for g in singles], np.uint32)
            tf, tail = self._grams.frequencies_of(keys, self.rows)
            if field == "search_text":
                tf = tf + np.where(has1, tail[:, prev], 0) + np.where(has2, tail[:, prev2], 0)
            n = np.count_nonzero(tf, axis=1)
            idf = np.log(1 + (self.rows - n + 0.5) / (n + 0.5)).astype(np.float32)
            weight = UNIGRAM_WEIGHT * np.array(list(singles.values()), np.float32) * idf
            scores += (weight[:, None] * tf * (K1 + 1) / (tf + gram_norm)).sum(axis=0)
        held = self._gram_frequencies([g for _, grams in words for g in grams])
        for stems, grams in words:
            assert gram_norm is not None  # (there are words)
            matched = [v for v in (bm25(g, gram_norm) for g in grams if held.get(g)) if v is not None]
            if not matched:
                continue
            fallback = (GRAM_WEIGHT / len(grams)) * np.sum(matched, axis=0)
            own = [by_term[t] if t in by_term else bm25(t, norm) for t in stems]
            exact = np.sum([v for v in own if v is not None], axis=0) if any(v is not None for v in own) else 0.0
            scores += np.maximum(fallback - exact, 0.0)
        hit = scores > 0
        if candidates is not None:
            hit &= candidates
        found = np.flatnonzero(hit)
        if len(found) > limit:
            found = found[np.argpartition(-scores[found], limit - 1)[:limit]]
        found = found[np.lexsort((found, -scores[found]))]
        return list(zip(found.tolist(), scores[found].astype(np.float64).tolist()))
