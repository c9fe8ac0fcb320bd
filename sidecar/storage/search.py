"""Search helpers every table with vectors shares: a filtered cosine search on a LanceDB table, and
weighted reciprocal-rank fusion of ranked id lists (pure)."""

from __future__ import annotations

from typing import Any

import numpy as np

RRF_K = 10


def cosine_search(table: Any, vector: np.ndarray, where: str, columns: list[str], limit: int) -> list[dict[str, Any]]:
    """The `limit` rows of a LanceDB table nearest to `vector` among those matching `where` (filtered
    before ranking), best first, each with its cosine `similarity`."""
    result = (
        table.search(vector.astype(np.float32), vector_column_name="vector")
        .distance_type("cosine")
        .where(where, prefilter=True)
        .select([*columns, "_distance"])
        .limit(limit)
        .to_arrow()
    )
    rows = result.to_pylist()
    for r in rows:
        r["similarity"] = 1.0 - float(r.pop("_distance"))
    return rows


def rrf(lists: dict[str, list[str]], weights: dict[str, float], k: int = RRF_K) -> dict[str, float]:
    """Weighted reciprocal-rank fusion: id -> sum over lists of weight / (k + rank), rank from 1."""
    scores: dict[str, float] = {}
    for name, ids in lists.items():
        w = weights[name]
        for rank, rid in enumerate(ids, 1):
            scores[rid] = scores.get(rid, 0.0) + w / (k + rank)
    return scores
