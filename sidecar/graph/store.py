"""The graph's tables in the data dir's LanceDB: episodes (per-message graph data: quality, trace;
the text and vector stay in the messages table), entities, mentions, relations, traces and trace
links. Loads one user's graph, saves what changed in one commit per table, deletes a user.

Every row is keyed so that writing it twice is harmless (merge on `id`): the builder may redo an
episode after a crash, and the result is the same. An episode row is written last: it marks the
message as done, so a message without one is (re)built at the next start.

Locks, always in this order: `writes` (every write and every compaction of these tables: a merge or a
delete and a compaction that rewrites the same fragments cannot both commit), then the message store's
`lock` (every read, the deletes and the exclusive compaction). The builder's and consolidation's commits
and the background compaction hold `writes` alone, so stores and queries, which need only the message
store's lock, never wait for them; a graph read meanwhile sees each table before or after its commit
(LanceDB's versions), as after a crash between two of a commit's tables, which loading tolerates (an
episode row, written last, is what marks a message as built). Commits held the message store's lock
until 2026-11-27: right after a batch import a commit took 60-160 ms (six tables, two merges), and the
requests that came meanwhile waited for it (`realuse` (a): p99s 11-21x the floor, up to 149 ms, in three
runs of four; 2-7x and at most 47 ms in four runs since; docs/performance.md).
"""

from __future__ import annotations

import threading
import warnings
from contextlib import nullcontext
from datetime import timedelta
from typing import Any, Iterable

import numpy as np
import pyarrow as pa

from ..storage import Database, compact_tables, sql_in, sql_str
from .model import Entity, Episode, Relation, Trace, UserGraph


EPISODES, ENTITIES, MENTIONS, RELATIONS, TRACES, LINKS = (
    "graph_episodes", "graph_entities", "graph_mentions", "graph_relations", "graph_traces", "graph_links")
_S, _F, _I = pa.string(), pa.float64(), pa.int32()


def schemas(dim: int) -> dict[str, pa.Schema]:
    def s(*fields: tuple[str, pa.DataType, bool]) -> pa.Schema:
        return pa.schema([pa.field(n, t, nullable=null) for n, t, null in fields])

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


class GraphStore:
    def __init__(self, database: Database, lock: threading.RLock, on_write: Any = None):
        self.dim = database.dim
        self.lock = lock  # the message store's table lock: LanceDB work never interleaves
        self.writes = threading.RLock()  # graph writes and compactions (see the module's docstring)
        self._on_write = on_write or (lambda: None)
        self._schemas = schemas(self.dim)
        self.tables: dict[str, Any] = {name: database.open_or_create(name, schema)
                                       for name, schema in self._schemas.items()}
        self._written = True
        self._ensure_indexes()

    def _ensure_indexes(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for table in self.tables.values():
                if ("user_id",) not in {tuple(ix.columns) for ix in table.list_indices()}:
                    table.create_scalar_index("user_id", index_type="BTREE")

    # ------------------------------------------------------------------ reads

    def load(self, user_id: str) -> UserGraph:
        """The user's whole graph (empty for a user with none)."""
        return self.load_many([user_id])[user_id]

    def load_many(self, user_ids: list[str]) -> dict[str, UserGraph]:
        """Several users' graphs with one read per table (a batch of new users costs 6 reads, not 6 each)."""
        with self.lock:
            return read_graphs(self.tables, user_ids)

    def done_ids(self, user_ids: list[str] | None = None) -> pa.Array:
        """Every message id the graph has an episode for (of these users only, when given; an Arrow string array)."""
        if user_ids is not None and not user_ids:
            return pa.array([], pa.string())
        query = self.tables[EPISODES].search()
        if user_ids is not None:
            query = query.where(sql_in("user_id", user_ids))
        with self.lock:
            return query.select(["id"]).limit(None).to_arrow().column("id").combine_chunks()

    def users_of(self, episode_ids: list[str]) -> set[str]:
        """The users whose graphs hold these episodes."""
        users: set[str] = set()
        with self.lock:
            for start in range(0, len(episode_ids), 500):
                chunk = ", ".join(sql_str(i) for i in episode_ids[start:start + 500])
                users.update(self.tables[EPISODES].search().where(f"id IN ({chunk})").select(["user_id"])
                             .limit(None).to_arrow().column("user_id").to_pylist())
        return users

    def users_with_unconsolidated(self) -> list[str]:
        with self.lock:
            col = (self.tables[EPISODES].search().where("trace_id IS NULL AND low = false").select(["user_id"])
                   .limit(None).to_arrow().column("user_id"))
        return sorted(set(col.to_pylist()))

    def counts(self) -> dict[str, int]:
        with self.lock:
            rel = self.tables[RELATIONS]
            current = rel.count_rows("valid_to IS NULL")
            return {"episodes": self.tables[EPISODES].count_rows(), "entities": self.tables[ENTITIES].count_rows(),
                    "relations_current": current, "relations_closed": rel.count_rows() - current,
                    "traces": self.tables[TRACES].count_rows()}

    # ------------------------------------------------------------------ writes

    def _upsert(self, name: str, rows: list[dict[str, Any]], append: bool = False) -> None:
        """One commit: merged on `id`, or appended (`append`: rows that cannot exist yet; cheaper, since
        a merge joins against the whole table)."""
        if not rows:
            return
        data = pa.Table.from_pylist(rows, schema=self._schemas[name])
        if append:
            self.tables[name].add(data)
        else:
            self.tables[name].merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)
        self._written = True
        self._on_write()

    def _delete(self, name: str, where: str) -> None:
        self.tables[name].delete(where)
        self._written = True

    def save(self, g: UserGraph, episodes: Iterable[Episode] = (), entities: Iterable[Entity] = (),
             relations: Iterable[Relation] = (), traces: Iterable[Trace] = (),
             links: Iterable[tuple[str, str]] = (), new_episodes: bool = False) -> None:
        """Write what changed in one user's graph (see `save_many`)."""
        self.save_many([(g, list(episodes), list(entities), list(relations), list(traces), list(links))],
                       new_episodes)

    def save_many(self, items: list[tuple[UserGraph, list, list, list, list, list]], new_episodes: bool = False) -> None:
        """What changed in several users' graphs, in one commit per table (see `commit`)."""
        self.commit(self.rows(items), new_episodes)

    def rows(self, items: list[tuple[UserGraph, list, list, list, list, list]],
             into: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, list[dict[str, Any]]]:
        """The table rows of what changed in these users' graphs (added to `into` when given)."""
        rows = into if into is not None else {name: [] for name in self._schemas}
        for g, episodes, entities, relations, traces, links in items:
            uid = g.user_id
            rows[ENTITIES] += [{"id": e.id, "user_id": uid, "name": e.name, "type": e.type,
                                "aliases": sorted(e.aliases), "activation": e.activation} for e in entities]
            rows[MENTIONS] += [{"id": f"{ep.id}:{i}", "user_id": uid, "episode_id": ep.id, "entity_id": eid, "seq": i}
                               for ep in episodes for i, eid in enumerate(ep.entity_ids)]
            rows[RELATIONS] += [_relation_row(uid, r) for r in relations]
            rows[TRACES] += [_trace_row(uid, t, self.dim) for t in traces]
            rows[LINKS] += [{"id": f"{a}|{b}", "user_id": uid, "a": a, "b": b, "weight": g.links[(a, b)]}
                            for a, b in links if (a, b) in g.links]
            rows[EPISODES] += [_episode_row(uid, ep) for ep in episodes]
        return rows

    def commit(self, rows: dict[str, list[dict[str, Any]]], new_episodes: bool = False) -> None:
        """Table rows written, one commit per table; episodes last (they mark their messages as done).
        new_episodes: the episodes (and their mentions) are new, so they are appended; a crash between
        their mentions and them leaves mentions that `load` reads once. Holds `writes` only (the module's
        docstring)."""
        with self.writes:
            for name in (ENTITIES, MENTIONS, RELATIONS, TRACES, LINKS, EPISODES):
                self._upsert(name, _unique(rows[name]), append=new_episodes and name in (MENTIONS, EPISODES))

    def restore(self, name: str, rows: list[tuple[int, dict[str, Any]]],
                overwrite: bool) -> tuple[list[tuple[int, str]], int]:
        """Rows of one table as exported (line number, row), merged on `id`: new ones inserted, stored ones
        kept or (overwrite) replaced. Returns the rows that do not fit the table, (line, reason), and the
        rows written."""
        schema, bad, good = self._schemas[name], [], rows
        try:
            data = pa.Table.from_pylist([r for _, r in good], schema=schema)
        except (pa.ArrowException, TypeError, ValueError):  # find the rows at fault, one by one
            data, ok = None, []
            for n, row in good:
                try:
                    pa.Table.from_pylist([row], schema=schema)
                    ok.append(row)
                except (pa.ArrowException, TypeError, ValueError) as exc:
                    bad.append((n, f"{name} row does not fit the table: {exc}"))
            data = pa.Table.from_pylist(ok, schema=schema)
        if not data.num_rows:
            return bad, 0
        with self.writes, self.lock:
            merge = self.tables[name].merge_insert("id")
            done = (merge.when_matched_update_all() if overwrite else merge).when_not_matched_insert_all().execute(data)
            self._written = True
            self._on_write()
        return bad, done.num_inserted_rows + done.num_updated_rows

    def replace_mentions(self, g: UserGraph, episode_ids: Iterable[str]) -> None:
        """Rewrite the mentions of these episodes (after a merge moved them to another entity)."""
        ids = [e for e in episode_ids if e in g.episodes]
        if not ids:
            return
        with self.writes, self.lock:
            for start in range(0, len(ids), 500):
                chunk = ", ".join(sql_str(i) for i in ids[start:start + 500])
                self._delete(MENTIONS, f"user_id = {sql_str(g.user_id)} AND episode_id IN ({chunk})")
        self.save(g, episodes=[g.episodes[i] for i in ids])

    def delete_rows(self, g: UserGraph, entities: Iterable[str] = (), relations: Iterable[str] = (),
                    traces: Iterable[str] = (), episodes: Iterable[str] = ()) -> None:
        self.delete_many([g.user_id], {"entities": entities, "relations": relations, "traces": traces,
                                       "episodes": episodes})

    def delete_many(self, users: list[str], ids: dict[str, Iterable[str]]) -> None:
        """Rows of these users' graphs, by kind (entities, relations, traces, episodes: ids unique across
        users), in one commit per table and 500 ids."""
        user = sql_in("user_id", sorted(users))
        kinds = ((ENTITIES, "id", "entities"), (RELATIONS, "id", "relations"), (TRACES, "id", "traces"),
                 (EPISODES, "id", "episodes"), (MENTIONS, "episode_id", "episodes"), (LINKS, "a", "traces"),
                 (LINKS, "b", "traces"))
        with self.writes, self.lock:
            for name, column, kind in kinds:
                chosen = sorted(ids.get(kind, ()))
                for start in range(0, len(chosen), 500):
                    self._delete(name, f"{user} AND {sql_in(column, chosen[start:start + 500])}")

    def forget_user(self, user_id: str) -> int:
        """Delete every graph row of the user; returns the episodes deleted."""
        where = f"user_id = {sql_str(user_id)}"
        with self.writes, self.lock:
            n = self.tables[EPISODES].count_rows(where)
            for name in self._schemas:
                self._delete(name, where)
        return n

    def compact(self, exclusive: bool = True, keep: timedelta | None = None) -> None:
        """exclusive (after a delete): every old version goes at once, and graph reads wait too. Else (the
        background schedule, and only when written since the last one) only graph writes wait: versions
        younger than a minute stay for the reads running meanwhile. It held the request lock until
        2026-11-25, up to 171 ms per compaction by the end of a 300,000-request soak."""
        with self.writes, (self.lock if exclusive else nullcontext()):
            if not exclusive and not self._written:
                return
            self._written = False
            compact_tables(self.tables.values(), "the graph tables", keep, exclusive)


TABLES = (EPISODES, ENTITIES, MENTIONS, RELATIONS, TRACES, LINKS)


def _read(table: Any, where: str) -> list[dict[str, Any]]:
    data = table.search().where(where).limit(None).to_arrow()
    if "vector" not in data.column_names or not data.num_rows:
        return data.to_pylist()
    # vectors through numpy (float16, one small array each): to_pylist made a Python float of every value
    flat = data.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    matrix = flat.reshape(data.num_rows, -1).astype(np.float16)
    rows = data.drop_columns(["vector"]).to_pylist()
    for row, vector in zip(rows, matrix):
        row["vector"] = vector.copy()
    return rows


def read_graphs(tables: dict[str, Any], user_ids: list[str]) -> dict[str, UserGraph]:
    """Several users' graphs read from the graph tables (name -> LanceDB table), one read per table per
    200 users. Only reads: also used by the read-only inspector, beside a running sidecar."""
    graphs = {uid: UserGraph(uid) for uid in user_ids}
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
    for start in range(0, len(user_ids), 200):
        where = f"user_id IN ({', '.join(sql_str(u) for u in user_ids[start:start + 200])})"
        for name in TABLES:
            rows[name] += _read(tables[name], where)
    by_user: dict[str, dict[str, list]] = {uid: {name: [] for name in TABLES} for uid in user_ids}
    for name, table_rows in rows.items():
        for r in table_rows:
            by_user[r["user_id"]][name].append(r)
    for uid, g in graphs.items():
        _fill(g, by_user[uid])
    return graphs


def _unique(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last row of each id (a merge takes each id once)."""
    return list({r["id"]: r for r in rows}.values())


def _episode_row(uid: str, ep: Episode) -> dict[str, Any]:
    return {"id": ep.id, "user_id": uid, "ts": ep.ts, "channel_id": ep.channel_id, "message_id": ep.message_id,
            "reply_to": ep.reply_to, "quality": ep.quality, "low": ep.low, "trace_id": ep.trace_id}


def _relation_row(uid: str, r: Relation) -> dict[str, Any]:
    return {"id": r.id, "user_id": uid, "subject_id": r.subject_id, "predicate": r.predicate, "object_id": r.object_id,
            "object_value": r.object_value, "valid_from": r.valid_from, "valid_to": r.valid_to,
            "episode_ids": r.episode_ids, "confidence": r.confidence, "fact_id": r.fact_id}


def _trace_row(uid: str, t: Trace, dim: int) -> dict[str, Any]:
    vector = t.vector if t.vector is not None else np.zeros(dim, dtype=np.float32)
    return {"id": t.id, "user_id": uid, "summary": t.summary, "episode_ids": t.episode_ids,
            "entity_ids": t.entity_ids, "activation": t.activation, "start": t.start, "end": t.end,
            "created_at": t.created_at, "updated_at": t.updated_at, "vector": np.asarray(vector, np.float32).tolist()}


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
