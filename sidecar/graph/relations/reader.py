"""One text read in one language: the entry point of the relation tier's engine (pure)."""

from __future__ import annotations

from collections.abc import Mapping

from ..lang.types import Lexicon
from .clauses import fold
from .cues import read_cues
from .predicates import FoundRelation
from .state import Reading
from .subjects import read as read_clauses


def read(text: str, known: Mapping[str, str] | None, lexicon: Lexicon) -> list[FoundRelation]:
    """find_relations (the package's one entry point): each relation once, in order of appearance."""
    g = lexicon.clauses
    if lexicon.cues is not None:
        found = read_cues(text, known, lexicon.cues)
    elif g is None or not g.any_subject.search(text):
        return []  # every reading needs a subject word, a name before a verb or a subjectless opener
    else:
        found = read_clauses(Reading(text, known, g))
    seen: set[tuple] = set()
    unique = []
    for r in sorted(found, key=lambda r: r.start):
        key = (fold(r.subject or ""), r.predicate, fold(r.object), r.ended)
        if key not in seen:
            seen.add(key)
            unique.append(r)
    return unique
