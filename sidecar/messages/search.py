"""The reads and rankings behind a message search: filters, keyword and hybrid ranking over one user's rows
held in memory (a cache entry, or rows read for one search), rows by id with their similarity, what the
cache warm-up reads, and a whole search straight on a table (read-only, for the inspector)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..storage import cosine_search, sql_in, sql_num, sql_str
from .ranking import POOL, fuse_hybrid
from .schema import CACHE_COLUMNS, RESULT_COLUMNS, Context, split
from .vector_cache import TEXT_FIELDS, UserRows, row_bytes

Filter = tuple[bool, "float | None", "float | None"]  # include_bot, since, until
SCAN_BATCH_ROWS = 262_144  # rows per batch of a whole-table scan read as it streams (ids_not_in)
COHORT_USERS = 500  # users whose missing ids the graph's catch-up holds at a time (missing_by_users)
SIZE_SCAN_ROWS = 65_536  # rows per batch of the warm-up's scan of every text (user_sizes): wider rows than the ids'


def where(user_id: str, include_bot: bool, since: float | None, until: float | None) -> str:
    clauses = [f"user_id = {sql_str(user_id)}"]
    if not include_bot:
        clauses.append("is_bot = false")
    if since is not None:
        clauses.append(f"timestamp >= {sql_num(since)}")
    if until is not None:
        clauses.append(f"timestamp <= {sql_num(until)}")
    return " AND ".join(clauses)


def rank_rows(
    entry: UserRows,
    text: str,
    vector: np.ndarray,
    mode: str,
    limit: int,
    flt: Filter = (True, None, None),
    keyword_ids: Callable[..., list[list[Any]]] | None = None,  # ids, or (id, BM25 score) pairs: `scored`
    scripts: frozenset[str] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, list[str]], dict[str, dict[str, Any]]]:
    """A keyword or hybrid search over one user's rows in memory: keyword, the best `limit` by BM25 over
    the text (messages/keywords.py); hybrid, BM25 over the text and over search_text (the previous two
    messages, then this one) fused with the semantic list by weighted reciprocal rank (ranking.py).
    Filters apply before ranking. Returns the rows, best first, each with the `score` it was ranked by (BM25,
    or the fused score; hybrid: and `keyword_match`, found by a keyword list, read by messages/padding.py), the
    id lists and, by id, what fusion reads of every row looked at (`UserRows.candidates`: similarity,
    username, position).
    `keyword_ids(fields, pool, *flt)` (default: the entry's own) lets the cache count an index it builds.
    `scripts`: those the embedding model reads (None: every script; ranking.py)."""
    keyword_ids = keyword_ids or entry.keyword_ids
    if mode == "keyword":
        bm25 = dict(keyword_ids(text, ("content",), limit, *flt, scored=True)[0])
        scored = entry.scored(list(bm25), vector)
        rows = entry.results(scored, vector)
        for r in rows:
            r["score"] = bm25[r["id"]]
        return rows, {"content": list(bm25)}, entry.candidates(scored)
    found = keyword_ids(text, ("content", "search_text"), POOL, *flt)
    semantic = entry.candidates(entry.ranked(vector, POOL, *flt))
    ids = {"semantic": list(semantic), "content": found[0], "search_text": found[1]}
    extra = list(dict.fromkeys(i for i in found[0] + found[1] if i not in semantic))
    by_id = {**semantic, **entry.candidates(entry.scored(extra, vector))}
    best = fuse_hybrid(text, ids, by_id, limit, scripts)  # result rows only for the few returned
    rows = entry.results([(c["position"], c["similarity"]) for c in best], vector)
    matched = {*found[0], *found[1]}
    for r, c in zip(rows, best):
        r["score"] = c["score"]
        r["keyword_match"] = r["id"] in matched  # shares a term with the text (its own or its context's)
    return rows, ids, by_id


def user_rows(
    table: Any, user_id: str, dim: int, chunks: tuple[list[str], np.ndarray, np.ndarray] | None = None
) -> UserRows:
    """One user's rows (and their long memories' chunks, when given) read from the table into a UserRows
    of their own, for one search: not cached, not counted in any budget."""
    entry = UserRows(dim)
    entry.extend(*cache_rows(table, where(user_id, True, None, None), dim))
    if chunks is not None:
        entry.add_chunks(*chunks)
    return entry


def rows_by_ids(table: Any, ids: list[str], vector: np.ndarray, dim: int) -> list[dict[str, Any]]:
    """Result rows for ids (in that order) with their cosine similarity to `vector`, read from the table."""
    if not ids:
        return []
    result = table.search().where(sql_in("id", ids)).select([*RESULT_COLUMNS, "vector"]).limit(None).to_arrow()
    vectors = result.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    sims = vectors.reshape(-1, dim) @ vector.astype(np.float32)
    rows = {r["id"]: {**r, "similarity": float(sim)} for r, sim in zip(result.select(RESULT_COLUMNS).to_pylist(), sims)}
    return [rows[i] for i in ids if i in rows]


def cache_rows(table: Any, where: str, dim: int) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The rows matching `where` as the vector cache takes them: row dicts and float32 vectors."""
    return split(table.search().where(where).select([*CACHE_COLUMNS, "vector"]).limit(None).to_arrow(), dim)


def newest_timestamps(table: Any, where: str, limit: int) -> list[float]:
    """The `limit` newest timestamps of the rows matching `where` (a narrow column sorts fast): the first of
    `MessageStore.latest`'s two reads, the second reading the whole rows at or after the oldest of them
    (100k rows, 20k in the channel: 30 ms, against 48 ms for one ordered read of whole rows)."""
    from lancedb.query import ColumnOrdering

    newest_first = [ColumnOrdering(column_name="timestamp", ascending=False)]
    return (
        table.search()
        .where(where)
        .select(["timestamp"])
        .order_by(newest_first)
        .limit(limit)
        .to_arrow()
        .column("timestamp")
        .to_pylist()
    )


def user_sizes(table: Any, dim: int) -> dict[str, int]:
    """user_id -> the bytes the vector cache would hold for the user's rows (their texts' UTF-8 counted as
    the cache counts them). The table is read in batches, each summed by user as it comes: at 1,000,000
    memories, read whole, it peaked 231 MiB over the process's RSS and left 170 held; in batches, 130 and 34,
    in half the time (docs/performance.md, "The start-up's two scans apart")."""
    parts = []
    for batch in table.search().select(["user_id", *TEXT_FIELDS]).limit(None).to_batches(SIZE_SCAN_ROWS):
        total = pc.fill_null(pc.binary_length(batch.column(TEXT_FIELDS[0])), 0)
        for field in TEXT_FIELDS[1:]:
            total = pc.add(total, pc.fill_null(pc.binary_length(batch.column(field)), 0))
        parts.append(
            pa.table({"user_id": batch.column("user_id"), "bytes": total})
            .group_by("user_id")
            .aggregate([("bytes", "sum"), ("bytes", "count")])
        )
    if not parts:
        return {}
    per_user = pa.concat_tables(parts).group_by("user_id").aggregate([("bytes_sum", "sum"), ("bytes_count", "sum")])
    return {
        uid: row_bytes(dim, 0) * n + int(b)
        for uid, b, n in zip(*(per_user.column(c).to_pylist() for c in ("user_id", "bytes_sum_sum", "bytes_count_sum")))
    }


def fitting(sizes: dict[str, int], budget: int) -> list[str]:
    """The users (largest first) that fit the budget together."""
    chosen, total = [], 0
    for uid, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
        if total + size <= budget:
            chosen.append(uid)
            total += size
    return chosen


def warm_cache(store: Any) -> int:
    """Load as many users into the store's vector cache as its budget holds (largest first), with their
    chunks. Returns the users loaded."""
    with store._reading():
        sizes = user_sizes(store.table, store.dim)
        store.cache.known = set(sizes)  # under the lock: no row is added meanwhile
    loaded = 0
    chosen = fitting(sizes, store.cache.budget)
    for start in range(0, len(chosen), 20):  # a few users per scan keeps the transient memory small
        with store._reading():
            rows, vectors = cache_rows(store.table, sql_in("user_id", chosen[start : start + 20]), store.dim)
            chunks = store.chunks.of_users(chosen[start : start + 20])
            per_user: dict[str, list[int]] = {}
            for i, r in enumerate(rows):
                per_user.setdefault(r["user_id"], []).append(i)
            for uid, idx in per_user.items():
                if store.cache.get(uid) is None:  # a query may have loaded it meanwhile
                    store.cache.put(uid, [rows[i] for i in idx], vectors[idx], chunks.get(uid))
                    loaded += 1
    return loaded


def rows_with_vectors(table: Any, ids: list[str], dim: int) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The rows of these ids that exist (in that order) and their float32 vectors."""
    rows: list[dict[str, Any]] = []
    parts: list[np.ndarray] = []
    for start in range(0, len(ids), 500):
        got = (
            table.search()
            .where(sql_in("id", ids[start : start + 500]))
            .select([*RESULT_COLUMNS, "vector"])
            .limit(None)
            .to_arrow()
        )
        rows += got.select(RESULT_COLUMNS).to_pylist()
        parts.append(
            got.column("vector")
            .combine_chunks()
            .flatten()
            .to_numpy(zero_copy_only=False)
            .reshape(-1, dim)
            .astype(np.float32, copy=False)
        )
    vectors = np.concatenate(parts) if parts else np.empty((0, dim), np.float32)
    order = {i: k for k, i in enumerate(ids)}
    perm = sorted(range(len(rows)), key=lambda k: order[rows[k]["id"]])
    return [rows[k] for k in perm], vectors[perm] if perm else vectors


def table_users(table: Any) -> list[str]:
    """Every user id the table holds, sorted (its user_id column scanned in batches, each batch's distinct ids
    kept)."""
    seen = [
        pc.unique(b.column("user_id"))
        for b in table.search().select(["user_id"]).limit(None).to_batches(SCAN_BATCH_ROWS)
    ]
    return sorted(pc.unique(pa.concat_arrays(seen)).to_pylist()) if seen else []


def missing_by_users(
    read: Callable[[], Any], done: Callable[[list[str]], pa.Array]
) -> Iterator[tuple[pa.Array, int, int, int]]:
    """The ids of the rows that `done(users)` (an Arrow string array of ids) does not name, user by user, oldest
    first, COHORT_USERS users at a time: (ids, the group's first and last user by number from 1, users in all).
    `read()` is a context manager giving the table for one read; each group is one, and nothing is held between
    them (a 1M catch-up held all 1M ids, about 40 MB, for hours)."""
    with read() as table:
        users = table_users(table)
    for start in range(0, len(users), COHORT_USERS):
        group = users[start : start + COHORT_USERS]
        have = done(group)
        with read() as table:
            ids = ids_not_in(table, have, group)
        yield ids, start + 1, start + len(group), len(users)


def ids_not_in(table: Any, have: pa.Array, of_users: list[str]) -> pa.Array:
    """The ids of these users' rows not in `have`, user by user and each user's oldest first (ties by id), as an
    Arrow array (`missing_by_users` asks for a group of users at a time). By user: the graph's catch-up then
    builds one user's messages after another and loads each user's graph once, not once per batch
    (docs/graph.md, "Crash safety and speed"). Held as Arrow, not Python strings (99,000 ids: 3.8 MiB against
    8.9 MiB, found in 58-72 ms against 346-376). The rows are read in batches, each filtered as it comes, and
    only the kept ids are copied to be sorted (a whole 1M table read at once peaked 217 MiB over the process,
    122-131 in batches). Arrow hashes `have` again for each batch (`is_in` keeps no set between calls)."""
    ids, users, stamps = [], [], []
    query = table.search().where(sql_in("user_id", of_users)).select(["id", "user_id", "timestamp"])
    for batch in query.limit(None).to_batches(SCAN_BATCH_ROWS):
        keep = pc.invert(pc.is_in(batch.column("id"), value_set=have))
        ids.append(batch.column("id").filter(keep))
        users.append(batch.column("user_id").filter(keep))
        stamps.append(batch.column("timestamp").filter(keep))
    if not ids:
        return pa.array([], pa.string())
    del batch, keep  # the last batch read, as each one before it, is not held through the sort
    found, owners, times = pa.concat_arrays(ids), pa.concat_arrays(users), pa.concat_arrays(stamps)
    del ids, users, stamps  # the kept parts, now copied into one array each
    order = pc.sort_indices(
        pa.table({"user_id": owners, "timestamp": times, "id": found}),
        sort_keys=[("user_id", "ascending"), ("timestamp", "ascending"), ("id", "ascending")],
    )
    del owners, times
    return found.take(order)


def search_table(
    table: Any,
    embed: Callable[[], np.ndarray],
    text: str,
    user_id: str,
    mode: str,
    limit: int,
    dim: int,
    scripts: frozenset[str] | None = None,
) -> list[dict[str, Any]]:
    """One user's best messages for a query, read straight from a messages table: no store, no vector
    cache, no commit of logged rows, nothing written (the inspector's search; the same lists and the
    same fusion as `MessageStore.search`). Each row carries its cosine `similarity`, `ranks` (its place
    in each list: semantic, content, search_text) and, in keyword and hybrid mode, the `score` that orders
    them (BM25, the fused score). `scripts`: those the model reads (None: every script)."""
    if mode == "semantic":
        rows = cosine_search(table, embed(), where(user_id, True, None, None), RESULT_COLUMNS, limit)
        ids = {"semantic": [r["id"] for r in rows]}
    else:
        rows, ids, _by_id = rank_rows(user_rows(table, user_id, dim), text, embed(), mode, limit, scripts=scripts)
    places = {name: {rid: k for k, rid in enumerate(found_ids, 1)} for name, found_ids in ids.items()}
    for r in rows:
        r["ranks"] = {name: at[r["id"]] for name, at in places.items() if r["id"] in at}
    return rows


def newest_by_key(table: Any, keys: list[tuple[str, str | None]], n: int) -> dict[tuple[str, str | None], Context]:
    """[(id, content)] of the n newest rows (by timestamp) of each (user, channel) key, oldest first.
    Two reads for the whole batch: the keys' users' narrow columns, then the chosen rows' text. A
    batch over many users made two reads per user before (measured: 6.6 s per 1,000-row batch over
    1,000 new users at 50k rows)."""
    wanted = set(keys)
    users = sql_in("user_id", sorted({u for u, _ in wanted}))
    narrow = table.search().where(users).select(["id", "user_id", "channel_id", "timestamp"]).limit(None).to_arrow()
    found: dict[tuple[str, str | None], list[tuple[float, str]]] = {}
    for mid, user, channel, ts in zip(
        *(narrow.column(c).to_pylist() for c in ("id", "user_id", "channel_id", "timestamp"))
    ):
        if (user, channel) in wanted:
            found.setdefault((user, channel), []).append((ts, mid))
    chosen = {key: heapq.nlargest(n, rows, key=lambda r: r[0]) for key, rows in found.items()}
    ids = [mid for rows in chosen.values() for _, mid in rows]
    text: dict[str, str] = {}
    if ids:
        got = table.search().where(f"{users} AND {sql_in('id', ids)}").select(["id", "content"]).limit(None).to_arrow()
        text = dict(zip(got.column("id").to_pylist(), got.column("content").to_pylist()))
    return {key: [(mid, text[mid]) for _, mid in reversed(chosen.get(key, [])) if mid in text] for key in keys}
