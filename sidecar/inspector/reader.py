"""Read-only access to a data dir, safe beside the sidecar that owns it.

Never takes the data dir's lock (`sidecar.lock`), never creates, migrates, compacts, indexes or
replays anything: it reads `meta.json`, opens the LanceDB tables that exist, and reads them. The
connection checks for a newer table version before every read (`read_consistency_interval` 0), so
each page shows what the sidecar has committed by then. Rows a `store` has acknowledged but the
sidecar's write-ahead log still holds (committed within about a second) are not visible yet.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ..facts import EVENT_COLUMNS, EVENTS, FACT_COLUMNS, FACTS, USERS
from ..graph import GRAPH_TABLES, read_graphs
from ..messages import MESSAGES, RESULT_COLUMNS, drop_padding, padding_fetch, search_table
from ..storage import LANCE_DIR, META_FILE, SCHEMA_VERSION, dir_bytes, import_lancedb, same_model, sql_str, table_names
from ..wire.base import MIN_SCORE

MODES = ("hybrid", "semantic", "keyword")
WAL_DIR = "wal"  # the sidecar's write-ahead log (messages/store.py), only listed here


class InspectorError(RuntimeError):
    """A data dir the inspector cannot read, or a request it cannot answer (shown as one sentence)."""


class ReadOnlyData:
    def __init__(
        self,
        data_dir: Path,
        embed: Callable[[str], np.ndarray],
        model: dict[str, Any],
        scripts: frozenset[str] | None = None,  # the scripts the model reads (None: every one)
    ):
        self.path = data_dir
        meta = data_dir / META_FILE
        if not (data_dir / LANCE_DIR).is_dir() or not meta.is_file():
            raise InspectorError(
                f"{data_dir} is not a memory-sidecar data dir (no {META_FILE} and {LANCE_DIR}/): "
                "start the sidecar on it once, or pass the right --data-dir"
            )
        try:
            self.meta = orjson.loads(meta.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise InspectorError(f"{meta} is unreadable: {exc}") from None
        if int(self.meta.get("schema_version", 0)) > SCHEMA_VERSION:
            raise InspectorError(
                f"{data_dir} has schema version {self.meta.get('schema_version')}, newer than this "
                f"inspector's {SCHEMA_VERSION}; upgrade memory-sidecar"
            )
        stored = self.meta.get("model", {})
        self.model = model
        self.same_model = same_model(stored, model)
        self.dim = int(stored.get("dim") or model["dim"])
        self._embed = embed
        self.scripts = scripts
        lancedb = import_lancedb()
        self.db = lancedb.connect(str(data_dir / LANCE_DIR), read_consistency_interval=timedelta(0))
        self._tables: dict[str, Any] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ tables

    def table(self, name: str) -> Any | None:
        """The open table (a newer version is picked up at each read), or None while it does not exist."""
        with self._lock:
            if name not in self._tables:
                if name not in table_names(self.db):
                    return None
                try:
                    self._tables[name] = self.db.open_table(name)
                except (ValueError, RuntimeError, OSError):  # being created by the sidecar right now
                    return None
            return self._tables[name]

    def _rows(self, name: str, where: str | None, columns: list[str] | None = None) -> list[dict[str, Any]]:
        table = self.table(name)
        if table is None:
            return []
        query = table.search()
        if where:
            query = query.where(where)
        if columns:
            query = query.select(columns)
        return query.limit(None).to_arrow().to_pylist()

    # ------------------------------------------------------------------ views

    def users(self) -> list[dict[str, Any]]:
        """Every user with messages, facts or a display name: counts, name, newest message time."""
        out: dict[str, dict[str, Any]] = {}

        def user(uid: str) -> dict[str, Any]:
            return out.setdefault(
                uid, {"user_id": uid, "username": None, "messages": 0, "facts": 0, "entities": 0, "last": None}
            )

        for r in self._rows(MESSAGES, None, ["user_id", "username", "timestamp"]):
            u = user(r["user_id"])
            u["messages"] += 1
            if u["last"] is None or r["timestamp"] > u["last"]:
                u["last"] = r["timestamp"]
                u["username"] = r["username"] or u["username"]
        for r in self._rows(FACTS, "active = true", ["user_id"]):
            user(r["user_id"])["facts"] += 1
        for r in self._rows(GRAPH_TABLES[1], None, ["user_id"]):
            user(r["user_id"])["entities"] += 1
        for r in self._rows(USERS, None, ["user_id", "username"]):
            user(r["user_id"])["username"] = r["username"]
        return sorted(out.values(), key=lambda u: (-(u["last"] or 0), u["user_id"]))

    def messages(self, user_id: str, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        """A page of the user's messages, newest first, and how many there are."""
        rows = self._rows(MESSAGES, f"user_id = {sql_str(user_id)}", RESULT_COLUMNS)
        rows.sort(key=lambda r: (-r["timestamp"], r["id"]))
        return rows[offset : offset + limit], len(rows)

    def search(self, user_id: str, text: str, mode: str, limit: int) -> list[dict[str, Any]]:
        if mode not in MODES:
            raise InspectorError(f"unknown search mode {mode!r} (one of {', '.join(MODES)})")
        if not self.same_model and mode != "keyword":
            raise InspectorError(
                "this data dir was embedded by another model than the one loaded here: only "
                "keyword search is meaningful (pass the right --model-dir)"
            )
        table = self.table(MESSAGES)
        if table is None:
            return []
        size = padding_fetch(limit, MIN_SCORE)  # as `query` answers at its default floor: no padding
        rows = search_table(table, lambda: self._embed(text), text, user_id, mode, size, self.dim, self.scripts)
        return drop_padding(rows, text, MIN_SCORE, likeness=mode != "keyword")[:limit]

    def facts(self, user_id: str) -> list[dict[str, Any]]:
        """The user's facts, active ones first, newest first, each with its `events` (oldest first)."""
        user = f"user_id = {sql_str(user_id)}"
        facts = self._rows(FACTS, user, FACT_COLUMNS)
        events: dict[str, list[dict[str, Any]]] = {}
        for e in sorted(self._rows(EVENTS, user, EVENT_COLUMNS), key=lambda e: e["seq"]):
            events.setdefault(e["fact_id"], []).append(e)
        for f in facts:
            f["events"] = events.get(f["id"], [])
        facts.sort(key=lambda f: (not f["active"], -f["updated_at"], f["id"]))
        return facts

    def graph(self, user_id: str) -> Any | None:
        """The user's graph (sidecar.graph's UserGraph), or None while the graph tables do not exist."""
        tables = {name: self.table(name) for name in GRAPH_TABLES}
        if any(t is None for t in tables.values()):
            return None
        return read_graphs(tables, [user_id])[user_id]

    def stats(self) -> dict[str, Any]:
        """Rows and version of every table, the disk and the write-ahead log, meta.json, graph progress."""
        tables = {}
        for name in sorted(table_names(self.db)):
            table = self.table(name)
            tables[name] = None if table is None else {"rows": table.count_rows(), "version": table.version}
        wal = [p for p in (self.path / WAL_DIR).glob("*") if p.is_file()] if (self.path / WAL_DIR).is_dir() else []
        episodes = self.table(GRAPH_TABLES[0])
        relations = self.table(GRAPH_TABLES[3])
        graph = None
        if episodes is not None and relations is not None:
            built = episodes.count_rows()
            messages = (tables.get(MESSAGES) or {}).get("rows", 0)
            graph = {
                "episodes": built,
                "not_built": max(0, messages - built),
                "unconsolidated": episodes.count_rows("trace_id IS NULL AND low = false"),
                "relations_current": relations.count_rows("valid_to IS NULL"),
            }
        return {
            "tables": tables,
            "disk_bytes": dir_bytes(self.path / LANCE_DIR),
            "meta": self.meta,
            "wal_files": len(wal),
            "wal_bytes": sum(p.stat().st_size for p in wal),
            "graph": graph,
            "same_model": self.same_model,
            "model": self.model,
        }
