"""Hybrid ranking of messages: weighted reciprocal-rank fusion of the semantic and keyword lists, with
rows by a speaker the query names ranked up. A question written mostly in scripts the embedding model does
not read (Chinese, Russian, Arabic, ... on the English all-MiniLM-L6-v2: embedding/spec.py) is led by its
keyword lists (UNREAD_WEIGHTS): its semantic list is fused as a tie-breaker, since that model's vectors of
such text are close to noise. Pure functions: no LanceDB, no I/O."""

from __future__ import annotations

import re
from typing import Any

from ..storage import rrf
from ..text import written_in

# Weighted reciprocal-rank fusion of three lists, each the best POOL rows of one signal. Chosen on three
# LoCoMo conversations, checked on two held out (docs/performance.md, "Retrieval quality").
POOL = 50  # fused with RRF_K = 10 (storage/search.py)
HYBRID_WEIGHTS = {"semantic": 0.5, "content": 0.3, "search_text": 1.0}
# hybrid, a question whose letters are mostly (over UNREAD_SHARE) in scripts the model does not read: the
# lists' weights, the semantic one a tie-breaker (measured: docs/languages.md, "A script the model does not read")
# (the keyword lists' own weights kept: content at 1.0 cut the small talk shown but ranked fewer answers first)
UNREAD_WEIGHTS = {**HYBRID_WEIGHTS, "semantic": 0.05}
UNREAD_SHARE = 0.5
SPEAKER_BOOST = 1.0  # hybrid: rows by a speaker the query names get their fused score times 1 + this
# hybrid, when the query names a time (messages/timewords.py): the ranking inside that window is fused with
# the ranking over all time at this weight (the latter's is 1). Measured on LoCoMo: docs/performance.md.
TIME_WEIGHT = 1.0


def named_speakers(text: str, usernames: set[str]) -> set[str]:
    """The display names (of the rows at hand) that the query text names as a whole word, case-insensitively."""
    lowered = text.casefold()
    return {
        u
        for u in usernames
        if u.strip() and re.search(r"(?<!\w)" + re.escape(u.strip().casefold()) + r"(?!\w)", lowered)
    }


def hybrid_weights(text: str, scripts: frozenset[str] | None = None) -> dict[str, float]:
    """The lists' weights for a question, given the scripts the model reads (None: every script)."""
    return HYBRID_WEIGHTS if written_in(text, scripts, UNREAD_SHARE) else UNREAD_WEIGHTS


def hybrid_scores(
    text: str, ids: dict[str, list[str]], by_id: dict[str, dict[str, Any]], scripts: frozenset[str] | None = None
) -> dict[str, float]:
    """id -> fused score of the id lists (semantic, content, search_text), speaker boost included; `scripts`:
    those the model reads (None: every script)."""
    scores = rrf(ids, hybrid_weights(text, scripts))
    # a query that names some (not all) of the speakers is about what they said
    speakers = {r["username"] for r in by_id.values() if r.get("username")}
    named = named_speakers(text, speakers)
    if named and named != speakers:
        for rid, row in by_id.items():
            if row.get("username") in named:
                scores[rid] *= 1.0 + SPEAKER_BOOST
    return scores


def fuse_hybrid(
    text: str,
    ids: dict[str, list[str]],
    by_id: dict[str, dict[str, Any]],
    limit: int,
    scripts: frozenset[str] | None = None,
) -> list[dict[str, Any]]:
    """The best `limit` rows of `by_id` by fused rank of the id lists (semantic, content, search_text), each
    with its fused `score`; ties broken by similarity, then id. `scripts`: those the model reads (None: every
    script)."""
    scores = hybrid_scores(text, ids, by_id, scripts)
    best = sorted((i for i in scores if i in by_id), key=lambda i: (-scores[i], -by_id[i]["similarity"], i))
    return [{**by_id[i], "score": scores[i]} for i in best[:limit]]


def fuse_window(everywhere: list[dict[str, Any]], inside: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The best `limit` rows of two rankings, over all time and inside the time the query names, fused
    by reciprocal rank with the window's at TIME_WEIGHT; each with that fused `score`."""
    scores = rrf(
        {"all": [r["id"] for r in everywhere], "window": [r["id"] for r in inside]}, {"all": 1.0, "window": TIME_WEIGHT}
    )
    by_id = {r["id"]: r for r in inside + everywhere}
    best = sorted(scores, key=lambda i: (-scores[i], -by_id[i]["similarity"], i))
    return [{**by_id[i], "score": scores[i]} for i in best[:limit]]
