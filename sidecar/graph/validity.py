"""Relation validity in one user's graph (a mixin of `UserGraph`, pure): a relation stated, stated again,
closed by a new value of a single-valued predicate or by a statement that it ended, and the relations a
merge made the same. An index by (subject, predicate), built on first use, keeps adding one relation
cheap whatever the number a user has (10,000: a scan of all of them each time before)."""

from __future__ import annotations

from collections.abc import Callable

from .records import Entity, Episode, Relation, fold, stable_id


class Validity:
    relations: dict[str, Relation]
    rel_index: dict[tuple[str, str], tuple[dict[str, list[str]], set[str]]] | None
    user_id: str

    @staticmethod
    def _key(obj_id: str | None, value: str) -> str:
        return obj_id if obj_id is not None else "=" + fold(value)

    def _relations_of(self, subject_id: str, predicate: str) -> tuple[dict[str, list[str]], set[str]]:
        """(object key -> relation ids, the current ones' ids) of one subject's predicate."""
        if self.rel_index is None:
            index: dict[tuple[str, str], tuple[dict[str, list[str]], set[str]]] = {}
            for rel in self.relations.values():
                by_obj, current = index.setdefault((rel.subject_id, rel.predicate), ({}, set()))
                by_obj.setdefault(self._key(rel.object_id, rel.object_value), []).append(rel.id)
                if rel.valid_to is None:
                    current.add(rel.id)
            self.rel_index = index
        return self.rel_index.setdefault((subject_id, predicate), ({}, set()))

    def add_relation(
        self,
        subject: Entity,
        predicate: str,
        single: bool,
        obj: Entity | None,
        value: str,
        episode: Episode,
        confidence: float,
    ) -> tuple[Relation, list[Relation]]:
        """Record a stated relation (or one more episode stating a current one). For a single-valued
        predicate, a current relation with another object is closed at this episode's time (not
        deleted). Returns the relation and the ones it closed."""
        target = self._key(obj.id if obj is not None else None, value)
        by_obj, current = self._relations_of(subject.id, predicate)
        for rel_id in by_obj.get(target, ()):
            if episode.id in self.relations[rel_id].episode_ids:
                return self.relations[rel_id], []  # this episode built again
        for rel_id in by_obj.get(target, ()):
            rel = self.relations[rel_id]
            if rel.valid_to is None:
                rel.episode_ids.append(episode.id)
                return rel, []
        closed = []
        if single:
            for rel_id in list(current):
                rel = self.relations[rel_id]
                if rel.valid_from <= episode.ts:
                    rel.valid_to = episode.ts
                    current.discard(rel_id)
                    closed.append(rel)
        rel = Relation(
            stable_id(self.user_id, subject.id, predicate, _unkeyed(target), episode.id),
            subject.id,
            predicate,
            obj.id if obj is not None else None,
            obj.name if obj is not None else value,
            episode.ts,
            None,
            [episode.id],
            confidence,
        )
        self._put(rel)
        return rel, closed

    def end_relation(
        self, subject: Entity, predicate: str, obj: Entity | None, value: str, episode: Episode, confidence: float
    ) -> tuple[Relation, list[Relation]]:
        """A statement that a relation no longer holds ("I quit Siemens", "I used to live in Oslo"): the current
        one with this object is closed at this episode's time; with none, a relation is recorded that ended
        then (valid_from = valid_to = the episode's time: known to have held, not since when). Returns it and
        the ones closed."""
        target = self._key(obj.id if obj is not None else None, value)
        by_obj, current = self._relations_of(subject.id, predicate)
        for rel_id in by_obj.get(target, ()):
            if episode.id in self.relations[rel_id].episode_ids:
                return self.relations[rel_id], []
        for rel_id in by_obj.get(target, ()):
            rel = self.relations[rel_id]
            if rel.valid_to is None and rel.valid_from <= episode.ts:
                rel.valid_to = episode.ts
                rel.episode_ids.append(episode.id)
                current.discard(rel_id)
                return rel, [rel]
        rel = Relation(
            stable_id(self.user_id, subject.id, predicate, _unkeyed(target), episode.id, "ended"),
            subject.id,
            predicate,
            obj.id if obj is not None else None,
            obj.name if obj is not None else value,
            episode.ts,
            episode.ts,
            [episode.id],
            confidence,
        )
        self._put(rel)
        return rel, []

    def _put(self, rel: Relation) -> None:
        self.relations[rel.id] = rel
        if self.rel_index is not None:
            by_obj, current = self._relations_of(rel.subject_id, rel.predicate)
            by_obj.setdefault(self._key(rel.object_id, rel.object_value), []).append(rel.id)
            if rel.valid_to is None:
                current.add(rel.id)

    def fold_relations(self, single: Callable[[str], bool]) -> list[str]:
        """After a merge: relations that became one (the same subject, predicate and object, both current) are
        joined into the oldest, a relation of an entity with itself is dropped, and of a single-valued
        predicate's current relations only the latest stays current (the others close when it began). Returns
        the ids dropped (their rows are to be deleted). `single`: whether a predicate is single-valued
        (relations.single_valued)."""
        self.rel_index = None
        dropped: list[str] = []
        keep: dict[tuple[str, str, str], Relation] = {}
        for rel in sorted(self.relations.values(), key=lambda r: (r.valid_from, r.id)):
            if rel.object_id is not None and rel.object_id == rel.subject_id:
                dropped.append(rel.id)
                continue
            if rel.valid_to is not None:
                continue
            key = (rel.subject_id, rel.predicate, self._key(rel.object_id, rel.object_value))
            first = keep.get(key)
            if first is None:
                keep[key] = rel
                continue
            first.episode_ids = list(dict.fromkeys(first.episode_ids + rel.episode_ids))
            first.confidence = max(first.confidence, rel.confidence)
            first.fact_id = first.fact_id or rel.fact_id
            dropped.append(rel.id)
        for rel_id in dropped:
            del self.relations[rel_id]
        latest: dict[tuple[str, str], Relation] = {}
        for rel in keep.values():
            if single(rel.predicate):
                k = (rel.subject_id, rel.predicate)
                if k not in latest or rel.valid_from >= latest[k].valid_from:
                    latest[k] = rel
        for rel in keep.values():
            last = latest.get((rel.subject_id, rel.predicate))
            if last is not None and rel is not last:
                rel.valid_to = max(rel.valid_from, last.valid_from)
        return dropped


def _unkeyed(key: str) -> str:
    """An object key as the relation id was always made of: the entity id, or the folded value."""
    return key[1:] if key.startswith("=") else key
