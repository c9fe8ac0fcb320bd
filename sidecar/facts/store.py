"""LanceDB storage of facts, their history and users' display names, beside the messages table.

Three tables in the same database (created at schema version 2):
- `facts`: one row per fact with its vector; a replaced fact stays (inactive) for history.
- `fact_events`: what happened to a fact and why (created, confirmed, invalidated, merged, ...).
- `users`: the display name of each user (upserted from any request that names one).

Shares the message store's lock, so requests and the background threads never interleave inside
LanceDB. Knows nothing of JSON or of consolidation rules.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import warnings
from typing import Any

import numpy as np
import pyarrow as pa

from ..storage import Database, compact_tables, cosine_search, rrf, sql_in, sql_str
from ..storage.reads import TableReads
from ..text import written_in
from . import keywords

log = logging.getLogger("sidecar.fact_store")

FACTS = "facts"
EVENTS = "fact_events"
USERS = "users"

FACT_COLUMNS = [
    "id",
    "user_id",
    "text",
    "category",
    "source",
    "confidence",
    "message_id",
    "created_at",
    "updated_at",
    "active",
    "superseded_by",
    "superseded_at",
    "superseded_reason",
]
_INVALIDATED = "active = false AND superseded_reason = 'invalidated'"
_LINKS_KEPT = 1024  # users whose replacement links are kept between fact writes
FACT_POOL = 50  # hybrid: each signal's best rows that are fused
FACT_RRF_K = 60  # the usual reciprocal-rank constant (no fact benchmark to tune it on)
# hybrid: the semantic list's weight (the keyword list's is 1) for a query the model reads, and for one mostly in
# scripts it does not read, where it only breaks ties (as the messages' fusion: messages/ranking.py)
FACT_SEMANTIC, FACT_SEMANTIC_UNREAD = 1.0, 0.05
EVENT_COLUMNS = [
    "id",
    "fact_id",
    "user_id",
    "seq",
    "at",
    "action",
    "text",
    "previous_text",
    "other_fact_id",
    "decided_by",
    "reason",
]


def fact_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("category", pa.string(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("confidence", pa.float64(), nullable=False),
            pa.field("message_id", pa.string()),
            pa.field("created_at", pa.float64(), nullable=False),
            pa.field("updated_at", pa.float64(), nullable=False),
            pa.field("active", pa.bool_(), nullable=False),
            pa.field("superseded_by", pa.string()),
            pa.field("superseded_at", pa.float64()),
            pa.field("superseded_reason", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
            *keywords.FIELDS,  # derived from `text` (keywords.py)
        ],
        metadata={keywords.ANALYSIS_KEY: keywords.ANALYSIS},
    )


EVENT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("fact_id", pa.string(), nullable=False),
        pa.field("user_id", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("at", pa.float64(), nullable=False),
        pa.field("action", pa.string(), nullable=False),
        pa.field("text", pa.string()),
        pa.field("previous_text", pa.string()),
        pa.field("other_fact_id", pa.string()),
        pa.field("decided_by", pa.string()),
        pa.field("reason", pa.string()),
    ]
)

USER_SCHEMA = pa.schema(
    [
        pa.field("user_id", pa.string(), nullable=False),
        pa.field("username", pa.string(), nullable=False),
        pa.field("updated_at", pa.float64(), nullable=False),
    ]
)


def create_tables(database: Database) -> None:
    """Create the fact tables that do not exist yet (new data dirs, and data dirs from before schema
    version 2; `Database.open_or_create`)."""
    for name, schema in ((FACTS, fact_schema(database.dim)), (EVENTS, EVENT_SCHEMA), (USERS, USER_SCHEMA)):
        database.open_or_create(name, schema)


class FactStore:
    @classmethod
    def attach(
        cls,
        database: Database,
        lock: threading.RLock,
        on_write: Any = None,
        reembed: Any = None,
        model_scripts: frozenset[str] | None = None,
    ) -> FactStore:
        """The fact tables of an open data dir, created when missing and re-embedded when the data dir's
        model changed (with `reembed`). `model_scripts`: those the model reads (None: every script)."""
        create_tables(database)
        store = cls(database.db, database.dim, lock, on_write)
        store.model_scripts = model_scripts
        moving = database.reembedding
        if reembed is not None and (database.model_changed or (moving is not None and not moving.get("facts"))):
            store.reembed(reembed)
            if moving is not None:
                database.note_reembed(facts=True)
        return store

    def __init__(self, db: Any, dim: int, lock: threading.RLock, on_write: Any = None):
        self.dim = dim
        self.model_scripts: frozenset[str] | None = None  # the scripts the model reads (None: every one): hybrid
        self.lock = lock
        self._on_write_cb = on_write or (lambda: None)
        self.changes = 0  # writes and deletes of this process so far (what an answer read earlier may have missed)
        self._compacted_at = -1  # `changes` at the last compaction (none yet: whether written before is unknown)
        self._reads = TableReads()  # reads outside `lock` (`search_unlocked`): a compaction waits for them
        self.facts = keywords.migrate(db, db.open_table(FACTS), FACTS, fact_schema(dim))
        self.languages = keywords.table_languages(self.facts)  # what a keyword query is analysed in
        self.events = db.open_table(EVENTS)
        self.users = db.open_table(USERS)
        self._db = db
        # event order within the same clock tick; continues across restarts from the highest stored seq
        self._seq = itertools.count(self._max_seq() + 1)
        self._names: dict[str, str] = {r["user_id"]: r["username"] for r in self.users.to_arrow().to_pylist()}
        self._invalidated: set[str] | None = None  # users with an invalidated fact (read at first use)
        # per such user, every (replaced message, replacing message) pair: read at the user's first recall, dropped
        # at every fact write (a query reads the table for it once per user between writes, not twice per query)
        self._links: dict[str, list[tuple[str, str]]] = {}
        self._ensure_index()

    def _ensure_index(self) -> None:
        """BTREE on user_id, and the full-text index on the analysed terms (keywords.py; the one on `text`,
        English only, of schema versions 3 to 6 is dropped)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            indexes = {tuple(ix.columns): ix for ix in self.facts.list_indices()}
            if ("user_id",) not in indexes:
                self.facts.create_scalar_index("user_id", index_type="BTREE")
            if ("text",) in indexes:
                self.facts.drop_index(indexes[("text",)].name)
            if ("terms",) not in indexes:
                self.facts.create_index("terms", config=keywords.fts_config())

    def _max_seq(self) -> int:
        if not self.events.count_rows():
            return 0
        col = self.events.search().select(["seq"]).limit(None).to_arrow().column("seq")
        return int(pa.compute.max(col).as_py())

    def _vectors(self, vectors: np.ndarray) -> pa.FixedSizeListArray:
        return pa.FixedSizeListArray.from_arrays(
            pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1)), self.dim
        )

    # ------------------------------------------------------------------ facts

    def _arrow(self, rows: list[dict[str, Any]], vectors: np.ndarray) -> pa.Table:
        """Fact rows as a table of the facts schema, their terms and language derived from their text."""
        columns: dict[str, Any] = {name: [r.get(name) for r in rows] for name in FACT_COLUMNS}
        columns["vector"] = self._vectors(vectors)
        columns["terms"], columns["language"] = keywords.analysed(columns["text"])
        self.languages.update(v for v in columns["language"] if v)
        return pa.Table.from_pydict(columns, schema=fact_schema(self.dim))

    def add(self, rows: list[dict[str, Any]], vectors: np.ndarray) -> None:
        if not rows:
            return
        with self.lock:
            self.facts.add(self._arrow(rows, vectors))
            self._on_write()

    def replacements(self, user_id: str, message_ids: list[str]) -> list[tuple[str, str]]:
        """(the message an invalidated fact of the user came from, the message of the fact that replaced it), for
        facts from these messages. Costs nothing for a user with no invalidated fact (the users that have one are
        read once, then kept as this process invalidates or restores facts)."""
        users = self._invalidated  # (no lock to read it: a query never waits for a write here)
        if users is None:
            with self.lock:
                got = self.facts.search().where(_INVALIDATED).select(["user_id"]).limit(None).to_arrow()
                users = self._invalidated = set(got.column("user_id").to_pylist())
        if user_id not in users or not message_ids:
            return []
        cache = self._links  # a write meanwhile replaces it: what is read here then lands in the dropped one
        links = cache.get(user_id)
        if links is None:
            links = self._replacement_links(user_id)
            if len(cache) >= _LINKS_KEPT:
                cache.clear()
            cache[user_id] = links
        wanted = set(message_ids)
        return [(old, new) for old, new in links if old in wanted]

    def _replacement_links(self, user_id: str) -> list[tuple[str, str]]:
        user = f"user_id = {sql_str(user_id)}"
        old = self.get(f"{user} AND {_INVALIDATED} AND message_id IS NOT NULL")
        new = (
            {r["id"]: r for r in self.get(f"{user} AND {sql_in('id', [r['superseded_by'] for r in old])}")}
            if old
            else {}
        )
        return [
            (r["message_id"], new[r["superseded_by"]]["message_id"])
            for r in old
            if r["superseded_by"] in new and new[r["superseded_by"]]["message_id"] not in (None, r["message_id"])
        ]

    def update(self, fact_id_sql: str, values: dict[str, Any], vector: np.ndarray | None = None) -> None:
        if vector is not None:
            values = {**values, "vector": np.asarray(vector, dtype=np.float32).tolist()}
        if "text" in values:
            (terms,), (language,) = keywords.analysed([values["text"]])
            values = {**values, "terms": terms, "language": language}
            self.languages.update([language] if language else [])
        with self.lock:
            self.facts.update(where=f"id = {fact_id_sql}", values=values)
            if values.get("superseded_reason") == "invalidated":
                self._invalidated = None  # read again at the next use
            self._on_write()

    def get(self, where: str) -> list[dict[str, Any]]:
        with self.lock:
            rows = self.facts.search().where(where).select(FACT_COLUMNS).limit(None).to_arrow().to_pylist()
        return rows

    def search(
        self, vector: np.ndarray, where: str, limit: int, text: str | None = None, mode: str = "semantic"
    ) -> list[dict[str, Any]]:
        """Facts matching `where`, best first, each with its cosine `similarity` to `vector`.

        semantic: nearest vectors; keyword: BM25 over the fact text; hybrid: both, fused by
        reciprocal rank (equal weights; the semantic list a tie-breaker for a query mostly in scripts the
        model does not read)."""
        if mode == "semantic" or text is None:
            with self.lock:
                return self._semantic(vector, where, limit)
        with self.lock:
            if mode == "keyword":
                return self._keyword(text, vector, where, limit)
            lists = {
                "semantic": self._semantic(vector, where, FACT_POOL),
                "keyword": self._keyword(text, vector, where, FACT_POOL),
            }
        by_id = {r["id"]: r for rows in lists.values() for r in rows}
        semantic = FACT_SEMANTIC if written_in(text, self.model_scripts) else FACT_SEMANTIC_UNREAD
        ids = {k: [r["id"] for r in rows] for k, rows in lists.items()}
        scores = rrf(ids, {"semantic": semantic, "keyword": 1.0}, k=FACT_RRF_K)
        best = sorted(scores, key=lambda i: (-scores[i], -by_id[i]["similarity"], i))[:limit]
        return [by_id[i] for i in best]

    def search_unlocked(self, vector: np.ndarray, where: str, limit: int) -> list[dict[str, Any]]:
        """`search` by vector alone, read outside the store's lock (LanceDB reads a version while others
        commit): for background work that must not hold up requests. The graph builder looks up the fact
        each relation it finds states; under the lock, requests waited for those reads, and a build of long
        memories under a steady stream of requests took their p99 from about 10 to 20 ms (docs/graph.md)."""
        with self._reads.outside(self.lock, lambda: self.facts) as table:
            return cosine_search(table, vector, where, FACT_COLUMNS, limit)

    def wait_reads(self) -> None:
        """Return once no `search_unlocked` read runs (the caller holds the lock: none starts meanwhile)."""
        self._reads.wait_idle()

    def _semantic(self, vector: np.ndarray, where: str, limit: int) -> list[dict[str, Any]]:
        return cosine_search(self.facts, vector, where, FACT_COLUMNS, limit)

    def _keyword(self, text: str, vector: np.ndarray, where: str, limit: int) -> list[dict[str, Any]]:
        query = keywords.query(text, self.languages)
        if query is None:  # stop words alone
            return []
        result = (
            self.facts.search(query, query_type="fts")
            .where(where, prefilter=True)
            .select([*FACT_COLUMNS, "vector", "_score"])
            .limit(limit)
            .to_arrow()
        )
        if not result.num_rows:
            return []
        vectors = result.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        sims = vectors.reshape(-1, self.dim) @ np.asarray(vector, dtype=np.float32)
        rows = result.select(FACT_COLUMNS).to_pylist()
        for r, sim in zip(rows, sims):
            r["similarity"] = float(sim)
        return rows

    def count(self, where: str | None = None) -> int:
        with self.lock:
            return self.facts.count_rows(where) if where else self.facts.count_rows()

    def delete(self, where: str, events_where: str) -> int:
        """Hard-delete facts and their events, then compact them off the disk."""
        with self.lock:
            n = self.facts.delete(where).num_deleted_rows
            self.events.delete(events_where)
            self.changes += 1
            if n:
                self.compact()
            return n

    # ------------------------------------------------------------------ history

    def add_events(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        with self.lock:
            now = time.time()
            for r in rows:
                r.setdefault("at", now)
                r["seq"] = next(self._seq)
            self.events.add(
                pa.Table.from_pylist([{c: r.get(c) for c in EVENT_COLUMNS} for r in rows], schema=EVENT_SCHEMA)
            )
            self._on_write()

    def history(self, where: str) -> list[dict[str, Any]]:
        with self.lock:
            rows = self.events.search().where(where).select(EVENT_COLUMNS).limit(None).to_arrow().to_pylist()
        rows.sort(key=lambda r: r["seq"])
        return rows

    # ------------------------------------------------------------------ users

    def name(self, user_id: str) -> str | None:
        return self._names.get(user_id)

    def set_names(self, names: dict[str, str]) -> None:
        """Upsert display names; writes only the ones that changed."""
        changed = {u: n for u, n in names.items() if n and self._names.get(u) != n}
        if not changed:
            return
        now = time.time()
        data = pa.Table.from_pylist(
            [{"user_id": u, "username": n, "updated_at": now} for u, n in changed.items()], schema=USER_SCHEMA
        )
        with self.lock:
            (self.users.merge_insert("user_id").when_matched_update_all().when_not_matched_insert_all().execute(data))
            self._names.update(changed)
            self._on_write()

    def forget_user(self, user_sql: str, user_id: str) -> int:
        with self.lock:
            n = self.facts.delete(f"user_id = {user_sql}").num_deleted_rows
            for table in (self.events, self.users):
                table.delete(f"user_id = {user_sql}")
            self.changes += 1
            self._names.pop(user_id, None)
            self.compact()
            return n

    # ------------------------------------------------------------------ import (portable)

    def existing(self, kind: str, ids: list[str]) -> set[str]:
        """Which of these fact, fact_event or user (user_id) ids are stored."""
        table, key = {"fact": (self.facts, "id"), "fact_event": (self.events, "id"), "user": (self.users, "user_id")}[
            kind
        ]
        with self.lock:
            found = table.search().where(sql_in(key, ids)).select([key]).limit(None).to_arrow()
        return set(found.column(key).to_pylist())

    def _merge(self, table: Any, key: str, data: pa.Table, overwrite: bool) -> None:
        merge = table.merge_insert(key)
        (merge.when_matched_update_all() if overwrite else merge).when_not_matched_insert_all().execute(data)
        self._on_write()

    def restore_facts(self, rows: list[dict[str, Any]], vectors: np.ndarray, overwrite: bool) -> None:
        """Facts as exported (ids kept): new ones inserted, stored ones kept or (overwrite) replaced."""
        with self.lock:
            self._merge(self.facts, "id", self._arrow(rows, vectors), overwrite)
            self._invalidated = None
            self._links = {}

    def restore_events(self, rows: list[dict[str, Any]], overwrite: bool) -> None:
        """History events as exported, their order (`seq`) kept; new events are numbered after them."""
        with self.lock:
            self._merge(
                self.events,
                "id",
                pa.Table.from_pylist([{c: r.get(c) for c in EVENT_COLUMNS} for r in rows], schema=EVENT_SCHEMA),
                overwrite,
            )
            self._seq = itertools.count(self._max_seq() + 1)

    def restore_users(self, rows: list[dict[str, Any]], overwrite: bool) -> None:
        with self.lock:
            self._merge(self.users, "user_id", pa.Table.from_pylist(rows, schema=USER_SCHEMA), overwrite)
            self._names = {r["user_id"]: r["username"] for r in self.users.to_arrow().to_pylist()}

    # ------------------------------------------------------------------ maintenance

    def _on_write(self) -> None:
        self._links = {}  # (a new dict: a query reading the old one meanwhile keeps a consistent one)
        self.changes += 1
        self._on_write_cb()

    def compact(self, if_written: bool = False, keep: Any = None) -> None:
        """Compact the three tables (requests wait: facts are updated in place, and an update must
        not race a rewrite of its fragment). if_written: only when they were written since the last
        time, so that the frequent background compactions of the messages table do not hold the
        lock for nothing."""
        with self.lock:
            if if_written and self.changes == self._compacted_at:
                return
            self._compacted_at = self.changes
            self._reads.wait_idle()  # it may delete the files of every older version
            compact_tables((self.facts, self.events, self.users), "the fact tables", keep)

    def reembed(self, embed: Any) -> None:
        data = self.facts.to_arrow()
        if not data.num_rows:
            if self.facts.schema.field("vector").type.list_size != self.dim:  # empty, at the old width
                self.facts = self._db.create_table(FACTS, schema=fact_schema(self.dim), mode="overwrite")
                self._ensure_index()
            return
        log.warning("re-embedding %d facts with the current model", data.num_rows)
        vectors = np.asarray(embed(data.column("text").to_pylist()), dtype=np.float32)
        data = data.set_column(data.schema.get_field_index("vector"), "vector", self._vectors(vectors))
        self.facts = self._db.create_table(FACTS, data=data, schema=fact_schema(self.dim), mode="overwrite")
        self._ensure_index()
