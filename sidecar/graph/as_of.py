"""A user's graph as it was at a time (pure): what `as_of` reads. Episodes said by then; relations stated by
then (`valid_from <= t`), open again when what closed them came later (`valid_to > t`: `valid_to` is null in the
copy), each with only the episodes said by then; entities mentioned by then or named by such a relation; traces
begun by then, with only their episodes said by then. A time at or after every episode (or in the future) gives
the same graph's contents as now.

Relations, entities and traces are copies (the graph it was made from is left as it is); episodes and name
vectors are shared, read only. Costs one pass over the user's graph, made under the graphs' lock.
"""

from __future__ import annotations

from dataclasses import replace

from .model import UserGraph


def at(g: UserGraph, t: float) -> UserGraph:
    """`g` as it was at unix time `t` (see the module's docstring)."""
    episodes = {i: ep for i, ep in g.episodes.items() if ep.ts <= t}
    relations = {}
    for rid, r in g.relations.items():
        if r.valid_from > t:
            continue
        relations[rid] = replace(
            r,
            valid_to=r.valid_to if r.valid_to is not None and r.valid_to <= t else None,
            episode_ids=[e for e in r.episode_ids if e in episodes] or list(r.episode_ids),
        )
    named = {r.subject_id for r in relations.values()} | {r.object_id for r in relations.values() if r.object_id}
    entities = {}
    for eid, e in g.entities.items():
        said = [x for x in e.episodes if x in episodes]
        if said or eid in named:
            entities[eid] = replace(e, aliases=set(e.aliases), episodes=said)
    traces = {}
    for tid, tr in g.traces.items():
        kept = [x for x in tr.episode_ids if x in episodes]
        if kept:
            traces[tid] = replace(
                tr,
                episode_ids=kept,
                entity_ids=[x for x in tr.entity_ids if x in entities],
                end=max(episodes[x].ts for x in kept),
                start=min(episodes[x].ts for x in kept),
            )
    return UserGraph(
        user_id=g.user_id,
        entities=entities,
        episodes=episodes,
        relations=relations,
        traces=traces,
        links={k: w for k, w in g.links.items() if k[0] in traces and k[1] in traces},
        by_key={k: v for k, v in g.by_key.items() if v in entities},
        by_compact={k: v for k, v in g.by_compact.items() if v in entities},
        name_vectors=g.name_vectors,
        by_message_id={k: v for k, v in g.by_message_id.items() if v in episodes},
        max_words=g.max_words,
    )
