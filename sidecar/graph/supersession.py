"""Which episodes (memories) of a user's graph were replaced, by which, and when (pure): the graph side of
the query's "what is true now, first" (messages/supersession.py).

An episode stating a relation that was later closed ("I live in Berlin", closed by "moved to Lisbon", or by
"I left Berlin") is replaced by the episode that closed it: the first one stating the new value of the same
subject and predicate (its relation began when the old one ended), else the one that said it ended. The episode
that closed a relation is not replaced by it, nor is one that only said it had ended ("I used to live in Oslo").
Follow the links and a chain of moves ends at the episode stating what is true now; a place left and come back
to ("back in Berlin!") is a new relation, so the first Berlin episode is replaced by Lisbon's, and Lisbon's by
the return. An episode replaced in several relations points at its earliest successor.
"""

from __future__ import annotations

from .model import Relation, UserGraph

Links = dict[str, tuple[str, float, str]]  # episode id -> (replaced by, when that was said, current of the chain)


def replaced(g: UserGraph) -> Links:
    """Every replaced episode of the graph: (its direct successor, that one's time, the last of its chain)."""
    groups: dict[tuple[str, str], list[Relation]] = {}
    for r in g.relations.values():
        groups.setdefault((r.subject_id, r.predicate), []).append(r)
    direct: dict[str, tuple[str, float]] = {}
    for rels in groups.values():
        if all(r.valid_to is None for r in rels):
            continue
        starts: dict[float, list[str]] = {}  # a time -> the episodes at it that began a relation of the group
        for r in rels:
            starts.setdefault(r.valid_from, []).extend(
                e for e in r.episode_ids if e in g.episodes and g.episodes[e].ts == r.valid_from
            )
        for r in rels:
            if r.valid_to is None:
                continue
            end = r.valid_to
            by = sorted(e for e in starts.get(end, ()) if e not in r.episode_ids)
            if not by:  # ended by a statement that it ended ("I quit Siemens"): that episode
                by = sorted(e for e in r.episode_ids if e in g.episodes and g.episodes[e].ts == end)
            if not by:
                continue  # the closing episode was deleted meanwhile
            for e in r.episode_ids:
                ep = g.episodes.get(e)
                if ep is None or ep.ts >= end or e == by[0]:
                    continue
                if e not in direct or end < direct[e][1]:
                    direct[e] = (by[0], end)
    out: Links = {}
    for e, (successor, at) in direct.items():
        current, seen = successor, {e}
        while current in direct and current not in seen:  # (a cycle cannot happen: times only grow; guarded)
            seen.add(current)
            current = direct[current][0]
        out[e] = (successor, at, current)
    return out
