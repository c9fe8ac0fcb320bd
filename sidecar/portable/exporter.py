"""Export: every table of one user (or of everyone) read in batches of Arrow rows and written as records,
in the order an import restores them. Memory stays constant: one batch at a time, never a whole table."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..facts import FACT_COLUMNS
from ..storage import SCHEMA_VERSION, sql_str
from .fileio import Writer
from .records import FORMAT, FORMAT_VERSION, GRAPH_TABLES, VECTOR_ENCODING, ModelIdentity, encode_vector

log = logging.getLogger("sidecar.portable")

BATCH_ROWS = 2048
Progress = Callable[[str, int], None]


def batches(table: Any, where: str | None, columns: list[str] | None = None) -> Iterator[Any]:
    """The table's rows matching `where` as Arrow record batches (streamed by LanceDB)."""
    query = table.search()
    if where:
        query = query.where(where)
    if columns is not None:
        query = query.select(columns)
    yield from query.limit(None).to_batches(BATCH_ROWS)


def _rows(batch: Any, kind: str, vectors: bool, dim: int) -> Iterator[dict[str, Any]]:
    """Records of one batch; the `vector` column (when there is one) encoded, or left out."""
    names = batch.schema.names
    vecs = None
    if "vector" in names:
        if vectors:
            column = batch.column(names.index("vector"))
            vecs = column.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim).astype(np.float32)
        batch = (
            batch.drop_columns(["vector"])
            if hasattr(batch, "drop_columns")
            else batch.select([n for n in names if n != "vector"])
        )
    for i, row in enumerate(batch.to_pylist()):
        if vecs is not None:
            row["vector"] = encode_vector(vecs[i])
        yield {"kind": kind, **row}


class Exporter:
    def __init__(self, stores: Any, identity: dict[str, Any], progress: Progress | None = None):
        self.stores = stores  # portable.service.Stores
        self.identity = identity
        self.progress = progress or (lambda _kind, _n: None)

    def run(self, out: Path, user_id: str | None, vectors: bool, overwrite: bool = False) -> dict[str, int]:
        """Write the file (atomically); returns the records of each kind and `bytes`. fileio.Refused for a
        target it will not write (a link, not a regular file, an existing file without `overwrite`)."""
        where = f"user_id = {sql_str(user_id)}" if user_id is not None else None
        s = self.stores
        graph = s.graph is not None and vectors
        # graph rows as far as the builder has got: a message without its episode is built after the import
        writer = Writer(out, overwrite)
        counts = {"tombstones": 0, "messages": 0, "facts": 0, "fact_events": 0, "users": 0, "graph": 0}
        try:
            writer.write(
                {
                    "kind": "header",
                    "format": FORMAT,
                    "format_version": FORMAT_VERSION,
                    "product_version": __version__,
                    "created_at": time.time(),
                    "user_id": user_id,
                    "vectors": vectors,
                    "vector_encoding": VECTOR_ENCODING,
                    "model": {k: self.identity.get(k) for k in ModelIdentity.model_fields},  # embedding: its settings
                    "schema_version": SCHEMA_VERSION,
                    "graph": graph,
                }
            )
            # first what was forgotten, so that an import knows it before the records it covers
            tombstones = s.messages.tombstones
            kept = tombstones.where_user(user_id) if user_id is not None else None
            self._table(writer, tombstones.table, kept, "tombstone", "tombstones", False, counts)
            with s.messages.snapshot() as messages:  # no compaction or delete meanwhile
                self._table(writer, messages, where, "message", "messages", vectors, counts)
                self._table(writer, s.facts.facts, where, "fact", "facts", vectors, counts, [*FACT_COLUMNS, "vector"])
                self._table(writer, s.facts.events, where, "fact_event", "fact_events", False, counts)
                self._table(writer, s.facts.users, where, "user", "users", False, counts)
                if graph:
                    for name in GRAPH_TABLES:
                        self._graph_table(writer, s.graph.store.tables["graph_" + name], where, name, counts)
            writer.write({"kind": "end", "counts": counts})
            counts["bytes"] = writer.commit()
        except BaseException:
            writer.abort()
            raise
        return counts

    def _table(
        self,
        writer: Writer,
        table: Any,
        where: str | None,
        kind: str,
        key: str,
        vectors: bool,
        counts: dict[str, int],
        columns: list[str] | None = None,
    ) -> None:
        """`columns`: what a record holds (None: every column; facts leave out what their text derives)."""
        dim = int(self.identity["dim"])
        for batch in batches(table, where, columns):
            for record in _rows(batch, kind, vectors, dim):
                writer.write(record)
            counts[key] += batch.num_rows
            self.progress(key, counts[key])

    def _graph_table(self, writer: Writer, table: Any, where: str | None, name: str, counts: dict[str, int]) -> None:
        dim = int(self.identity["dim"])
        for batch in batches(table, where):
            for record in _rows(batch, "graph", True, dim):
                record.pop("kind")
                record.pop("rev", None)  # the commit that wrote the row: the importing store stamps its own
                writer.write({"kind": "graph", "table": name, "row": record})
            counts["graph"] += batch.num_rows
            self.progress("graph", counts["graph"])
