"""The per-user vector cache: pure logic, and its agreement with LanceDB through the real process."""

from __future__ import annotations

import time

import numpy as np
import pytest
from helpers import cache_rows

from sidecar.messages.quantized import BLOCK_ROWS, quantize, scores, widen
from sidecar.messages.vector_cache import VectorCache


def test_search_is_exact_ranking_with_filters():
    cache = VectorCache(8, 1 << 20)
    rows, vecs = cache_rows("u", 50, bot_every=3)
    entry = cache.put("u", rows, vecs)
    q = vecs[7]
    got = entry.search(q, 5)
    expected = np.argsort(-(vecs @ q))[:5]
    assert [r["id"] for r in got] == [f"u-{i}" for i in expected]
    assert got[0]["id"] == "u-7" and abs(got[0]["similarity"] - 1.0) < 2e-3
    assert entry.search(q, 5, since=-1.0) == got  # the filtered path agrees with the unfiltered one
    assert all(not r["is_bot"] for r in entry.search(q, 50, include_bot=False))
    assert len(entry.search(q, 50, include_bot=False)) == 50 - 17
    window = entry.search(q, 50, since=10, until=19)
    assert sorted(r["timestamp"] for r in window) == [float(i) for i in range(10, 20)]
    assert entry.search(q, 5, since=1000) == []


def test_keyword_index_counts_against_the_budget_and_follows_appends():
    """The keyword index a user's first keyword search builds is held within the cache's byte budget
    (evicting the least recently used users), and rows committed later are keyword-searchable at once."""
    rows, vecs = cache_rows("a", 30)
    plain = VectorCache(8, 1 << 30).put("a", rows, vecs).nbytes
    cache = VectorCache(8, 2 * plain + 64)
    cache.put("b", *cache_rows("b", 30))
    entry = cache.put("a", rows, vecs)
    assert cache.get("b") is not None and cache.get("a") is entry  # both fit without keyword indexes
    assert cache.keyword_ids("a", entry, "m7", ("content",), 5) == [["a-7"]]
    assert entry.keywords is not None and entry.keywords.nbytes > 0
    assert entry.nbytes == plain + entry.keywords.nbytes
    assert cache.get("b") is None and cache.nbytes == entry.nbytes <= cache.budget  # b, least recent, made room
    more, more_v = cache_rows("a", 2, start=30)
    cache.append(more, more_v)
    assert cache.keyword_ids("a", entry, "m31", ("content", "search_text"), 5) == [["a-31"], ["a-31"]]


def test_append_grows_only_cached_users_and_keeps_order():
    cache = VectorCache(8, 1 << 20)
    rows, vecs = cache_rows("a", 3)
    cache.put("a", rows, vecs)
    more_a, va = cache_rows("a", 40, start=3)
    other, vb = cache_rows("b", 2)
    cache.append(more_a + other, np.vstack([va, vb]))
    assert len(cache.get("a")) == 43 and cache.get("b") is None
    assert [cache.get("a").row(i)["id"] for i in range(4)] == ["a-0", "a-1", "a-2", "a-3"]
    assert cache.get("a").search(va[39], 1)[0]["id"] == "a-42"


def test_a_users_first_rows_ever_are_cached_whole_and_others_wait_for_the_table():
    """Once the users in the table are known, the first rows of a user who has none there are that user's
    complete set and are cached at once; a known user who is not cached, and any user while nothing is
    known, still load from the table on their first query. A new user never evicts anyone."""
    cache = VectorCache(8, 1 << 20)
    cache.append(*cache_rows("early", 3))
    assert cache.get("early") is None  # nothing known yet (before the start-up warm-up)
    cache.known = {"early", "old"}
    first, v1 = cache_rows("new", 4)
    old, v2 = cache_rows("old", 2)
    cache.append(first + old, np.vstack([v1, v2]))
    assert len(cache.get("new")) == 4 and cache.get("old") is None
    more, v3 = cache_rows("new", 3, start=4)
    cache.append(more, v3)
    assert len(cache.get("new")) == 7 and cache.get("new").search(v3[2], 1)[0]["id"] == "new-6"
    assert cache.known == {"early", "old", "new"}
    full = VectorCache(8, cache.get("new").nbytes + 10)
    full.put("kept", *cache_rows("kept", 7))
    full.known = {"kept"}
    full.append(*cache_rows("late", 5))
    assert full.get("late") is None and full.get("kept") is not None
    full.clear()  # another sidecar wrote to the table: what it holds is no longer known
    full.append(*cache_rows("after", 2))
    assert full.known is None and full.get("after") is None


def test_budget_evicts_least_recently_used():
    rows, vecs = cache_rows("x", 10)
    one = VectorCache(8, 1 << 30).put("x", rows, vecs).nbytes
    cache = VectorCache(8, 2 * one + 10)
    for u in ("a", "b"):
        cache.put(u, *cache_rows(u, 10))
    cache.get("a")  # a is now more recent than b
    cache.put("c", *cache_rows("c", 10))
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None
    assert cache.nbytes <= cache.budget
    big = VectorCache(8, 10)  # an entry larger than the budget is served but not kept
    assert len(big.put("x", rows, vecs)) == 10 and big.get("x") is None


def test_cache_and_table_agree_and_stay_consistent(spawn, tmp_path):
    data = tmp_path / "shared"
    t0 = int(time.time()) - 1000
    sc = spawn(data_dir=data)
    topics = [
        "my cat sleeps all day",
        "we went hiking in the alps",
        "pizza with pineapple is fine",
        "I am learning the violin",
        "the dog chased the mailman",
        "my sister lives in Lisbon",
    ]
    for i, t in enumerate(topics * 3):
        sc.store(f"user{i % 2}", f"{t} ({i})", is_bot=(i % 5 == 0), timestamp=t0 + i)
    queries = [
        {"type": "query", "user_id": "user0", "text": "pets", "limit": 4},
        {"type": "query", "user_id": "user1", "text": "music", "limit": 3, "include_bot": False},
        {"type": "query", "user_id": "user0", "text": "travel", "limit": 9, "since": t0 + 4, "until": t0 + 12},
    ]
    cached = [sc.request(q)["messages"] for q in queries]
    new = sc.store("user0", "a brand new kitten arrived today")
    exact = {**queries[0], "text": "a brand new kitten arrived today", "limit": 1}
    assert sc.request(exact)["messages"][0]["id"] == new  # appended to the cached user at once
    assert sc.request({"type": "delete", "id": new})["deleted"] == 1
    assert new not in [m["id"] for m in sc.request(queries[0])["messages"]]
    assert sc.shutdown() == 0
    plain = spawn("--cache-mb", "0", data_dir=data)
    direct = [plain.request(q)["messages"] for q in queries]
    for a, b in zip(cached, direct):
        assert [m["id"] for m in a] == [m["id"] for m in b]
        assert np.allclose([m["similarity"] for m in a], [m["similarity"] for m in b], atol=2e-3)
    assert plain.shutdown() == 0


def test_cache_is_warmed_at_start_up_and_bounded_by_its_budget(spawn, tmp_path):
    data = tmp_path / "warm"
    sc = spawn(data_dir=data)
    for u in range(3):
        sc.request(
            {"type": "store", "messages": [{"user_id": f"w{u}", "content": f"note {i} of user {u}"} for i in range(20)]}
        )
    assert sc.shutdown() == 0
    sc = spawn(data_dir=data)
    deadline = time.time() + 30
    while time.time() < deadline and sc.request({"type": "stats"})["cache"]["users"] < 3:
        time.sleep(0.1)
    cache = sc.request({"type": "stats"})["cache"]  # no query was sent: the start-up warm-up loaded them
    assert cache["users"] == 3 and 0 < cache["bytes"] <= cache["budget_bytes"] == 16 << 20  # the default
    assert sc.shutdown() == 0
    off = spawn("--cache-mb", "0", data_dir=data)
    assert off.request({"type": "query", "user_id": "w1", "text": "note 3", "limit": 1})["messages"]
    assert off.request({"type": "stats"})["cache"] == {
        "users": 0,
        "bytes": 0,
        "budget_bytes": 0,
        "spilled_users": 0,
        "spilled_bytes": 0,
    }
    assert off.shutdown() == 0


def test_users_of_an_import_are_in_memory_before_their_first_query(spawn, tmp_path):
    """After a batch import into a running sidecar, every imported user is served from memory: no
    first query pays for reading the table (stats counts them cached before any query), and what the
    cache answers is what the table holds."""
    data = tmp_path / "import"
    sc = spawn("--log-level", "info", data_dir=data)
    deadline = time.time() + 30
    while time.time() < deadline and "cache: 0 users loaded" not in sc.stderr():
        time.sleep(0.05)
    assert "cache: 0 users loaded" in sc.stderr()
    words = ["violin", "hiking", "pizza", "kitten", "Lisbon"]
    sc.request(
        {
            "type": "store",
            "messages": [{"user_id": f"imp{u}", "content": f"I love {w} ({u})"} for u in range(12) for w in words],
        }
    )
    assert sc.request({"type": "stats"})["cache"]["users"] == 12
    queries = [{"type": "query", "user_id": f"imp{u}", "text": w, "limit": 3} for u, w in ((0, "music"), (7, "cats"))]
    cached = [sc.request(q)["messages"] for q in queries]
    assert all({m["content"].split("(")[1] for m in ms} == {f"{u})"} for ms, u in zip(cached, (0, 7)))
    assert sc.shutdown() == 0
    plain = spawn("--cache-mb", "0", data_dir=data)
    for q, a in zip(queries, cached):
        assert [m["id"] for m in plain.request(q)["messages"]] == [m["id"] for m in a]
    assert plain.shutdown() == 0


def test_a_row_with_chunks_scores_as_its_best_chunk_and_carries_its_span():
    cache = VectorCache(8, 1 << 20)
    rows, vecs = cache_rows("u", 10, bot_every=4)
    entry = cache.put("u", rows, vecs)
    rng = np.random.default_rng(7)
    q = rng.normal(size=8).astype(np.float32)
    q /= np.linalg.norm(q)
    chunks = rng.normal(size=(3, 8)).astype(np.float32)
    chunks /= np.linalg.norm(chunks, axis=1, keepdims=True)
    chunks[1] = q  # u-5's middle chunk is the query itself
    before = cache.nbytes
    cache.add_chunks("u", ["u-5"] * 3, np.array([[0, 100], [80, 180], [160, 240]]), chunks)
    assert cache.nbytes > before
    got = entry.search(q, 3)
    assert got[0]["id"] == "u-5" and got[0]["span"] == [80, 180] and abs(got[0]["similarity"] - 1.0) < 2e-3
    assert [r["id"] for r in got].count("u-5") == 1 and all("span" not in r for r in got[1:])
    assert entry.search(q, 3, since=-1.0) == got  # the filtered path agrees
    assert entry.by_ids(["u-5", "u-0"], q)[0]["span"] == [80, 180]
    # chunks of a memory already held are not added twice; chunks of unknown rows are ignored
    cache.add_chunks("u", ["u-5", "nope"], np.array([[0, 1], [0, 1]]), chunks[:2])
    assert entry.search(q, 1)[0]["span"] == [80, 180]
    # when its chunks all score low, a row with chunks ranks by them, not by its own (first-window) vector
    entry_q = vecs[2] / np.linalg.norm(vecs[2])
    far = -np.tile(entry_q, (2, 1))  # the opposite of the query: cosine -1, the lowest there is
    cache.add_chunks("u", ["u-2", "u-2"], np.array([[0, 5], [5, 9]]), far)
    assert entry.search(entry_q, 10)[-1]["id"] == "u-2"


def test_quantized_scores_match_the_widened_product_across_block_edges():
    rng = np.random.default_rng(3)
    q = rng.normal(size=384).astype(np.float32)
    for n in (0, 1, BLOCK_ROWS - 1, BLOCK_ROWS, BLOCK_ROWS + 1, 3 * BLOCK_ROWS + 17):
        rows, scales = quantize(rng.normal(size=(n, 384)).astype(np.float32))
        got = scores(rows, scales, q)
        assert got.shape == (n,) and got.dtype == np.float32
        np.testing.assert_allclose(got, widen(rows, scales) @ q, rtol=1e-5, atol=1e-4)


def test_quantized_unit_vectors_keep_their_cosines_within_a_few_thousandths():
    """Each component within half a step of its row's scale, a zero vector stays zero, and cosines between
    unit vectors move by well under the gaps that decide a ranking."""
    rng = np.random.default_rng(4)
    v = rng.normal(size=(500, 384)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    v[7] = 0.0
    rows, scales = quantize(v)
    assert rows.dtype == np.int8 and scales.dtype == np.float32 and rows.shape == v.shape
    assert np.all(np.abs(widen(rows, scales) - v) <= scales[:, None] / 2 + 1e-7)
    assert not widen(rows, scales)[7].any()
    exact = v @ v[3]
    assert np.abs(scores(rows, scales, v[3]) - exact).max() < 3e-3
    assert np.argmax(scores(rows, scales, v[3])) == 3


def test_chunks_added_between_two_identical_queries_count_in_the_second():
    cache = VectorCache(8, 1 << 20)
    rows, vecs = cache_rows("u", 6)
    entry = cache.put("u", rows, vecs)
    q = vecs[0]
    far = -np.tile(q, (2, 1))
    cache.add_chunks("u", ["u-1", "u-1"], np.array([[0, 5], [5, 9]]), far)
    assert entry.search(q, 1)[0]["id"] == "u-0"
    cache.add_chunks("u", ["u-4"], np.array([[10, 20]]), q[None, :] * 1.0)  # a chunk equal to the query
    first = entry.search(q, 2)
    assert {r["id"] for r in first} == {"u-0", "u-4"} and [r.get("span") for r in first if r["id"] == "u-4"] == [
        [10, 20]
    ]
    assert entry.by_ids(["u-4"], q)[0]["span"] == [10, 20]  # the same query's second look agrees
    more, _ = cache_rows("u", 2, start=6)
    cache.append(more, vecs[:2])  # rows appended after a query: the chunk scores cover them too
    assert len(entry.search(q, 8)) == 8


@pytest.mark.parametrize("batch_rows", [None, 3])
def test_the_warm_up_counts_a_users_rows_as_the_cache_will(tmp_path, monkeypatch, batch_rows):
    """The start-up warm-up picks the users that fit the budget by `search.user_sizes`, read from the table:
    it must agree with what the cache then counts for them, or the last users loaded evict the first.
    Ids, message ids, reply ids and non-ASCII text all count in UTF-8 bytes. The table is read in batches
    (3 rows: each user's rows spread over several), summed across them."""
    from sidecar.messages import search
    from sidecar.messages.store import MessageStore

    if batch_rows is not None:
        monkeypatch.setattr(search, "SIZE_SCAN_ROWS", batch_rows)
    dim = 8
    rows = [
        {
            "id": f"row-{i}-é",
            "user_id": "u" if i % 3 else "v",
            "content": f"café {i} ☕" * (i % 4 + 1),
            "is_bot": False,
            "timestamp": float(i),
            "message_id": f"discord-{i:018d}" if i % 2 else None,
            "channel_id": "c",
            "reply_to": "discord-000000000000000001" if i % 5 == 0 else None,
            "username": "Ann",
        }
        for i in range(40)
    ]
    vectors = np.random.default_rng(0).normal(size=(40, dim)).astype(np.float32)
    store = MessageStore(
        tmp_path,
        {"name": "test-model", "dim": dim, "digest": "0" * 64},
        compact_every_writes=10**9,
        compact_interval_seconds=0,
    )
    try:
        store.add(rows, vectors)
        store.flush()
        sizes = search.user_sizes(store.table, dim)
        if batch_rows is not None:  # the scan really came in several batches
            assert sum(1 for _ in store.table.search().select(["id"]).limit(None).to_batches(batch_rows)) > 1
    finally:
        store.close()
    for user in ("u", "v"):
        mine = [k for k, r in enumerate(rows) if r["user_id"] == user]
        entry = VectorCache(dim, 1 << 30).put(user, [rows[k] for k in mine], vectors[mine])
        assert sizes[user] == entry.nbytes


def test_the_default_budget_holds_about_twenty_thousand_short_memories(spawn):
    """README and docs/data.md: the default 16 MB cache holds about 20,000 short memories (a short chat message,
    its int8 vector and its keyword index: about 780 bytes). Measured over the real process: a user's 500
    stored chat lines (in four batches, so appends to the cached user count too), searched by keyword (which
    builds the index), as `stats` counts them. The cost per memory does not depend on their number (676 bytes for
    500, 678 for 2,000 on 2026-12-07), so 500 measure it at a quarter of the embedding."""
    sc = spawn()
    MEMORIES = 500
    subjects = ["my sister", "the dog", "our landlord", "Tom from work", "grandma", "the new intern"]
    doings = [
        "moved to Lisbon",
        "started learning the cello",
        "got a promotion",
        "ran a half marathon",
        "adopted a kitten",
        "booked a trip to Kyoto",
        "fixed the old bike",
        "baked sourdough",
    ]
    lines = [
        f"{subjects[i % 6]} {doings[(i // 6) % 8]} on day {i}, which was {'great' if i % 3 else 'odd'}"
        for i in range(MEMORIES)
    ]
    for start in range(0, MEMORIES, MEMORIES // 4):
        assert (
            sc.request(
                {
                    "type": "store",
                    "messages": [{"user_id": "u", "content": c} for c in lines[start : start + MEMORIES // 4]],
                }
            )["type"]
            == "ok"
        )
    assert sc.request({"type": "query", "user_id": "u", "text": "cello lessons", "mode": "keyword", "limit": 3})[
        "messages"
    ]
    cache = sc.request({"type": "stats"})["cache"]
    per_memory = cache["bytes"] / MEMORIES
    assert cache["users"] == 1 and cache["budget_bytes"] == 16 << 20
    assert 400 < per_memory <= (16 << 20) / 20_000, per_memory  # 20,000 fit in the budget (692 on 2026-11-27)
    assert sc.shutdown() == 0
