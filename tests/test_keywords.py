"""The in-process BM25 index (sidecar/messages/keywords.py), pure logic: text analysis like LanceDB's
default full-text index, and rankings equal to BM25 computed from scratch over the texts, the
search_text field included (derived from each row's links to its previous rows, never stored)."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import numpy as np

from sidecar.messages.keywords import K1, B, KeywordIndex, terms
from sidecar.messages.postings import short_key
from sidecar.messages.schema import search_text
from sidecar.text import analyse_fields

WORDS = (
    "hiking alps sister violin pizza wombat museum tuesday lisbon kitten garden painting camping "
    "guitar library beach concert recipe marathon chess"
).split()


def bm25_reference(docs: list[str], query: str) -> dict[int, float]:
    """Every doc with a positive BM25 score for the query -> its score, in float64."""
    tokenized = [terms(d) for d in docs]
    avgdl = sum(map(len, tokenized)) / len(docs)
    scores = [0.0] * len(docs)
    for term, times in Counter(terms(query)).items():
        n = sum(term in t for t in tokenized)
        if not n:
            continue
        idf = math.log(1 + (len(docs) - n + 0.5) / (n + 0.5))
        for i, t in enumerate(tokenized):
            tf = t.count(term)
            if tf:
                scores[i] += times * idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(t) / avgdl))
    return {i: s for i, s in enumerate(scores) if s > 0}


def assert_ranked(got: list[int], reference: dict[int, float], what: str) -> None:
    """The same rows as the reference, in order of its scores (the index computes in float32: rows
    whose scores differ by less than 1e-4 may come in either order)."""
    assert sorted(got) == sorted(reference), what
    for a, b in itertools.pairwise(got):
        assert reference[a] >= reference[b] - 1e-4, (what, a, b, reference[a], reference[b])


def corpus(seed: int, n: int) -> tuple[list[str], list[int], list[int]]:
    """n random texts (a few over the borrowed-part limit) and their links: each row's previous two
    rows in a random one of three channels."""
    rng = random.Random(seed)
    docs, prev, prev2, last = [], [], [], {c: [] for c in range(3)}
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
        if i % 17 == 5:  # a long one: only its last 1000 characters are borrowed by the rows after it
            words = [rng.choice(WORDS) for _ in range(300)]
        docs.append("The " + " and ".join(words) + "!")
        chan = last[rng.randrange(3)]
        prev.append(chan[-1] if chan else -1)
        prev2.append(chan[-2] if len(chan) > 1 else -1)
        chan.append(i)
    return docs, prev, prev2


def index_of(docs, prev, prev2, step):
    index = KeywordIndex()
    for start in range(0, len(docs), step):
        index.extend(docs[start : start + step], prev[start : start + step], prev2[start : start + step])
    return index


def test_text_analysis_of_english():
    assert terms("The Hiking-trip to Zürich, wasn't it? 2023_05") == ["hike", "trip", "zurich", "2023", "05"]
    assert terms("and the of is being") == []  # English stop words, after stemming ("being" -> "be")
    assert terms("during") == ["dure"]  # not a stop word once stemmed
    assert terms("x" * 39 + " " + "y" * 40) == ["x" * 39]  # tokens of 40 characters or more are dropped
    assert terms("CARESSES ponies") == ["caress", "poni"]


def test_a_word_finds_its_row_exactly_when_it_is_not_a_stop_word():
    """Through the index itself: a content word finds the one row that holds it, an English function
    word finds nothing (it would match every row); the list is ours (sidecar/text/stopwords.py), not
    any library's, so a LanceDB upgrade cannot change what a query finds."""
    function_words = (
        "i me we you he she it they what which who whom this that am is was be been being have "
        "has had do does did doing a an the and but if or because as until while of at by for with "
        "about against between into through during before after above below up down in out on off "
        "over under again further then once here there when where why how all any both each few "
        "more most other some such no nor not only own same so than too very can will just "
        "should now"
    ).split()
    content_words = "hiking pottery caroline yourselves violin lisbon".split()
    words = function_words + content_words
    index = index_of([f"filler {w}" for w in words], [-1] * len(words), [-1] * len(words), len(words))
    for i, w in enumerate(words):
        found = index.search(w, "content", None, 3)
        assert (i in found) == bool(terms(w)), w
    assert all(terms(w) for w in content_words)
    assert not any(terms(w) for w in ("i", "the", "and", "is", "of", "was", "been", "being"))


def check_equal_to_reference(index, docs, prev, prev2, queries):
    windows = [search_text(docs[i], [docs[j] for j in (prev2[i], prev[i]) if j >= 0]) for i in range(len(docs))]
    for q in queries:
        assert_ranked(index.search(q, "content", None, len(docs)), bm25_reference(docs, q), q)
        assert_ranked(index.search(q, "search_text", None, len(docs)), bm25_reference(windows, q), q)


def test_rankings_equal_bm25_from_scratch_in_both_fields():
    docs, prev, prev2 = corpus(1, 120)
    queries = ["hiking", "wombat museum", "violin violin pizza", "the Lisbon Kitten", "nothing matches"]
    check_equal_to_reference(index_of(docs, prev, prev2, 120), docs, prev, prev2, queries)


def test_appending_in_small_steps_gives_the_same_index():
    """Rows appended one commit at a time (the unsorted tail, and its merges past 4,096 postings)
    rank exactly like rows indexed at once."""
    docs, prev, prev2 = corpus(2, 700)
    whole, steps = index_of(docs, prev, prev2, 700), index_of(docs, prev, prev2, 3)
    for q in ("camping guitar", "chess", "beach marathon recipe"):
        for field in ("content", "search_text"):
            assert whole.search(q, field, None, 50) == steps.search(q, field, None, 50)
    check_equal_to_reference(steps, docs, prev, prev2, ["garden painting", "alps"])


def test_filter_applies_before_the_limit():
    docs = ["wombat"] * 5 + ["wombat wombat wombat"] + ["other"] * 4
    index = index_of(docs, [-1] * 10, [-1] * 10, 10)
    keep = np.zeros(10, bool)
    keep[[1, 3, 8]] = True
    assert index.search("wombat", "content", keep, 1) == [1]  # the best *kept* row, not the best row
    assert index.search("wombat", "content", None, 1) == [5]
    assert index.search("wombat", "content", keep, 10) == [1, 3]  # "other" shares no term: never returned
    assert index.search("", "content", None, 10) == [] and KeywordIndex().search("wombat", "content", None, 5) == []


def test_memory_is_counted():
    """14 bytes per posting of a word (64-bit hash, row, two frequencies), 10 per posting of a term of one or two
    characters (its code points in 32 bits: a CJK bigram) and of a gram (a 32-bit hash: here the unigrams of
    the Han and Kana runs), 16 per row."""
    docs, prev, prev2 = corpus(3, 200)
    docs += ["我最喜欢的食物是饺子", "一番好きな食べ物はラーメンです and some words", "go to the zoo"]
    prev, prev2 = prev + [-1] * 3, prev2 + [-1] * 3
    index = index_of(docs, prev, prev2, 7)
    kept = [set(terms(d)) | set(terms(d[-1000:])) for d in docs]
    short = sum(1 for k in kept for t in k if short_key(t) is not None)
    assert short > 20
    grams = sum(len(set(analyse_fields(d)[2]) | set(analyse_fields(d[-1000:])[2])) for d in docs)
    assert grams == len(set("我最喜欢的食物是饺子")) + len(set("一番好きな食べ物はラーメンです"))
    assert index.nbytes == (sum(map(len, kept)) - short) * 14 + (short + grams) * 10 + len(docs) * 16


def test_frequencies_of_several_keys_equal_one_key_at_a_time():
    """Postings.frequencies_of (the unigrams of a query, in one pass) against frequencies, key by key: keys in
    the sorted part, in the unsorted tail, in both, repeated, and missing."""
    from sidecar.messages.postings import Postings

    rng = np.random.default_rng(5)
    postings = Postings(np.uint32)
    rows = 300
    pairs = rng.choice(60 * rows, 6000, replace=False)  # distinct (key, row) pairs, as an index has them
    for start in range(0, 6000, 1000):  # past 4096 the tail is merged into the sorted part; then a new tail
        part = pairs[start : start + 1000]
        keys, at = (part // rows).tolist(), (part % rows).tolist()
        postings.add(keys, at, rng.integers(1, 9, 1000).tolist(), rng.integers(0, 3, 1000).tolist())
    wanted = np.array([3, 59, 3, 70, 1, 60], np.uint32)
    tf, tail = postings.frequencies_of(wanted, rows)
    for i, key in enumerate(wanted.tolist()):
        one_tf, one_tail = postings.frequencies(key, rows)
        assert np.array_equal(tf[i], one_tf) and np.array_equal(tail[i], one_tail), key
    assert not tf[3].any() and not tf[5].any()  # keys no row holds
