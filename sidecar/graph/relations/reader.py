"""One text read clause by clause: the subject side (subjects.py) and the predicate side (objects.py)."""

from __future__ import annotations

from collections.abc import Mapping

from .objects import Objects
from .predicates import FoundRelation
from .subjects import Subjects
from .words import ANY, fold


class _Reader(Subjects, Objects):
    """One text read: the subject side and the predicate side."""


def read(text: str, known: Mapping[str, str] | None = None) -> list[FoundRelation]:
    """find_relations (the package's one entry point): each relation once, in order of appearance."""
    if not ANY.search(text):
        return []  # every reading needs a subject word, a name before a verb or a subjectless opener
    found = _Reader(text, known).read()
    seen: set[tuple] = set()
    unique = []
    for r in sorted(found, key=lambda r: r.start):
        key = (fold(r.subject or ""), r.predicate, fold(r.object), r.ended)
        if key not in seen:
            seen.add(key)
            unique.append(r)
    return unique
