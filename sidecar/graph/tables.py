"""The graph's tables: their names and schemas, and reading their rows back into users' graphs (the
sidecar's `GraphStore` and the read-only inspector both read through `read_graphs`). Writing them is
store.py's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..storage import sql_str
from .model import Entity, Episode, Relation, Trace, UserGraph


EPISODES, ENTITIES, MENTIONS, RELATIONS, TRACES, LINKS = (
    "graph_episodes", "graph_entities", "graph_mentions", "graph_relations", "graph_traces", "graph_links")
_S, _F, _I = pa.string(), pa.float64(), pa.int32()
REV = "rev"  # the commit that wrote a row (store.py's docstring)


def schemas(dim: int) -> dict[str, pa.Schema]:
    def s(*fields: tuple[str, pa.DataType, bool]) -> pa.Schema:
        return pa.schema([pa.field(n, t, nullable=null) for n, t, null in (*fields, (REV, pa.int64(), True))])

    return {
        EPISODES: s(("id", _S, False), ("user_id", _S, False), ("ts", _F, False), ("channel_id", _S, True),
                    ("message_id", _S, True), ("reply_to", _S, True), ("quality", pa.float32(), False),
                    ("low", pa.bool_(), False), ("trace_id", _S, True)),
        ENTITIES: s(("id", _S, False), ("user_id", _S, False), ("name", _S, False), ("type", _S, False),
                    ("aliases", pa.list_(_S), False), ("activation", pa.float32(), False)),
        MENTIONS: s(("id", _S, False), ("user_id", _S, False), ("episode_id", _S, False), ("entity_id", _S, False),
                    ("seq", _I, False)),
        RELATIONS: s(("id", _S, False), ("user_id", _S, False), ("subject_id", _S, False), ("predicate", _S, False),
                     ("object_id", _S, True), ("object_value", _S, False), ("valid_from", _F, False),
                     ("valid_to", _F, True), ("episode_ids", pa.list_(_S), False), ("confidence", pa.float32(), False),
                     ("fact_id", _S, True)),
        TRACES: s(("id", _S, False), ("user_id", _S, False), ("summary", _S, False),
                  ("episode_ids", pa.list_(_S), False), ("entity_ids", pa.list_(_S), False),
                  ("activation", pa.float32(), False), ("start", _F, False), ("end", _F, False),
                  ("created_at", _F, False), ("updated_at", _F, False), ("vector", pa.list_(pa.float32(), dim), False)),
        LINKS: s(("id", _S, False), ("user_id", _S, False), ("a", _S, False), ("b", _S, False),
                 ("weight", pa.float32(), False)),
    }


TABLES = (EPISODES, ENTITIES, MENTIONS, RELATIONS, TRACES, LINKS)


def _read(table: Any, where: str, twice: set[str] | None = None) -> list[dict[str, Any]]:
    """The rows matching `where`, one per id (ids found twice added to `twice`), without `rev`."""
    data = table.search().where(where).limit(None).to_arrow()
    if REV in data.column_names:
        kept = last_of_each(data)
        if kept.num_rows < data.num_rows and twice is not None:
            seen: set[str] = set()
            twice.update(i for i in data.column("id").to_pylist() if i in seen or seen.add(i))
        data = kept.drop_columns([REV])
    if "vector" not in data.column_names or not data.num_rows:
        return data.to_pylist()
    # vectors through numpy (float16, one small array each): to_pylist made a Python float of every value
    flat = data.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    matrix = flat.reshape(data.num_rows, -1).astype(np.float16)
    rows = data.drop_columns(["vector"]).to_pylist()
    for row, vector in zip(rows, matrix):
        row["vector"] = vector.copy()
    return rows


def read_graphs(tables: dict[str, Any], user_ids: list[str],
                stale: dict[str, set[str]] | None = None) -> dict[str, UserGraph]:
    """Several users' graphs read from the graph tables (name -> LanceDB table), one read per table per
    200 users; ids found twice are added to `stale` (table name -> ids) when given. Only reads: also used
    by the read-only inspector, beside a running sidecar."""
    graphs = {uid: UserGraph(uid) for uid in user_ids}
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
    for start in range(0, len(user_ids), 200):
        where = f"user_id IN ({', '.join(sql_str(u) for u in user_ids[start:start + 200])})"
        for name in TABLES:
            rows[name] += _read(tables[name], where, None if stale is None else stale.setdefault(name, set()))
    if stale is not None:
        for name in [n for n, ids in stale.items() if not ids]:
            del stale[name]
    by_user: dict[str, dict[str, list]] = {uid: {name: [] for name in TABLES} for uid in user_ids}
    for name, table_rows in rows.items():
        for r in table_rows:
            by_user[r["user_id"]][name].append(r)
    for uid, g in graphs.items():
        _fill(g, by_user[uid])
    return graphs


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


def _fill(g: UserGraph, rows: dict[str, list[dict[str, Any]]]) -> None:
    """A user's graph from its table rows."""
    for r in rows[EPISODES]:
        g.episodes[r["id"]] = Episode(r["id"], r["ts"], r["channel_id"], r["message_id"], r["reply_to"],
                                      r["quality"], r["low"], [], r["trace_id"])
        if r["message_id"]:
            g.by_message_id[r["message_id"]] = r["id"]
    for r in rows[ENTITIES]:
        g.entities[r["id"]] = Entity(r["id"], r["name"], r["type"], set(r["aliases"]), r["activation"])
    order = sorted(rows[MENTIONS], key=lambda r: (g.episodes[r["episode_id"]].ts if r["episode_id"] in g.episodes
                                                   else 0.0, r["episode_id"], r["seq"]))
    for r in order:
        entity, episode = g.entities.get(r["entity_id"]), g.episodes.get(r["episode_id"])
        if entity is not None and episode is not None and entity.id not in episode.entity_ids:
            entity.episodes.append(episode.id)
            episode.entity_ids.append(entity.id)
    for entity in g.entities.values():
        g.index(entity)
    # one string object per id: the lists below reuse the episodes' and entities' own (a third of the bytes)
    eps = {k: k for k in g.episodes}
    ents = {k: k for k in g.entities}
    for r in rows[RELATIONS]:
        g.relations[r["id"]] = Relation(r["id"], r["subject_id"], r["predicate"], r["object_id"], r["object_value"],
                                        r["valid_from"], r["valid_to"], [eps.get(e, e) for e in r["episode_ids"]],
                                        r["confidence"], r["fact_id"])
    for r in rows[TRACES]:
        g.traces[r["id"]] = Trace(r["id"], r["summary"], [eps.get(e, e) for e in r["episode_ids"]],
                                  [ents.get(e, e) for e in r["entity_ids"]], r["activation"], r["start"], r["end"],
                                  r["created_at"], r["updated_at"], np.asarray(r["vector"], dtype=np.float16))
    tids = {k: k for k in g.traces}
    for ep in g.episodes.values():
        ep.trace_id = tids.get(ep.trace_id, ep.trace_id)
    for r in rows[LINKS]:
        g.links[(tids.get(r["a"], r["a"]), tids.get(r["b"], r["b"]))] = r["weight"]
