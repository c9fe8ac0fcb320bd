"""Background reads of the messages table by id (the graph reading a trace's rows, catching up on missed
messages) run outside the store's lock: stores and queries do not wait for them, and the exclusive
compaction that deletes old versions' files waits for them to end.

Regression: under a 300,000-request soak, a py-spy profile put half of the request thread's samples in
waiting for the store's lock, mostly while the graph's threads read rows by id under it.

The counting is tested as pure logic; the lock scope with the real MessageStore on a real LanceDB dir,
one read held open at a known point (the read function wrapped to wait on an event).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from helpers import MODEL, in_thread, table_rows

from sidecar.messages import search
from sidecar.messages.quantized import quantize, widen
from sidecar.messages.store import MessageStore
from sidecar.storage import TableReads


def _held_read(store: MessageStore, ids: list[str], monkeypatch) -> tuple[threading.Thread, list, threading.Event]:
    """`store.embedded(ids)` in a thread, held inside its table read until the returned event is set."""
    entered, release = threading.Event(), threading.Event()
    real = search.rows_with_vectors

    def slow_read(table, ids, dim):
        entered.set()
        assert release.wait(30)
        return real(table, ids, dim)

    monkeypatch.setattr(search, "rows_with_vectors", slow_read)
    reader, got = in_thread(lambda: store.embedded(ids))
    assert entered.wait(30)  # the read is under way, logged rows committed first
    return reader, got, release


def test_wait_idle_returns_only_once_every_read_has_ended():
    reads, lock = TableReads(), threading.Lock()
    with reads.outside(lock, lambda: "table") as table:
        assert table == "table" and reads.running == 1
        assert not lock.locked()  # the lock is left before the read itself
        waiter, _done = in_thread(reads.wait_idle)
        waiter.join(0.2)
        assert waiter.is_alive()
    waiter.join(5)
    assert not waiter.is_alive() and reads.running == 0


def test_a_read_that_fails_is_not_counted_as_running():
    reads = TableReads()
    try:
        with reads.outside(threading.Lock(), lambda: "table"):
            raise RuntimeError("the read failed")
    except RuntimeError:
        pass
    assert reads.running == 0
    reads.wait_idle()  # returns at once


def _assert_compaction_waits_for_the_read(compact, release: threading.Event, reader: threading.Thread) -> None:
    """`compact`, in a thread, runs on while the read is held open, and ends once the read is let go."""
    compaction, _ = in_thread(compact)
    compaction.join(0.5)
    assert compaction.is_alive()  # it would delete the files the read has open
    release.set()
    reader.join(30)
    compaction.join(60)
    assert not compaction.is_alive()


def test_stores_and_queries_do_not_wait_for_a_read_by_id_and_exclusive_compaction_does(tmp_path, monkeypatch):
    store = MessageStore(tmp_path, MODEL)
    try:
        mine, mine_v = table_rows(20, "graph-user")
        store.add(mine, mine_v)
        reader, got, release = _held_read(store, [r["id"] for r in mine], monkeypatch)

        other, other_v = table_rows(3, "chat-user")
        t0 = time.perf_counter()
        store.add(other, other_v)  # acknowledged while the read is still running
        hits = store.search(other_v[1], "chat-user", 1)
        assert time.perf_counter() - t0 < 10 and reader.is_alive()
        assert hits[0]["id"] == other[1]["id"]

        _assert_compaction_waits_for_the_read(lambda: store.compact(exclusive=True), release, reader)
        rows, vectors = got[0]
        assert [r["id"] for r in rows] == [r["id"] for r in mine]
        np.testing.assert_allclose(vectors, mine_v, atol=3e-3)  # held as int8 with a scale per row
        assert len(store.rows("true")) == 23
    finally:
        release.set()
        store.close()


def test_close_waits_for_a_read_by_id_to_end(tmp_path, monkeypatch):
    store = MessageStore(tmp_path, MODEL)
    mine, mine_v = table_rows(5, "graph-user")
    store.add(mine, mine_v)
    reader, got, release = _held_read(store, [r["id"] for r in mine], monkeypatch)
    try:
        closing, _ = in_thread(store.close)
        closing.join(0.5)
        assert closing.is_alive()  # the data dir stays locked while the read runs
    finally:
        release.set()
    reader.join(30)
    closing.join(30)
    assert not closing.is_alive()
    assert [r["id"] for r in got[0][0]] == [r["id"] for r in mine]


def test_a_cached_users_rows_by_id_come_from_memory_with_the_tables_vectors_at_its_precision(tmp_path, monkeypatch):
    """The graph's consolidation reads a user's rows by id many times a second under load; for a user the vector
    cache holds, they come from memory, and a user read from the table gets the very same vectors."""
    store = MessageStore(tmp_path, MODEL)
    try:
        mine, mine_v = table_rows(12, "cached-user")
        store.add(mine, mine_v)
        store.search(mine_v[0], "cached-user", 1)  # queried: the vector cache holds the user
        ids = [r["id"] for r in mine][::-1][:7]
        from_table = store.embedded(ids)  # no user: the table, full precision
        real = search.rows_with_vectors
        monkeypatch.setattr(search, "rows_with_vectors", lambda *a: pytest.fail("read the table"))
        rows, vectors = store.embedded(ids, "cached-user")
        assert rows == from_table[0] and [r["id"] for r in rows] == ids
        np.testing.assert_array_equal(vectors, widen(*quantize(from_table[1])))
        assert vectors.dtype == np.float32

        monkeypatch.setattr(search, "rows_with_vectors", real)
        store.cache.discard("cached-user")  # not held: read from the table, rounded the same way
        rows2, vectors2 = store.embedded(ids, "cached-user")
        assert rows2 == rows
        np.testing.assert_array_equal(vectors2, vectors)
        assert store.embedded([*ids, "no-such-id"], "cached-user")[0] == rows  # unknown ids are skipped
    finally:
        store.close()


@pytest.mark.parametrize("batch_rows", [search.SCAN_BATCH_ROWS, 2])
def test_the_ids_a_catch_up_builds_are_the_missing_ones_user_by_user_oldest_first_in_arrow_memory(
    tmp_path, monkeypatch, batch_rows
):
    """After a crash or an import the graph's catch-up names every stored message without an episode: user by
    user (so that the builder loads each user's graph once, not once per batch of a 100-user import), each
    user's oldest first (ties by id, so the order does not depend on the fragment layout), held as Arrow arrays
    rather than a Python string each, a group of users at a time (a 1M catch-up held all 1M ids for hours), and
    sliced into Python lists only as it reads them back. The table is read in batches (2 rows each here: the
    order holds across them)."""
    import pyarrow as pa

    from sidecar.graph.builder import Builder

    monkeypatch.setattr(search, "SCAN_BATCH_ROWS", batch_rows)
    store = MessageStore(tmp_path, MODEL)
    asked: list[list[str]] = []

    def done_of(ids: list[str]):
        def done(users: list[str]) -> pa.Array:
            asked.append(users)
            return pa.array(ids, pa.string())

        return done

    try:
        assert list(store.missing_by_users(done_of([]))) == []  # an empty table: no group at all
        rows, v = table_rows(6, "u")
        others, w = table_rows(2, "t")  # another user, whose messages fall between u's in time
        for r, ts in zip(rows + others, (5.0, 1.0, 3.0, 3.0, 2.0, 4.0, 2.5, 0.5)):
            r["timestamp"] = ts
        rows[2]["id"], rows[3]["id"] = (
            "z" + rows[2]["id"],
            "a" + rows[3]["id"],
        )  # a tie the ids order against the table's
        store.add(rows[:3] + others[:1], np.vstack([v[:3], w[:1]]))
        store.add(rows[3:] + others[1:], np.vstack([v[3:], w[1:]]))  # two fragments
        done = done_of([rows[5]["id"]])  # the one the graph already holds
        expected = [
            others[1]["id"],
            others[0]["id"],  # user t, then user u
            rows[1]["id"],
            rows[4]["id"],
            rows[3]["id"],
            rows[2]["id"],
            rows[0]["id"],
        ]
        groups = list(store.missing_by_users(done))
        assert [(first, last, users) for _, first, last, users in groups] == [(1, 2, 2)]  # both users in one group
        assert isinstance(groups[0][0], pa.Array) and groups[0][0].to_pylist() == expected
        assert asked[-1] == [others[0]["user_id"], rows[0]["user_id"]]  # the graph asked for the group's done ids
        if batch_rows == 2:  # the scan really came in several batches
            assert sum(1 for _ in store.table.search().select(["id"]).limit(None).to_batches(2)) > 1

        monkeypatch.setattr(search, "COHORT_USERS", 1)  # one user per group: read and handed over one at a time
        asked.clear()
        groups = list(store.missing_by_users(done))
        assert [(ids.to_pylist(), first, last, users) for ids, first, last, users in groups] == [
            (expected[:2], 1, 1, 2),
            (expected[2:], 2, 2, 2),
        ]
        assert asked == [[others[0]["user_id"]], [rows[0]["user_id"]]]
        everything = done_of([r["id"] for r in rows + others])
        assert [ids.to_pylist() for ids, *_ in store.missing_by_users(everything)] == [[], []]

        queued: list[list[str]] = []
        b = Builder(threading.RLock(), None, None, None, lambda n: None)
        b.submit = lambda rows, vectors: queued.append([r["id"] for r in rows])
        assert b.catch_up(lambda: store.missing_by_users(done), store.embedded) == 7
        assert queued == [expected[:2], expected[2:]]  # read back by id, in that order, group by group
    finally:
        store.close()


def test_the_graphs_done_ids_are_read_for_the_group_of_users_the_catch_up_asks_about(tmp_path, monkeypatch):
    """The catch-up's groups against the real graph tables: each group's done ids are its own users' episodes
    (GraphStore.done_ids(users)), so a group names exactly its users' messages the graph has not built."""
    import pyarrow as pa

    from sidecar.graph.model import UserGraph
    from sidecar.graph.records import Episode
    from sidecar.graph.store import GraphStore

    monkeypatch.setattr(search, "COHORT_USERS", 2)
    store = MessageStore(tmp_path, MODEL)
    gs = GraphStore(store.database, store.lock, store.schedule.note_write)
    try:
        by_user = {u: table_rows(3, u) for u in ("a", "b", "c")}
        for rows, v in by_user.values():
            store.add(rows, v)
        built = {"a": by_user["a"][0][:2], "c": by_user["c"][0]}  # a: two of three built; c: all; b: none
        gs.commit(
            gs.rows(
                [
                    (
                        UserGraph(u),
                        [Episode(r["id"], r["timestamp"], None, None, None, 0.5, False) for r in rows],
                        [],
                        [],
                        [],
                        [],
                    )
                    for u, rows in built.items()
                ]
            ),
            new_episodes=True,
        )
        assert sorted(gs.done_ids(["a"]).to_pylist()) == sorted(r["id"] for r in built["a"])
        assert gs.done_ids([]) == pa.array([], pa.string()) and len(gs.done_ids()) == 5
        groups = [
            (set(ids.to_pylist()), first, last, users)
            for ids, first, last, users in store.missing_by_users(gs.done_ids)
        ]
        assert groups == [({by_user["a"][0][2]["id"], *(r["id"] for r in by_user["b"][0])}, 1, 2, 3), (set(), 3, 3, 3)]
    finally:
        store.close()


def test_the_graphs_fact_lookups_do_not_hold_up_requests_and_compaction_waits_for_them(tmp_path, monkeypatch):
    """The graph builder looks up the fact that each relation it finds states (FactService.same_fact): that read
    of the facts table runs outside the store's lock, which the facts share. Regression: under a stream of
    requests a build of long memories took their p99 from about 10 to 20 ms while requests waited for it."""
    from sidecar.facts import store as fact_store

    store = MessageStore(tmp_path, MODEL)
    facts = fact_store.FactStore.attach(store.database, store.lock)
    entered, release = threading.Event(), threading.Event()
    closing = None
    try:
        now = time.time()
        fact = {
            "id": "f1",
            "user_id": "graph-user",
            "text": "likes hiking",
            "category": "preference",
            "source": "rules",
            "confidence": 0.9,
            "message_id": None,
            "created_at": now,
            "updated_at": now,
            "active": True,
            "superseded_by": None,
            "superseded_at": None,
            "superseded_reason": None,
        }
        vector = table_rows(1, "x")[1]
        facts.add([fact], vector)
        real = fact_store.cosine_search

        def slow_search(*args, **kwargs):
            entered.set()
            assert release.wait(30)
            return real(*args, **kwargs)

        monkeypatch.setattr(fact_store, "cosine_search", slow_search)
        reader, got = in_thread(lambda: facts.search_unlocked(vector[0], "user_id = 'graph-user' AND active = true", 1))
        assert entered.wait(30)
        other, other_v = table_rows(3, "chat-user")
        store.add(other, other_v)  # the store's lock is free while the read runs
        assert store.search(other_v[2], "chat-user", 1)[0]["id"] == other[2]["id"] and reader.is_alive()

        began: list[bool] = []  # whether the read had been let go when the compaction itself began
        real_compact = fact_store.compact_tables
        monkeypatch.setattr(
            fact_store, "compact_tables", lambda *a, **k: (began.append(release.is_set()), real_compact(*a, **k))
        )
        _assert_compaction_waits_for_the_read(facts.compact, release, reader)
        assert began == [True]
        assert got[0][0]["id"] == "f1" and got[0][0]["similarity"] > 0.999

        # closing waits for such a read too (runtime/app.py registers the fact store's wait the same way)
        store.also_close.append(facts.wait_reads)
        entered.clear()
        release.clear()
        reader, got = in_thread(lambda: facts.search_unlocked(vector[0], "user_id = 'graph-user' AND active = true", 1))
        assert entered.wait(30)
        closing, _ = in_thread(store.close)
        closing.join(0.5)
        assert closing.is_alive()  # the database stays open while the read runs
        release.set()
        reader.join(30)
        closing.join(30)
        assert not closing.is_alive() and got[0][0]["id"] == "f1"
    finally:
        release.set()
        if closing is None:
            store.close()
