"""Rank fusion for hybrid search, shared by messages (`store.py`) and facts (`fact_store.py`).
Pure functions: no LanceDB, no I/O."""

from __future__ import annotations

import re

RRF_K = 10


def rrf(lists: dict[str, list[str]], weights: dict[str, float], k: int = RRF_K) -> dict[str, float]:
    """Weighted reciprocal-rank fusion: id -> sum over lists of weight / (k + rank), rank from 1."""
    scores: dict[str, float] = {}
    for name, ids in lists.items():
        w = weights[name]
        for rank, rid in enumerate(ids, 1):
            scores[rid] = scores.get(rid, 0.0) + w / (k + rank)
    return scores


def named_speakers(text: str, usernames: set[str]) -> set[str]:
    """The display names (of the rows at hand) that the query text names as a whole word, case-insensitively."""
    lowered = text.casefold()
    return {u for u in usernames
            if u.strip() and re.search(r"(?<!\w)" + re.escape(u.strip().casefold()) + r"(?!\w)", lowered)}
