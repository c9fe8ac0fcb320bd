"""The quality filter's second half, pure: how much new a message brings (new entities, distance from the
user's recent messages). The first half, is it a backchannel ("ok", "lol", "thanks!", emoji only), is
sidecar/text's `is_backchannel` (text/smalltalk.py), shared with `query` and `context`. Low-quality episodes
stay stored and searchable; they make no entities or traces and weigh less in graph recall.
"""

from __future__ import annotations


def novelty(new_entities: int, mentions: int, max_similarity: float | None) -> float:
    """0..1: how much a message brings that the user's graph does not have yet. Half from its entities
    (the share of its mentions that are new; none -> 0), half from its semantic distance to the user's
    recent episodes (1 - the best cosine; no history -> 1)."""
    entity_part = new_entities / mentions if mentions else 0.0
    distance = 1.0 if max_similarity is None else max(0.0, min(1.0, 1.0 - max_similarity))
    return 0.5 * entity_part + 0.5 * distance
