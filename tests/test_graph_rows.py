"""The graph's rows are replaced by an append and a delete, not by LanceDB's merge (docs/graph.md, "Storage";
the merge's code kept 11 MiB more of LanceDB resident and `realuse` (b)'s peak 20 MB higher): an id keeps one
row however often it is rewritten; a crash between the append and the delete leaves two rows, of which reads
take the newest and the next commit deletes the other; a store from before the `rev` column migrates.

The first test runs the real MessageStore and GraphStore on a real LanceDB dir (the crash is a delete that
raises); the second the real process over its pipes.
"""

from __future__ import annotations

import threading

import lancedb
import numpy as np
import orjson
import pytest
from helpers import MODEL, STORY, store_all

from sidecar.graph import GRAPH_TABLES
from sidecar.graph.model import UserGraph
from sidecar.graph.records import Entity, Episode, Trace
from sidecar.graph.store import ENTITIES, GraphStore
from sidecar.messages.store import MessageStore
from sidecar.storage import SCHEMA_VERSION


def _open(path):
    store = MessageStore(path, MODEL)
    return store, GraphStore(store.database, store.lock, store.schedule.note_write)


def test_a_rewritten_row_stays_one_row_and_a_crash_between_append_and_delete_heals(tmp_path, monkeypatch):
    store, gs = _open(tmp_path)
    g, ana = UserGraph("u1"), Entity("u1-ana", "Ana", "person")
    try:
        for alias in ("Annie", "Ana S", "Ana Silva"):
            ana.aliases.add(alias)
            gs.save(g, entities=[ana])
        assert gs.tables[ENTITIES].count_rows() == 1
        assert gs.load("u1").entities["u1-ana"].aliases == {"Annie", "Ana S", "Ana Silva"}

        def killed(*_args, **_kwargs):
            raise OSError("killed between the append and the delete")

        monkeypatch.setattr(gs.tables[ENTITIES], "delete", killed)
        ana.aliases.add("Nana")
        with pytest.raises(OSError):
            gs.save(g, entities=[ana])
        monkeypatch.undo()
    finally:
        store.close()

    store, gs = _open(tmp_path)  # the next start
    try:
        assert gs.tables[ENTITIES].count_rows("id = 'u1-ana'") == 2
        assert "Nana" in gs.load("u1").entities["u1-ana"].aliases  # the newer row, whichever the scan meets first
        gs.save(UserGraph("u2"), entities=[Entity("u2-bo", "Bo", "person")])  # any later commit heals
        assert gs.tables[ENTITIES].count_rows("id = 'u1-ana'") == 1
        assert gs.load("u1").entities["u1-ana"].aliases == {"Annie", "Ana S", "Ana Silva", "Nana"}
        assert set(gs.load("u2").entities) == {"u2-bo"}
    finally:
        store.close()


def test_an_id_twice_in_one_commit_is_written_once_with_its_last_row(tmp_path):
    """A commit's rows share one `rev`, so its own delete cannot tell two rows of one id apart: they are made one
    (the last) before the append, or the table would keep both for good."""
    store, gs = _open(tmp_path)
    try:
        gs.save(UserGraph("u1"), entities=[Entity("u1-ana", "Ana", "person"), Entity("u1-ana", "Ana Silva", "person")])
        assert gs.tables[ENTITIES].count_rows() == 1
        assert gs.load("u1").entities["u1-ana"].name == "Ana Silva"
    finally:
        store.close()


def _graph_of(user_id: str, n: int, dim: int) -> tuple[UserGraph, list]:
    """A small graph: episodes mentioning two entities, a relation, traces with vectors of their own, a link."""
    g = UserGraph(user_id)
    me, _ = g.resolve(f"{user_id} Person", "person")
    place, _ = g.resolve(f"Town{user_id}", "place")
    episodes, traces = [], []
    for i in range(n):
        ep = Episode(f"{user_id}-m{i}", 1000.0 + i, "c1", f"p{i}" if i % 2 else None, None, 0.5, False)
        g.episodes[ep.id] = ep
        for e in (me, place)[: 1 + i % 2]:
            ep.entity_ids.append(e.id)
            e.episodes.append(ep.id)
        episodes.append(ep)
        g.add_relation(me, "lives_in", True, place, place.name, ep, 0.6)
        vector = np.arange(dim, dtype=np.float32) * (i + 1) + sum(map(ord, user_id))  # of its own
        trace = Trace(f"{user_id}-t{i}", f"summary {i}", [ep.id], [me.id], 0.5, ep.ts, ep.ts, 1.0, 2.0, vector)
        ep.trace_id = trace.id
        g.traces[trace.id] = trace
        traces.append(trace)
    g.links[(traces[0].id, traces[1].id)] = 0.9
    return g, [episodes, [me, place], list(g.relations.values()), traces, [(traces[0].id, traces[1].id)]]


def test_users_loaded_together_read_the_same_graphs_as_one_by_one(tmp_path):
    """Several users' graphs come from one read per table, split by user (rows read column by column, each
    user's trace vectors one matrix): every user's graph is the one it would read alone, vectors included."""
    store, gs = _open(tmp_path)
    try:
        for k, uid in enumerate(("ann", "bob", "cy")):  # a commit each: the tables hold several fragments
            g, (episodes, entities, relations, traces, links) = _graph_of(uid, 3 + k, gs.dim)
            gs.save(g, episodes, entities, relations, traces, links, new_episodes=True)
        together = gs.load_many(["cy", "ann", "bob", "nobody"])
        assert not together["nobody"].episodes and not together["nobody"].traces
        for uid in ("ann", "bob", "cy"):
            alone, both = gs.load(uid), together[uid]
            assert len(both.episodes) == len(both.traces) == {"ann": 3, "bob": 4, "cy": 5}[uid]
            for t in both.traces.values():
                i = int(t.id.rsplit("-t", 1)[1])
                assert np.array_equal(t.vector, (np.arange(gs.dim) * (i + 1) + sum(map(ord, uid))).astype(np.float16))
                assert np.array_equal(t.vector, alone.traces[t.id].vector) and t.episode_ids == [f"{uid}-m{i}"]
            assert {e: (x.entity_ids, x.trace_id, x.message_id) for e, x in both.episodes.items()} == {
                e: (x.entity_ids, x.trace_id, x.message_id) for e, x in alone.episodes.items()
            }
            assert {e: (x.name, x.episodes) for e, x in both.entities.items()} == {
                e: (x.name, x.episodes) for e, x in alone.entities.items()
            }
            assert [(r.object_value, r.valid_to, r.episode_ids) for r in both.relations.values()] == [
                (r.object_value, r.valid_to, r.episode_ids) for r in alone.relations.values()
            ]
            assert both.links == alone.links == {(f"{uid}-t0", f"{uid}-t1"): pytest.approx(0.9)}
            odd = {f"p{i}": f"{uid}-m{i}" for i in range(len(both.episodes)) if i % 2}
            assert both.by_message_id == alone.by_message_id == odd
    finally:
        store.close()


def test_the_builder_makes_each_users_graph_from_the_one_read_of_its_group(tmp_path, monkeypatch):
    """A group's users are read with one read per table and their graphs made from those rows one at a time;
    none is read again alone (reading users one by one tripled the table reads and took graph-build's ingest
    at 100k to 0.79x). The real MessageStore, GraphStore and LanceDB dir; what was built is in the tables."""
    from sidecar.graph.service import GraphService

    store, gs = _open(tmp_path)
    try:
        for uid in ("ann", "bob", "cy"):
            g, parts = _graph_of(uid, 3, gs.dim)
            gs.save(g, *parts, new_episodes=True)
        svc = GraphService(gs, None, lambda text, n: text, cache_bytes=64 << 20)
        reads: list[list[str]] = []
        read_rows = gs.read_rows
        monkeypatch.setattr(gs, "read_rows", lambda users: (reads.append(list(users)), read_rows(users))[1])
        monkeypatch.setattr(gs, "load", lambda uid: pytest.fail(f"{uid}'s graph read again alone"))
        rows = [
            {"id": f"{uid}-new{i}", "user_id": uid, "content": "I moved to Lisbon last year.", "timestamp": 5000.0 + i}
            for uid in ("ann", "bob", "cy")
            for i in range(2)
        ]
        vectors = np.eye(len(rows), gs.dim, dtype=np.float32)
        svc.builder.build(rows, vectors)
        assert reads == [["ann", "bob", "cy"]]
        monkeypatch.undo()
        for uid in ("ann", "bob", "cy"):
            g = gs.load(uid)
            assert {f"{uid}-m{i}" for i in range(3)} | {f"{uid}-new0", f"{uid}-new1"} == set(g.episodes)
            assert len(g.traces) == 3  # the graph it was built on, kept
            assert any(r.predicate == "lives_in" and r.object_value == "Lisbon" for r in g.relations.values())
    finally:
        store.close()


def test_counts_wait_for_a_replace_between_its_append_and_its_delete(tmp_path, monkeypatch):
    """`health` and `stats` count graph rows: mid-replace the table holds the replaced rows twice, and a count
    then said 100,600 episodes for 100,100 messages (graph-build at 100k)."""
    store, gs = _open(tmp_path)
    appended, release = threading.Event(), threading.Event()
    try:
        g = UserGraph("u1")
        people = [Entity(f"u1-p{i}", f"Person{i}", "person") for i in range(20)]
        gs.save(g, entities=people)
        table = gs.tables[ENTITIES]
        real_delete = table.delete

        def held_delete(where):
            appended.set()
            assert release.wait(30)
            return real_delete(where)

        monkeypatch.setattr(table, "delete", held_delete)
        writer = threading.Thread(target=lambda: gs.save(g, entities=people))
        writer.start()
        assert appended.wait(30) and table.count_rows() == 40  # the rows twice, for now
        counted = []
        counter = threading.Thread(target=lambda: counted.append(gs.counts()["entities"]))
        counter.start()
        counter.join(0.5)
        assert counter.is_alive()  # the count waits for the commit
        release.set()
        writer.join(30)
        counter.join(30)
        assert counted == [20]
    finally:
        release.set()
        store.close()


def test_a_store_from_before_rev_migrates_and_its_rows_are_rewritten_in_place(spawn, tmp_path):
    data = tmp_path / "old"
    sc = spawn(data_dir=data)
    store_all(sc, "u1", STORY)
    assert sc.request({"type": "consolidate", "user_id": "u1"})["traces_created"] >= 1
    assert sc.shutdown() == 0
    db = lancedb.connect(data / "lancedb")
    for name in GRAPH_TABLES:  # what schema 5 held: the graph tables without `rev`
        db.open_table(name).drop_columns(["rev"])
    meta = orjson.loads((data / "meta.json").read_bytes())
    meta["schema_version"] = 5
    (data / "meta.json").write_bytes(orjson.dumps(meta))

    sc = spawn(data_dir=data)
    assert "migrating" in sc.stderr()
    assert sc.request({"type": "stats"})["schema_version"] == SCHEMA_VERSION
    lisbon = sc.request({"type": "entity", "user_id": "u1", "name": "Lisbon"})
    assert lisbon["entity"]["mentions"] == 3
    r = sc.request(
        {
            "type": "store",
            "user_id": "u1",
            "username": "Caroline",
            "channel_id": "general",
            "content": "Ana and I took the tram in Lisbon again.",
            "timestamp": lisbon["entity"]["last_seen"] + 3600,
        }
    )
    assert r["type"] == "ok", r
    assert sc.request({"type": "entity", "user_id": "u1", "name": "Lisbon"})["entity"]["mentions"] == 4
    assert sc.request({"type": "consolidate", "user_id": "u1"})["type"] == "consolidated"
    assert sc.shutdown() == 0
    db = lancedb.connect(data / "lancedb")
    rows = {}
    for name in GRAPH_TABLES:
        table = db.open_table(name)
        ids = table.to_arrow().column("id").to_pylist()
        assert "rev" in table.schema.names and len(ids) == len(set(ids)), name
        rows[name] = len(ids)
    assert rows["graph_episodes"] == 6 and rows["graph_entities"] >= 5 and rows["graph_traces"] >= 1, rows
