"""The graph tables' background compaction and the graph's commits hold only the graph's write lock: stores,
queries and graph reads go on meanwhile, graph writes wait for a compaction (a merge and a compaction that
rewrites the same fragments cannot both commit), and every row is there after it.

Regressions: the compaction held the message store's lock, so every request waited for it; by the end of a
300,000-request soak it took 121-171 ms per compaction (docs/performance.md). So did the builder's commits
(six tables, two of them merges), which requests right after a batch import waited for.

The real MessageStore and GraphStore on a real LanceDB dir; the compaction is held open at a known point
(the compaction function wrapped to wait on an event).
"""

from __future__ import annotations

import threading
import time

import numpy as np
from helpers import MODEL, in_thread, table_rows

from sidecar.graph import store as graph_store_module
from sidecar.graph.model import UserGraph
from sidecar.graph.records import Entity
from sidecar.graph.store import ENTITIES, GraphStore
from sidecar.messages.store import MessageStore


def _entity_rows(gs: GraphStore, user: str, name: str) -> dict:
    g = UserGraph(user)
    return gs.rows([(g, [], [Entity(f"{user}-{name}", name, "person")], [], [], [])])


def _held_compaction(gs: GraphStore, exclusive: bool, monkeypatch) -> tuple[threading.Thread, threading.Event]:
    """`gs.compact(exclusive)` in a thread, held (its locks taken) until the returned event is set."""
    entered, release = threading.Event(), threading.Event()
    real = graph_store_module.compact_tables

    def held(*args):
        entered.set()
        assert release.wait(30)
        real(*args)

    monkeypatch.setattr(graph_store_module, "compact_tables", held)
    compaction, _ = in_thread(lambda: gs.compact(exclusive=exclusive))
    assert entered.wait(30)
    return compaction, release


def test_a_background_graph_compaction_holds_graph_writes_back_and_requests_not(tmp_path, monkeypatch):
    store = MessageStore(tmp_path, MODEL)
    gs = GraphStore(store.database, store.lock, store.schedule.note_write)
    release = threading.Event()
    try:
        for i in range(5):  # several commits: something to compact
            gs.commit(_entity_rows(gs, "u1", f"Name{i}"))
        compaction, release = _held_compaction(gs, False, monkeypatch)

        rows, vectors = table_rows(3, "chat-user")
        t0 = time.perf_counter()
        store.add(rows, vectors)  # a request: the message store's lock is free
        assert store.search(vectors[2], "chat-user", 1)[0]["id"] == rows[2]["id"]
        assert len(gs.load("u1").entities) == 5  # graph reads go on too
        assert time.perf_counter() - t0 < 10 and compaction.is_alive()

        writer, _ = in_thread(lambda: gs.commit(_entity_rows(gs, "u1", "Late")))
        writer.join(0.5)
        assert writer.is_alive()  # a graph write waits for the compaction
        release.set()
        compaction.join(60)
        writer.join(60)
        assert not compaction.is_alive() and not writer.is_alive()
        names = {e.name for e in gs.load("u1").entities.values()}
        assert names == {*(f"Name{i}" for i in range(5)), "Late"}
        assert gs.tables[ENTITIES].count_rows() == 6
    finally:
        release.set()
        store.close()


def test_an_exclusive_graph_compaction_holds_requests_back(tmp_path, monkeypatch):
    store = MessageStore(tmp_path, MODEL)
    gs = GraphStore(store.database, store.lock, store.schedule.note_write)
    release = threading.Event()
    try:
        for i in range(3):
            gs.commit(_entity_rows(gs, "u1", f"Name{i}"))
        compaction, release = _held_compaction(gs, True, monkeypatch)
        rows, vectors = table_rows(1, "chat-user")
        adding, _ = in_thread(lambda: store.add(rows, vectors))
        adding.join(0.5)
        assert adding.is_alive()  # after a delete, nothing may read a version whose files are going
        release.set()
        compaction.join(60)
        adding.join(60)
        assert not adding.is_alive()
        assert gs.tables[ENTITIES].count_rows() == 3
        assert np.isclose(store.search(vectors[0], "chat-user", 1)[0]["similarity"], 1.0, atol=1e-2)
    finally:
        release.set()
        store.close()


def test_a_graph_commit_holds_requests_back_no_more(tmp_path, monkeypatch):
    store = MessageStore(tmp_path, MODEL)
    gs = GraphStore(store.database, store.lock, store.schedule.note_write)
    entered, release = threading.Event(), threading.Event()
    real = gs._upsert

    def held(name, rows, append=False):
        real(name, rows, append)
        if name == ENTITIES:  # written; the commit's other tables wait
            entered.set()
            assert release.wait(30)

    try:
        gs.commit(_entity_rows(gs, "u1", "Before"))
        monkeypatch.setattr(gs, "_upsert", held)
        committing, _ = in_thread(lambda: gs.commit(_entity_rows(gs, "u1", "During")))
        assert entered.wait(30)

        rows, vectors = table_rows(3, "chat-user")

        def request():
            store.add(rows, vectors)  # the message store's lock is free
            return store.search(vectors[1], "chat-user", 1)[0]["id"]

        requesting, found = in_thread(request)
        requesting.join(20)  # (it waited for the whole commit before: here, forever)
        assert not requesting.is_alive() and found == [rows[1]["id"]]
        assert {e.name for e in gs.load("u1").entities.values()} == {"Before", "During"}  # each table's commit seen
        assert committing.is_alive()

        other, _ = in_thread(lambda: gs.commit(_entity_rows(gs, "u2", "Next")))
        other.join(0.5)
        assert other.is_alive()  # graph writes still take turns
        release.set()
        committing.join(60)
        other.join(60)
        assert not committing.is_alive() and not other.is_alive()
        assert gs.tables[ENTITIES].count_rows() == 3
    finally:
        release.set()
        store.close()
