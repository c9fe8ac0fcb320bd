"""Forgotten stays forgotten: the `tombstones` table. `forget_user` leaves one for the user and `delete` one for
the memory: what was forgotten (`of` "user" or "memory", and its id) and when (`at`, unix seconds), nothing
else. An import skips what a tombstone covers (portable/importer.py); an export carries them, so a backup
restored on another machine honours them.

What a tombstone covers: a memory's, the memory with that id; a user's, every record of that user dated at or
before it (a message by its timestamp, a fact by when it was made, an event by when it happened, a display name
by when it was set), so what the user says after being forgotten is theirs to keep. The same id forgotten again
writes a later tombstone; the latest counts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

import pyarrow as pa

from ..storage import compact_table, sql_in, sql_str

TOMBSTONES = "tombstones"
KINDS = ("user", "memory")
SCHEMA = pa.schema(
    [
        pa.field("of", pa.string(), nullable=False),  # "user" or "memory"
        pa.field("id", pa.string(), nullable=False),  # the user id or the memory id
        pa.field("at", pa.float64(), nullable=False),  # when it was forgotten (unix seconds)
    ]
)
COLUMNS = ["of", "id", "at"]
SLICE = 1_000  # ids per delete filter


class Tombstones:
    def __init__(self, database: Any, note_write: Callable[[], None]):
        self._note_write = note_write  # each commit counts towards the compaction schedule
        self.table = database.open_or_create(TOMBSTONES, SCHEMA)
        self.lock = threading.Lock()
        self._written = False

    def write(self, of: str, ids: Iterable[str], at: float) -> int:
        """One tombstone per id; how many were written."""
        rows = [{"of": of, "id": i, "at": float(at)} for i in ids]
        if rows:
            self.add(rows)
        return len(rows)

    def add(self, rows: list[dict[str, Any]]) -> None:
        with self.lock:
            self.table.add(pa.Table.from_pylist([{c: r[c] for c in COLUMNS} for r in rows], schema=SCHEMA))
            self._written = True
        self._note_write()

    def latest(self) -> dict[str, dict[str, float]]:
        """of -> {id: when it was last forgotten}: every tombstone, read once (an import reads it at its start,
        and then looks records up in memory: linear in the file and the tombstones)."""
        data = self.table.search().select(COLUMNS).limit(None).to_arrow()
        out: dict[str, dict[str, float]] = {k: {} for k in KINDS}
        for of, i, at in zip(
            data.column("of").to_pylist(), data.column("id").to_pylist(), data.column("at").to_pylist()
        ):
            seen = out.setdefault(of, {})
            if at > seen.get(i, -1.0):
                seen[i] = at
        return out

    def clear(self, of: str, ids: list[str]) -> None:
        """The tombstones of these ids go (an import with `restore_forgotten`)."""
        if not ids:
            return
        with self.lock:
            for start in range(0, len(ids), SLICE):
                self.table.delete(f"of = {sql_str(of)} AND {sql_in('id', ids[start : start + SLICE])}")
            self._written = True
        self._note_write()

    def where_user(self, user_id: str) -> str:
        """The filter of the tombstones a one-user export carries: the user's own (a memory's names no user)."""
        return f"of = 'user' AND id = {sql_str(user_id)}"

    def count(self) -> int:
        return self.table.count_rows()

    def compact(self, exclusive: bool, keep: timedelta | None = None) -> None:
        if not self._written:
            return
        if exclusive and keep is None:
            with self.lock:
                compact_table(self.table, True)
        else:
            compact_table(self.table, False, keep)
        self._written = False
