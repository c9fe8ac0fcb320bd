"""The messages table: its columns, the keyword-search text each row carries (the row's own text
after the previous messages of the same user in the same channel), and the migration that added it.
Pure, apart from `migrate_2_to_3`, which rewrites the table."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pyarrow as pa

log = logging.getLogger("sidecar.store")

MESSAGES = "messages"


def message_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("content", pa.string(), nullable=False),
            pa.field("is_bot", pa.bool_(), nullable=False),
            pa.field("timestamp", pa.float64(), nullable=False),
            pa.field("message_id", pa.string()),
            pa.field("channel_id", pa.string()),
            pa.field("reply_to", pa.string()),
            pa.field("username", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
            # keyword-search text: the previous two messages of the same user in the same channel, then this one
            pa.field("search_text", pa.string(), nullable=False),
            pa.field("prev_id", pa.string()),  # the rows search_text borrowed from (reset when one is deleted)
            pa.field("prev2_id", pa.string()),
        ]
    )


# The columns requests filter on: user_id (query, forget_user), channel_id (channel windows),
# message_id (before_message_id and reply-chain look-ups: 15 -> 8 ms on 100k rows).
SCALAR_INDEXES = ("user_id", "channel_id", "message_id")

RESULT_COLUMNS = ["id", "user_id", "content", "is_bot", "timestamp", "message_id", "channel_id", "reply_to", "username"]
CACHE_COLUMNS = [*RESULT_COLUMNS, "prev_id", "prev2_id"]  # what the vector cache is loaded with

# Columns that had LanceDB full-text indexes before keyword search moved in process (keywords.py): an
# older data dir's are dropped at open, since every compaction rewrote them (at 100k rows a compaction
# takes 0.71x the time without them; docs/performance.md).
FTS_COLUMNS = ("content", "search_text")
CONTEXT_MESSAGES = 2  # previous messages (same user, same channel) in a row's search_text
CONTEXT_CHARS = 1000  # at most this much of each of them

Context = list  # [(id, content), ...] oldest first, at most CONTEXT_MESSAGES


def search_text(content: str, previous: list[str]) -> str:
    return "\n".join([p[-CONTEXT_CHARS:] for p in previous[-CONTEXT_MESSAGES:]] + [content])


def link_rows(rows: list[dict[str, Any]]) -> None:
    """search_text, prev_id and prev2_id for rows in arrival order, each linked to the previous messages
    of its (user, channel). The first row of a (user, channel) may carry the stored ones as `_prev`."""
    last: dict[tuple[Any, Any], Context] = {}
    for r in rows:
        key = (r["user_id"], r.get("channel_id"))
        given = r.pop("_prev", None) or []
        prev = (last[key] if key in last else given)[-CONTEXT_MESSAGES:]
        if r.get("search_text") is not None:  # linked already (an imported row): kept as it is
            last[key] = [*prev, (r["id"], r["content"])][-CONTEXT_MESSAGES:]
            continue
        r["search_text"] = search_text(r["content"], [c for _, c in prev])
        r["prev_id"] = prev[-1][0] if prev else None
        r["prev2_id"] = prev[-2][0] if len(prev) > 1 else None
        last[key] = [*prev, (r["id"], r["content"])][-CONTEXT_MESSAGES:]


def to_arrow(rows: list[dict[str, Any]], vectors: np.ndarray, dim: int) -> pa.Table:
    """Linked rows and their vectors as one table of the messages schema."""
    columns: dict[str, Any] = {name: [r.get(name) for r in rows] for name in RESULT_COLUMNS}
    columns["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dim)
    columns["search_text"] = [r.get("search_text") or r["content"] for r in rows]
    columns["prev_id"] = [r.get("prev_id") for r in rows]
    columns["prev2_id"] = [r.get("prev2_id") for r in rows]
    return pa.Table.from_pydict(columns, schema=message_schema(dim))


def split(table: pa.Table, dim: int) -> tuple[list[dict[str, Any]], np.ndarray]:
    """Arrow rows (CACHE_COLUMNS and the vector) -> (row dicts without the vector, float32 vectors: the
    table's own buffer where Arrow can share it; the vector cache quantizes them, messages/quantized.py)."""
    vec = table.column("vector").combine_chunks()
    vectors = vec.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
    return table.select(CACHE_COLUMNS).to_pylist(), vectors


def migrate_2_to_3(db: Any, table: Any, dim: int) -> Any:
    """Version 3 adds search_text/prev_id/prev2_id (each row linked to the previous messages of the same
    user in the same channel, by timestamp); the full-text indexes are built afterwards. Returns the
    rewritten table."""
    data = table.to_arrow()
    log.warning("migration to schema 3: linking %d memories for keyword search", data.num_rows)
    rows = data.select(["id", "user_id", "channel_id", "content", "timestamp"]).to_pylist()
    order = sorted(range(len(rows)), key=lambda i: rows[i]["timestamp"])  # stable: ties keep table order
    link_rows([rows[i] for i in order])
    schema = message_schema(dim)
    columns = {name: data.column(name) for name in data.column_names if name in schema.names}
    columns["search_text"] = pa.array([r["search_text"] for r in rows], pa.string())
    columns["prev_id"] = pa.array([r["prev_id"] for r in rows], pa.string())
    columns["prev2_id"] = pa.array([r["prev2_id"] for r in rows], pa.string())
    new = db.create_table(
        MESSAGES,
        data=pa.table({f.name: columns[f.name] for f in schema}, schema=schema),
        schema=schema,
        mode="overwrite",
    )
    log.warning("migration to schema 3: %d memories rewritten; building the indexes", data.num_rows)
    return new


def reembedded(db: Any, table: Any, dim: int, embed: Any) -> Any:
    """The table rewritten with every message embedded again by `embed` (another model); returns it."""
    data = table.to_arrow()
    log.warning("re-embedding %d memories with the current model", data.num_rows)
    contents = data.column("content").to_pylist()
    vectors = np.empty((len(contents), dim), dtype=np.float32)
    step = 1024
    for start in range(0, len(contents), step):
        vectors[start : start + step] = embed(contents[start : start + step])
        log.warning("re-embedded %d/%d", min(start + step, len(contents)), len(contents))
    data = data.set_column(
        data.schema.get_field_index("vector"),
        "vector",
        pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dim),
    )
    return db.create_table(MESSAGES, data=data, schema=message_schema(dim), mode="overwrite")
