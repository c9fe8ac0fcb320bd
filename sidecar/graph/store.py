"""The graph's tables in the data dir's LanceDB: episodes (per-message graph data: quality, trace;
the text and vector stay in the messages table), entities, mentions, relations, traces and trace
links. Loads one user's graph, saves what changed in one commit per table, deletes a user.

Every row is keyed so that writing it twice is harmless: the builder may redo an episode after a
crash, and the result is the same. An episode row is written last: it marks the message as done, so a
message without one is (re)built at the next start.

Rows are replaced without LanceDB's `merge_insert` (whose join code alone kept 11 MiB more of LanceDB's
library resident, and `realuse` (b)'s peak at 100k 20 MB higher, once the builder ran: docs/performance.md):
each commit stamps its rows with a `rev` of its own, appends them, then deletes the other rows of the same
ids. A crash between the two leaves two rows of an id: reads keep the one of the highest `rev`, and the
next commit deletes the other (`_heal`). Tables from before `rev` gain it, 0 in every row, when opened.

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

import logging
import threading
import time
import warnings
from collections.abc import Iterable, Mapping
from contextlib import nullcontext
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow as pa

from ..storage import Database, compact_tables, sql_in, sql_str
from .model import UserGraph
from .records import Entity, Episode, Relation, Trace
from .tables import (
    ENTITIES,
    EPISODES,
    LINKS,
    MENTIONS,
    RELATIONS,
    REV,
    TRACES,
    graph_of,
    last_of_each,
    read_rows,
    schemas,
)


class GraphStore:
    def __init__(self, database: Database, lock: threading.RLock, on_write: Any = None):
        self.dim = database.dim
        self.lock = lock  # the message store's table lock: LanceDB work never interleaves
        self.writes = threading.RLock()  # graph writes and compactions (see the module's docstring)
        self._on_write = on_write or (lambda: None)
        self._schemas = schemas(self.dim)
        self._db = database.db
        self.tables: dict[str, Any] = {
            name: database.open_or_create(name, schema) for name, schema in self._schemas.items()
        }
        if (
            self.tables[TRACES].schema.field("vector").type.list_size != self.dim
            and database.read_only_reason() is None
        ):
            self._traces_at_width()  # the data dir moves to a model of another width (--reembed)
        self._written = True
        self._rev = 0
        self._stale: dict[str, set[str]] = {}  # ids read twice (a crash between a commit's two steps)
        self._stale_lock = threading.Lock()  # reads add to it on request threads, the next commit takes it
        if database.read_only_reason() is None:
            self._add_rev()
            self._ensure_indexes()

    def _traces_at_width(self) -> None:
        """The traces table rewritten at this model's width, every vector zero until `revector_traces`."""
        data = self.tables[TRACES].to_arrow()
        schema = self._schemas[TRACES]
        zeros = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(data.num_rows * self.dim, np.float32)), self.dim)
        cols = {
            f.name: (
                zeros
                if f.name == "vector"
                else data.column(f.name)
                if f.name in data.column_names
                else pa.nulls(data.num_rows, f.type)
            )
            for f in schema
        }
        self.tables[TRACES] = self._db.create_table(
            TRACES, data=pa.table(cols, schema=schema), schema=schema, mode="overwrite"
        )

    def revector_traces(self, vectors_of: Any) -> int:
        """Every trace's vector made again from its episodes' message vectors (the mean, unit length, as
        consolidation makes it): after the messages moved to another model. Returns how many traces."""
        from .consolidation import mean_vector

        with self.writes:
            with self.lock:
                data = self.tables[TRACES].to_arrow()
            if not data.num_rows:
                return 0
            episodes = data.column("episode_ids").to_pylist()
            found = vectors_of(sorted({e for eps in episodes for e in eps}))
            vectors = np.zeros((data.num_rows, self.dim), np.float32)
            for i, eps in enumerate(episodes):
                have = [found[e] for e in eps if e in found]
                if have:
                    vectors[i] = mean_vector(np.stack(have))
            column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), self.dim)
            data = data.set_column(data.schema.get_field_index("vector"), "vector", column)
            with self.lock:
                self.tables[TRACES] = self._db.create_table(TRACES, data=data, schema=data.schema, mode="overwrite")
                self._ensure_indexes()
            self._written = True
            self._on_write()
        logging.getLogger("sidecar.graph").warning(
            "graph: %d trace vectors made again from the re-embedded memories", data.num_rows
        )
        return data.num_rows

    def _add_rev(self) -> None:
        for table in self.tables.values():
            if REV not in table.schema.names:
                table.add_columns({REV: "CAST(0 AS BIGINT)"})

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
        return {uid: graph_of(uid, rows) for uid, rows in self.read_rows(user_ids).items()}

    def read_rows(self, user_ids: list[str]) -> dict[str, dict[str, pa.Table]]:
        """Several users' rows, one read per table, as Arrow tables (`graph_of` makes one user's graph of them)."""
        twice: dict[str, set[str]] = {}
        with self.lock:
            rows = read_rows(self.tables, user_ids, twice)
        if twice:
            with self._stale_lock:
                for name, ids in twice.items():
                    self._stale.setdefault(name, set()).update(ids)
        return rows

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
                chunk = ", ".join(sql_str(i) for i in episode_ids[start : start + 500])
                users.update(
                    self.tables[EPISODES]
                    .search()
                    .where(f"id IN ({chunk})")
                    .select(["user_id"])
                    .limit(None)
                    .to_arrow()
                    .column("user_id")
                    .to_pylist()
                )
        return users

    def users_with_unconsolidated(self) -> list[str]:
        with self.lock:
            col = (
                self.tables[EPISODES]
                .search()
                .where("trace_id IS NULL AND low = false")
                .select(["user_id"])
                .limit(None)
                .to_arrow()
                .column("user_id")
            )
        return sorted(set(col.to_pylist()))

    def counts(self) -> dict[str, int]:
        """Rows per table. Waits for a commit in progress (`writes`): between a replace's append and its delete
        the table holds the rows twice (a 100k catch-up's `health` counted 100,600 episodes for 100,100)."""
        with self.writes, self.lock:
            rel = self.tables[RELATIONS]
            current = rel.count_rows("valid_to IS NULL")
            return {
                "episodes": self.tables[EPISODES].count_rows(),
                "entities": self.tables[ENTITIES].count_rows(),
                "relations_current": current,
                "relations_closed": rel.count_rows() - current,
                "traces": self.tables[TRACES].count_rows(),
            }

    # ------------------------------------------------------------------ writes

    def _upsert(self, name: str, rows: list[dict[str, Any]], append: bool = False) -> None:
        """Rows written in place of the stored rows of their ids, or appended (`append`: rows that cannot
        exist yet)."""
        if rows:  # an id twice in one batch: its last row (last_of_each: no `rev` yet, the last wins)
            self._replace(name, last_of_each(pa.Table.from_pylist(rows, schema=self._schemas[name])), append)

    def _replace(self, name: str, data: pa.Table, append: bool = False) -> None:
        """Append `data` (ids unique) stamped with a new `rev`, then delete every other row of its ids
        (unless `append`). Under `writes` only."""
        self._rev = rev = max(time.time_ns(), self._rev + 1)
        data = data.set_column(data.schema.get_field_index(REV), REV, pa.array([rev] * data.num_rows, pa.int64()))
        self.tables[name].add(data)
        self._written = True
        if not append:  # by id alone: a `user_id` filter beside them cost the same (LanceDB scans; measured)
            ids = data.column("id").to_pylist()
            for start in range(0, len(ids), 5000):
                chunk = sql_in("id", ids[start : start + 5000])
                self.tables[name].delete(f"{chunk} AND ({REV} IS NULL OR {REV} <> {rev})")
        self._on_write()

    def _heal(self) -> None:
        """Delete the older row of each id that reads found twice (under `writes`)."""
        with self._stale_lock:
            stale, self._stale = self._stale, {}
        for name, ids in stale.items():
            revs: dict[str, list[int]] = {}
            for r in self._stored(name, sorted(ids), (REV,)):
                revs.setdefault(r["id"], []).append(r[REV] or 0)
            # one row left: the commit's own delete came after the read
            twice = sorted((i, max(found)) for i, found in revs.items() if len(found) > 1)
            for start in range(0, len(twice), 200):
                self._delete(
                    name,
                    " OR ".join(
                        f"(id = {sql_str(i)} AND ({REV} IS NULL OR {REV} < {m}))" for i, m in twice[start : start + 200]
                    ),
                )

    def _stored(self, name: str, ids: list[str], columns: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """The stored rows of these ids (500 at a time), their `id` and `columns`."""
        found: list[dict[str, Any]] = []
        for start in range(0, len(ids), 500):
            found += (
                self.tables[name]
                .search()
                .where(sql_in("id", ids[start : start + 500]))
                .select(["id", *columns])
                .limit(None)
                .to_arrow()
                .to_pylist()
            )
        return found

    def _delete(self, name: str, where: str) -> None:
        self.tables[name].delete(where)
        self._written = True

    def save(
        self,
        g: UserGraph,
        episodes: Iterable[Episode] = (),
        entities: Iterable[Entity] = (),
        relations: Iterable[Relation] = (),
        traces: Iterable[Trace] = (),
        links: Iterable[tuple[str, str]] = (),
        new_episodes: bool = False,
    ) -> None:
        """Write what changed in one user's graph (see `save_many`)."""
        self.save_many([(g, list(episodes), list(entities), list(relations), list(traces), list(links))], new_episodes)

    def save_many(
        self, items: list[tuple[UserGraph, list, list, list, list, list]], new_episodes: bool = False
    ) -> None:
        """What changed in several users' graphs, in one commit per table (see `commit`)."""
        self.commit(self.rows(items), new_episodes)

    def rows(
        self,
        items: list[tuple[UserGraph, list, list, list, list, list]],
        into: dict[str, list[dict[str, Any]]] | None = None,
    ) -> dict[str, list[dict[str, Any]]]:
        """The table rows of what changed in these users' graphs (added to `into` when given)."""
        rows = into if into is not None else {name: [] for name in self._schemas}
        for g, episodes, entities, relations, traces, links in items:
            uid = g.user_id
            rows[ENTITIES] += [
                {
                    "id": e.id,
                    "user_id": uid,
                    "name": e.name,
                    "type": e.type,
                    "aliases": sorted(e.aliases),
                    "activation": e.activation,
                }
                for e in entities
            ]
            rows[MENTIONS] += [
                {"id": f"{ep.id}:{i}", "user_id": uid, "episode_id": ep.id, "entity_id": eid, "seq": i}
                for ep in episodes
                for i, eid in enumerate(ep.entity_ids)
            ]
            rows[RELATIONS] += [_relation_row(uid, r) for r in relations]
            rows[TRACES] += [_trace_row(uid, t, self.dim) for t in traces]
            rows[LINKS] += [
                {"id": f"{a}|{b}", "user_id": uid, "a": a, "b": b, "weight": g.links[(a, b)]}
                for a, b in links
                if (a, b) in g.links
            ]
            rows[EPISODES] += [_episode_row(uid, ep) for ep in episodes]
        return rows

    def commit(self, rows: dict[str, list[dict[str, Any]]], new_episodes: bool = False) -> None:
        """Table rows written, one commit per table; episodes last (they mark their messages as done).
        new_episodes: the episodes (and their mentions) are new, so they are appended; a crash between
        their mentions and them leaves mentions that `load` reads once. Holds `writes` only (the module's
        docstring)."""
        with self.writes:
            if self._stale:
                self._heal()
            for name in (ENTITIES, MENTIONS, RELATIONS, TRACES, LINKS, EPISODES):
                self._upsert(name, rows[name], append=new_episodes and name in (MENTIONS, EPISODES))

    def restore(
        self, name: str, rows: list[tuple[int, dict[str, Any]]], overwrite: bool
    ) -> tuple[list[tuple[int, str]], int]:
        """Rows of one table as exported (line number, row), by `id`: new ones inserted, stored ones kept
        or (overwrite) replaced. Returns the rows that do not fit the table, (line, reason), and the rows
        written."""
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
        data = last_of_each(data)
        with self.writes, self.lock:
            if data.num_rows and not overwrite:
                stored = {r["id"] for r in self._stored(name, data.column("id").to_pylist())}
                data = data.filter(pa.array([i not in stored for i in data.column("id").to_pylist()]))
            if data.num_rows:
                self._replace(name, data, append=not overwrite)
        return bad, data.num_rows

    def replace_mentions(self, g: UserGraph, episode_ids: Iterable[str]) -> None:
        """Rewrite the mentions of these episodes (after a merge moved them to another entity)."""
        ids = [e for e in episode_ids if e in g.episodes]
        if not ids:
            return
        with self.writes, self.lock:
            for start in range(0, len(ids), 500):
                chunk = ", ".join(sql_str(i) for i in ids[start : start + 500])
                self._delete(MENTIONS, f"user_id = {sql_str(g.user_id)} AND episode_id IN ({chunk})")
        self.save(g, episodes=[g.episodes[i] for i in ids])

    def delete_rows(
        self,
        g: UserGraph,
        entities: Iterable[str] = (),
        relations: Iterable[str] = (),
        traces: Iterable[str] = (),
        episodes: Iterable[str] = (),
    ) -> None:
        self.delete_many(
            [g.user_id], {"entities": entities, "relations": relations, "traces": traces, "episodes": episodes}
        )

    def delete_many(self, users: list[str], ids: Mapping[str, Iterable[str]]) -> None:
        """Rows of these users' graphs, by kind (entities, relations, traces, episodes: ids unique across
        users), in one commit per table and 500 ids."""
        user = sql_in("user_id", sorted(users))
        kinds = (
            (ENTITIES, "id", "entities"),
            (RELATIONS, "id", "relations"),
            (TRACES, "id", "traces"),
            (EPISODES, "id", "episodes"),
            (MENTIONS, "episode_id", "episodes"),
            (LINKS, "a", "traces"),
            (LINKS, "b", "traces"),
        )
        with self.writes, self.lock:
            for name, column, kind in kinds:
                chosen = sorted(ids.get(kind, ()))
                for start in range(0, len(chosen), 500):
                    self._delete(name, f"{user} AND {sql_in(column, chosen[start : start + 500])}")

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
        with self.writes, self.lock if exclusive else nullcontext():
            if not exclusive and not self._written:
                return
            self._written = False
            compact_tables(self.tables.values(), "the graph tables", keep, exclusive)


def _episode_row(uid: str, ep: Episode) -> dict[str, Any]:
    return {
        "id": ep.id,
        "user_id": uid,
        "ts": ep.ts,
        "channel_id": ep.channel_id,
        "message_id": ep.message_id,
        "reply_to": ep.reply_to,
        "quality": ep.quality,
        "low": ep.low,
        "trace_id": ep.trace_id,
    }


def _relation_row(uid: str, r: Relation) -> dict[str, Any]:
    return {
        "id": r.id,
        "user_id": uid,
        "subject_id": r.subject_id,
        "predicate": r.predicate,
        "object_id": r.object_id,
        "object_value": r.object_value,
        "valid_from": r.valid_from,
        "valid_to": r.valid_to,
        "episode_ids": r.episode_ids,
        "confidence": r.confidence,
        "fact_id": r.fact_id,
    }


def _trace_row(uid: str, t: Trace, dim: int) -> dict[str, Any]:
    vector = t.vector if t.vector is not None else np.zeros(dim, dtype=np.float32)
    return {
        "id": t.id,
        "user_id": uid,
        "summary": t.summary,
        "episode_ids": t.episode_ids,
        "entity_ids": t.entity_ids,
        "activation": t.activation,
        "start": t.start,
        "end": t.end,
        "created_at": t.created_at,
        "updated_at": t.updated_at,
        "vector": np.asarray(vector, np.float32),
    }  # as an array: a list made 384 Python floats a trace
