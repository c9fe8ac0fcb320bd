"""The graph's tables: their names and schemas, and reading their rows back into users' graphs (the
sidecar's `GraphStore` and the read-only inspector both read through `read_graphs`). Writing them is
store.py's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..storage import sql_str
from .model import UserGraph
from .records import Entity, Episode, Relation, Trace

EPISODES, ENTITIES, MENTIONS, RELATIONS, TRACES, LINKS = (
    "graph_episodes",
    "graph_entities",
    "graph_mentions",
    "graph_relations",
    "graph_traces",
    "graph_links",
)
_S, _F, _I = pa.string(), pa.float64(), pa.int32()
REV = "rev"  # the commit that wrote a row (store.py's docstring)


def schemas(dim: int) -> dict[str, pa.Schema]:
    def s(*fields: tuple[str, pa.DataType, bool]) -> pa.Schema:
        return pa.schema([pa.field(n, t, nullable=null) for n, t, null in (*fields, (REV, pa.int64(), True))])

    return {
        EPISODES: s(
            ("id", _S, False),
            ("user_id", _S, False),
            ("ts", _F, False),
            ("channel_id", _S, True),
            ("message_id", _S, True),
            ("reply_to", _S, True),
            ("quality", pa.float32(), False),
            ("low", pa.bool_(), False),
            ("trace_id", _S, True),
        ),
        ENTITIES: s(
            ("id", _S, False),
            ("user_id", _S, False),
            ("name", _S, False),
            ("type", _S, False),
            ("aliases", pa.list_(_S), False),
            ("activation", pa.float32(), False),
        ),
        MENTIONS: s(
            ("id", _S, False),
            ("user_id", _S, False),
            ("episode_id", _S, False),
            ("entity_id", _S, False),
            ("seq", _I, False),
        ),
        RELATIONS: s(
            ("id", _S, False),
            ("user_id", _S, False),
            ("subject_id", _S, False),
            ("predicate", _S, False),
            ("object_id", _S, True),
            ("object_value", _S, False),
            ("valid_from", _F, False),
            ("valid_to", _F, True),
            ("episode_ids", pa.list_(_S), False),
            ("confidence", pa.float32(), False),
            ("fact_id", _S, True),
        ),
        TRACES: s(
            ("id", _S, False),
            ("user_id", _S, False),
            ("summary", _S, False),
            ("episode_ids", pa.list_(_S), False),
            ("entity_ids", pa.list_(_S), False),
            ("activation", pa.float32(), False),
            ("start", _F, False),
            ("end", _F, False),
            ("created_at", _F, False),
            ("updated_at", _F, False),
            ("vector", pa.list_(pa.float32(), dim), False),
        ),
        LINKS: s(
            ("id", _S, False),
            ("user_id", _S, False),
            ("a", _S, False),
            ("b", _S, False),
            ("weight", pa.float32(), False),
        ),
    }


TABLES = (EPISODES, ENTITIES, MENTIONS, RELATIONS, TRACES, LINKS)


# The columns a graph is filled from, per table (user_id only sorts rows by user; a mention's own id is unused).
# Read column by column: a dict per row (to_pylist on the table) made every load churn through short-lived
# objects between the ones the graph keeps, and Python frees an object arena only when all of it is free.
COLUMNS = {
    EPISODES: ("id", "ts", "channel_id", "message_id", "reply_to", "quality", "low", "trace_id"),
    ENTITIES: ("id", "name", "type", "aliases", "activation"),
    MENTIONS: ("episode_id", "entity_id", "seq"),
    RELATIONS: (
        "id",
        "subject_id",
        "predicate",
        "object_id",
        "object_value",
        "valid_from",
        "valid_to",
        "episode_ids",
        "confidence",
        "fact_id",
    ),
    TRACES: ("id", "summary", "episode_ids", "entity_ids", "activation", "start", "end", "created_at", "updated_at"),
    LINKS: ("a", "b", "weight"),
}


def _read(table: Any, where: str, twice: set[str] | None = None) -> pa.Table:
    """The rows matching `where`, one per id (ids found twice added to `twice`)."""
    data = table.search().where(where).limit(None).to_arrow()
    if REV in data.column_names:
        kept = last_of_each(data)
        if kept.num_rows < data.num_rows and twice is not None:
            seen: set[str] = set()
            for i in data.column("id").to_pylist():
                if i in seen:
                    twice.add(i)
                seen.add(i)
        data = kept
    return data


def _per_user(data: pa.Table) -> dict[str, pa.Table]:
    """A table's rows split by user, each user's in the table's order (users without rows absent)."""
    if not data.num_rows:
        return {}
    codes = data.column("user_id").combine_chunks().dictionary_encode()
    index = codes.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(index, kind="stable")
    bounds = np.searchsorted(index[order], np.arange(len(codes.dictionary) + 1))
    data = data.take(order)  # one take, then slices (a take per user cost 0.7 ms each over LanceDB's many chunks)
    return {uid: data.slice(bounds[k], bounds[k + 1] - bounds[k]) for k, uid in enumerate(codes.dictionary.to_pylist())}


def read_rows(
    tables: dict[str, Any], user_ids: list[str], stale: dict[str, set[str]] | None = None
) -> dict[str, dict[str, pa.Table]]:
    """Several users' rows from the graph tables (name -> LanceDB table), one read per table per 200 users:
    user id -> table name -> that user's rows (Arrow, as read: compact, until `graph_of` makes the objects).
    Ids found twice are added to `stale` (table name -> ids) when given."""
    by_user: dict[str, dict[str, pa.Table]] = {uid: {} for uid in user_ids}
    for start in range(0, len(user_ids), 200):
        where = f"user_id IN ({', '.join(sql_str(u) for u in user_ids[start : start + 200])})"
        for name in TABLES:
            data = _read(tables[name], where, None if stale is None else stale.setdefault(name, set()))
            for uid, rows in _per_user(data).items():
                by_user[uid][name] = rows
    if stale is not None:
        for name in [n for n, ids in stale.items() if not ids]:
            del stale[name]
    return by_user


def read_graphs(
    tables: dict[str, Any], user_ids: list[str], stale: dict[str, set[str]] | None = None
) -> dict[str, UserGraph]:
    """Several users' graphs (see `read_rows`). Only reads: also used by the read-only inspector, beside a
    running sidecar."""
    return {uid: graph_of(uid, rows) for uid, rows in read_rows(tables, user_ids, stale).items()}


def last_of_each(data: pa.Table) -> pa.Table:
    """One row per id: the one of the highest `rev` (the last of them on a tie, or without `rev`)."""
    if pc.count_distinct(data.column("id")).as_py() == data.num_rows:
        return data
    revs = data.column(REV).to_pylist() if REV in data.column_names else [None] * data.num_rows
    best: dict[str, int] = {}
    for i, key in enumerate(data.column("id").to_pylist()):
        j = best.get(key)
        if j is None or (revs[i] or 0) >= (revs[j] or 0):
            best[key] = i
    return data.take(sorted(best.values()))


def _columns(data: dict[str, pa.Table], name: str) -> Any:
    """The table's rows of one user as tuples of COLUMNS[name], in the table's order."""
    rows = data.get(name)
    if rows is None:
        return iter(())
    return zip(*(rows.column(c).to_pylist() for c in COLUMNS[name]))


def graph_of(user_id: str, data: dict[str, pa.Table]) -> UserGraph:
    """A user's graph from its table rows (table name -> that user's rows, from `read_rows`)."""
    g = UserGraph(user_id)
    for id_, ts, channel_id, message_id, reply_to, quality, low, trace_id in _columns(data, EPISODES):
        g.episodes[id_] = Episode(id_, ts, channel_id, message_id, reply_to, quality, low, [], trace_id)
        if message_id:
            g.by_message_id[message_id] = id_
    for id_, name, type_, aliases, activation in _columns(data, ENTITIES):
        g.entities[id_] = Entity(id_, name, type_, set(aliases), activation)
    order = sorted(
        _columns(data, MENTIONS), key=lambda m: (g.episodes[m[0]].ts if m[0] in g.episodes else 0.0, m[0], m[2])
    )
    for episode_id, entity_id, _seq in order:
        entity, episode = g.entities.get(entity_id), g.episodes.get(episode_id)
        if entity is not None and episode is not None and entity.id not in episode.entity_ids:
            entity.episodes.append(episode.id)
            episode.entity_ids.append(entity.id)
    for entity in g.entities.values():
        g.index(entity)
    # one string object per id: the lists below reuse the episodes' and entities' own (a third of the bytes)
    eps = {k: k for k in g.episodes}
    ents = {k: k for k in g.entities}
    for id_, subject, predicate, obj, value, start, end, episode_ids, confidence, fact_id in _columns(data, RELATIONS):
        g.relations[id_] = Relation(
            id_, subject, predicate, obj, value, start, end, [eps.get(e, e) for e in episode_ids], confidence, fact_id
        )
    _fill_traces(g, data, eps, ents)
    tids = {k: k for k in g.traces}
    for ep in g.episodes.values():
        if ep.trace_id is not None:
            ep.trace_id = tids.get(ep.trace_id, ep.trace_id)
    for a, b, weight in _columns(data, LINKS):
        g.links[(tids.get(a, a), tids.get(b, b))] = weight
    return g


def _fill_traces(g: UserGraph, data: dict[str, pa.Table], eps: dict[str, str], ents: dict[str, str]) -> None:
    rows = data.get(TRACES)
    if rows is None:
        return
    # the vectors as one float16 matrix of the user's, each trace's a row of it (one array per trace made
    # a small block of the C heap each, freed one by one as consolidation replaced them)
    flat = rows.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    matrix = flat.reshape(rows.num_rows, -1).astype(np.float16)
    for (id_, summary, episode_ids, entity_ids, activation, start, end, created, updated), vector in zip(
        _columns(data, TRACES), matrix
    ):
        g.traces[id_] = Trace(
            id_,
            summary,
            [eps.get(e, e) for e in episode_ids],
            [ents.get(e, e) for e in entity_ids],
            activation,
            start,
            end,
            created,
            updated,
            vector,
        )
