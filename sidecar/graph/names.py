"""Resolution by meaning, for names of things that are not people: a new name joins the known entity
of the same type whose name is closest to it by cosine, when that is at least THRESHOLD ("NYC" ->
"New York City", "Mt. Everest" -> "Everest"). People are never matched this way: single-word names
embed close to one another (the Bud service dropped it for that reason), and MiniLM does the same.

THRESHOLD is measured on tests/fixtures/entity_aliases.json (alias groups we labelled; every other
pair of the same type is a different thing): on the pairs that the compact-name rule does not already
join, 0.85 gives precision 0.97 and recall 0.32 with the shipped int8 model (0.80: 0.93 / 0.46; 0.88: 0.96 /
0.26). 0.84, chosen with the fp32-computing model, sits on a wrong pair ("Washington State" / "Washington
DC", 0.8395 there, 0.8401 with int8 weights): 0.97 / 0.35 with one model, 0.94 / 0.35 with the other. A wrong
merge costs more than a missed one (hosts can `merge_entities`; unmerging does not exist), so
precision decides. Vectors are cached per graph by folded name (float16), never stored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .model import UserGraph
from .records import Entity, fold

THRESHOLD = 0.85
CANDIDATES = 500  # the most recently mentioned entities of the type that a new name is compared with


class NameMatcher:
    def __init__(self, embed: Callable[[Sequence[str]], np.ndarray], threshold: float = THRESHOLD):
        self.embed = embed  # texts -> normalised vectors, one row each
        self.threshold = threshold

    def vectors(self, g: UserGraph, keys: list[str]) -> np.ndarray:
        missing = [k for k in dict.fromkeys(keys) if k not in g.name_vectors]
        if missing:
            for k, v in zip(missing, self.embed(missing)):
                g.name_vectors[k] = np.asarray(v, dtype=np.float16)
        return np.stack([g.name_vectors[k] for k in keys]).astype(np.float32)

    def __call__(self, g: UserGraph, key: str, type_: str) -> Entity | None:
        """The known entity of this type that the folded name `key` most likely means, or None."""
        same = [e for e in g.entities.values() if e.type == type_ and e.episodes]
        if not same:
            self.vectors(g, [key])  # kept: the entity about to be made is compared with later
            return None
        same = sorted(same, key=lambda e: len(e.episodes), reverse=True)[:CANDIDATES]
        keys = [fold(e.name) for e in same]
        matrix = self.vectors(g, [*keys, key])
        sims = matrix[:-1] @ matrix[-1]
        best = int(np.argmax(sims))
        return same[best] if sims[best] >= self.threshold else None
