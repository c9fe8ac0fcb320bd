"""The graph's records as the protocol shows them (entity, relation, trace objects of the wire models)."""

from __future__ import annotations

from typing import Any

from ..wire import EntityOut, RelationOut, TraceOut
from .model import UserGraph
from .records import Entity, Trace, decayed


def entity_out(g: UserGraph, e: Entity) -> EntityOut:
    first, last = g.seen(e)
    return EntityOut(
        id=e.id,
        name=e.name,
        type=e.type,
        aliases=sorted(e.aliases),
        salience=round(g.salience(e), 3),
        mentions=len(e.episodes),
        first_seen=int(first),
        last_seen=int(last),
    )


def relation_out(g: UserGraph, r: Any) -> RelationOut:
    """`valid_to` is always present: null while the relation is current."""
    subject = g.entities.get(r.subject_id)
    obj = g.entities.get(r.object_id) if r.object_id else None
    return RelationOut(
        id=r.id,
        subject=subject.name if subject else r.subject_id,
        subject_id=r.subject_id,
        predicate=r.predicate,
        object=obj.name if obj else r.object_value,
        object_id=r.object_id,
        valid_from=int(r.valid_from),
        valid_to=None if r.valid_to is None else int(r.valid_to),
        episode_ids=r.episode_ids,
        confidence=round(r.confidence, 3),
        fact_id=r.fact_id,
    )


def trace_out(t: Trace, now: float) -> TraceOut:
    return TraceOut(
        id=t.id,
        summary=t.summary,
        strength=len(t.episode_ids),
        activation=round(decayed(t.activation, t.updated_at, now), 4),
        episode_ids=t.episode_ids,
        entity_ids=t.entity_ids,
        start=int(t.start),
        end=int(t.end),
    )
