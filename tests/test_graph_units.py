"""Graph memory's pure logic: the fast entity tier and the backchannel detector measured on labelled
samples (tests/fixtures), relation patterns, entity resolution, relation validity, consolidation
groups, and the decay curve. No process, no model: the end-to-end tests are test_graph_e2e.py."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from conftest import ROOT

from sidecar.graph import consolidation as cons
from sidecar.graph.mentions import find_mentions
from sidecar.graph.model import UserGraph
from sidecar.graph.quality import novelty
from sidecar.graph.records import FLOOR, HALF_LIFE_DAYS, Episode, decayed, fold
from sidecar.graph.relations import find_relations
from sidecar.text import is_backchannel

FIXTURES = ROOT / "tests" / "fixtures"


def _records(name: str) -> list[dict]:
    rows = [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]
    return [r for r in rows if "_comment" not in r]


def test_fast_tier_finds_the_labelled_entities_of_locomo_turns():
    rows = _records("entities_locomo.jsonl")
    assert len(rows) >= 200
    tp = fp = fn = typed = 0
    for r in rows:
        gold = {(e["start"], e["end"]): e["type"] for e in r["entities"]}
        got = {(m.start, m.end): m.type for m in find_mentions(r["text"])}
        tp += len(gold.keys() & got.keys())
        fp += len(got.keys() - gold.keys())
        fn += len(gold.keys() - got.keys())
        typed += sum(1 for k in gold.keys() & got.keys() if gold[k] == got[k])
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    f1 = 2 * precision * recall / (precision + recall)
    typed_f1 = 2 * typed / (2 * tp + fp + fn)
    # measured 0.959 / 0.891 when written (scripts/bench.py graph-quality prints them)
    assert f1 >= 0.90, (precision, recall)
    assert typed_f1 >= 0.82


def test_fast_tier_patterns():
    text = "Ping @sam or <@123456>, mail jo@example.org, see https://x.io/a?b=1 by May 7 at 3pm; it cost $40"
    got = {(m.text, m.type) for m in find_mentions(text)}
    assert {
        ("@sam", "person"),
        ("<@123456>", "person"),
        ("jo@example.org", "other"),
        ("https://x.io/a?b=1", "other"),
        ("May 7", "date"),
        ("3pm", "date"),
        ("$40", "other"),
    } <= got
    # a known name is found in lower case through the gazetteer; a sentence opener is not a name
    assert [(m.text, m.type) for m in find_mentions("talked to caroline today", {"caroline": "person"})] == [
        ("caroline", "person"),
        ("today", "date"),
    ]
    assert find_mentions("Went hiking. Loved it.") == []
    assert [(m.text, m.type) for m in find_mentions("We flew to New York City")] == [("New York City", "place")]


def test_backchannel_detector_on_the_labelled_sample():
    rows = _records("backchannel.jsonl")
    assert len(rows) >= 200
    tp = sum(1 for r in rows if r["backchannel"] and is_backchannel(r["text"]))
    fp = sum(1 for r in rows if not r["backchannel"] and is_backchannel(r["text"]))
    fn = sum(1 for r in rows if r["backchannel"] and not is_backchannel(r["text"]))
    # measured precision 1.000, recall 0.740 when written; a content message marked low quality loses
    # its entities, so precision matters most
    assert tp / (tp + fp) >= 0.97
    assert tp / (tp + fn) >= 0.65


@pytest.mark.parametrize(
    "text, expected",
    [
        ("lol", True),
        ("ok!!", True),
        ("haha yes", True),
        ("Thanks, Caroline!", True),
        ("👍🎉", True),
        (":)", True),
        ("ok I moved to Berlin", False),
        ("lol my cat ate my homework", False),
        ("yes, Tuesday works", False),
        ("Did you go to the concert?", False),
    ],
)
def test_backchannel_examples(text, expected):
    assert is_backchannel(text) is expected


def test_novelty():
    assert novelty(0, 0, None) == 0.5  # nothing known yet: as far as it can be
    assert novelty(2, 2, 1.0) == 0.5
    assert novelty(0, 3, 0.9) == pytest.approx(0.05)


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "I moved to Lisbon last year and I work at Acme Robotics.",
            [("lives_in", "Lisbon"), ("works_at", "Acme Robotics")],
        ),
        ("My sister Ana is visiting", [("sister", "Ana")]),
        ("my best friend Jon said hi", [("friend", "Jon")]),
        ("I adopted a cat named Luna", [("has_pet", "Luna")]),
        ("I'm a software engineer now", [("job_title", "software engineer")]),
        ("I was born in Sweden", [("born_in", "Sweden")]),
        ("I hate mornings.", [("dislikes", "mornings")]),
        ("I don't live in Paris", []),
        ("Do you live in Rome?", []),
        ("If I moved to Oslo I would freeze", []),
    ],
)
def test_relation_patterns(text, expected):
    assert [(r.predicate, r.object) for r in find_relations(text)] == expected


def _episode(g: UserGraph, i: int, ts: float, **kw) -> Episode:
    ep = Episode(
        f"e{i}", ts, kw.get("channel", "c"), kw.get("message_id"), kw.get("reply_to"), 0.5, kw.get("low", False)
    )
    g.episodes[ep.id] = ep
    return ep


def _sized(user_id: str, episodes: int) -> UserGraph:
    g = UserGraph(user_id)
    for i in range(episodes):
        _episode(g, i, float(i))
    return g


class _Tables:
    """The graph tables for GraphService's cache tests: every user's graph has the same size."""

    def __init__(self, episodes: int):
        self.episodes = episodes
        self.saved: list[str] = []  # the ids of the episodes written (consolidation's saves)

    def load_many(self, ids):
        return {u: _sized(u, self.episodes) for u in ids}

    def load(self, user_id):
        return _sized(user_id, self.episodes)

    def read_rows(self, ids):  # the builder's group: no rows here, so graph() loads each user alone
        return {}

    def save(self, g, episodes=(), **kw):
        self.saved.extend(e.id for e in episodes)


def test_resolution_by_name_alias_and_first_name():
    g = UserGraph("u")
    alice, new = g.resolve("Alice Smith", "person")
    assert new
    assert g.resolve("alice smith", "person") == (alice, False)  # case folded
    assert g.resolve("Alice", "person") == (alice, False)  # first name of the only Alice
    assert "Alice" in alice.aliases
    zoe, _ = g.resolve("Zoë", "person")
    assert g.resolve("ZOE", "person")[0] is zoe  # diacritics folded
    assert g.resolve("Zoë Kravitz", "person")[0] is zoe  # a full name extends a known first name
    assert zoe.name == "Zoë Kravitz" and "Zoë" in zoe.aliases
    g.resolve("Alice Jones", "person")
    other, new = g.resolve("Alice", "person")  # now ambiguous: never guessed... but "alice" is an alias
    assert other is alice and not new
    paris_city, _ = g.resolve("Paris", "place")
    paris_person, new = g.resolve("Paris", "person")
    assert paris_person is paris_city and not new  # one name, one entity per user
    assert fold("  Zoë  O'Neil. ") == "zoe o'neil"


def test_single_valued_relations_close_instead_of_deleting():
    g = UserGraph("u")
    me, _ = g.resolve("Caroline", "person")
    lisbon, _ = g.resolve("Lisbon", "place")
    porto, _ = g.resolve("Porto", "place")
    ana, _ = g.resolve("Ana", "person")
    e1, e2, e3 = (_episode(g, i, t) for i, t in ((1, 100.0), (2, 200.0), (3, 300.0)))
    first, closed = g.add_relation(me, "lives_in", True, lisbon, "Lisbon", e1, 0.6)
    assert closed == []
    again, _ = g.add_relation(me, "lives_in", True, lisbon, "Lisbon", e2, 0.6)
    assert again is first and first.episode_ids == ["e1", "e2"]  # restated: one relation, two sources
    second, closed = g.add_relation(me, "lives_in", True, porto, "Porto", e3, 0.6)
    assert closed == [first] and first.valid_to == 300.0 and second.valid_to is None
    g.add_relation(me, "sister", False, ana, "Ana", e1, 0.6)
    g.add_relation(me, "sister", False, None, "Beatriz", e3, 0.6)  # many sisters: nothing closes
    assert sum(1 for r in g.relations.values() if r.predicate == "sister" and r.valid_to is None) == 2


def test_as_of_slices_a_graph_at_a_time_and_leaves_the_graph_alone():
    from sidecar.graph.as_of import at

    g = UserGraph("u")
    me, _ = g.resolve("Caroline", "person")
    lisbon, porto = g.resolve("Lisbon", "place")[0], g.resolve("Porto", "place")[0]
    e1, e2, e3 = (_episode(g, i, t) for i, t in ((1, 100.0), (2, 200.0), (3, 300.0)))
    for ep, ents in ((e1, [me, lisbon]), (e2, [me, lisbon]), (e3, [me, porto])):
        for ent in ents:
            ent.episodes.append(ep.id)
    first, _ = g.add_relation(me, "lives_in", True, lisbon, "Lisbon", e1, 0.6)
    g.add_relation(me, "lives_in", True, lisbon, "Lisbon", e2, 0.6)
    g.add_relation(me, "lives_in", True, porto, "Porto", e3, 0.6)

    def valid(t: float) -> list[tuple[str, float | None]]:
        return sorted((r.object_value, r.valid_to) for r in at(g, t).relations.values())

    assert valid(99.0) == [] and at(g, 99.0).entities == {}
    assert valid(100.0) == [("Lisbon", None)]  # stated then: valid from that second
    assert at(g, 150.0).relations[first.id].episode_ids == ["e1"]  # restated later: not yet
    assert valid(299.9) == [("Lisbon", None)]  # closed later: current then
    assert valid(300.0) == [("Lisbon", 300.0), ("Porto", None)]  # closed at 300: no longer valid at 300
    assert set(at(g, 200.0).entities) == {me.id, lisbon.id} and at(g, 200.0).find("Porto") is None
    assert valid(10**10) == valid(300.0)  # the future: as now
    assert first.valid_to == 300.0 and first.episode_ids == ["e1", "e2"] and me.episodes == ["e1", "e2", "e3"]


def test_merge_moves_aliases_mentions_relations():
    g = UserGraph("u")
    a, _ = g.resolve("Bob", "person")
    b, _ = g.resolve("Robert", "person")
    ep = _episode(g, 1, 1.0)
    ep.entity_ids, b.episodes = [b.id], [ep.id]
    me, _ = g.resolve("Me", "person")
    g.add_relation(me, "friend", False, b, "Robert", ep, 0.6)
    moved = g.merge(b, a)
    assert moved == {"aliases": 1, "mentions": 1, "relations": 1}
    assert g.find("robert") is a and b.id not in g.entities and ep.entity_ids == [a.id]
    assert all(r.object_id == a.id for r in g.relations.values())


def _unit(vectors):
    v = np.asarray(vectors, dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_consolidation_groups():
    g = UserGraph("u")
    eps = [_episode(g, i, 1000.0 + 60 * i, message_id=f"m{i}") for i in range(4)]
    eps.append(_episode(g, 4, 1000.0 + 10_000, reply_to="m0"))  # a late reply to the first
    eps.append(_episode(g, 5, 1000.0 + 10_060, low=True))  # a backchannel joins nothing
    rng = np.random.default_rng(1)
    topic = rng.normal(size=16)
    vectors = _unit([topic + 0.7 * rng.normal(size=16) for _ in range(4)] + list(rng.normal(size=(2, 16))))
    groups = cons.group(eps, vectors, set(), {e.id for e in eps}, {})
    members = sorted(sorted(gr.episode_ids) for gr in groups)
    # consecutive turns on one topic chain up (next-in-channel edges); the reply joins its message
    # across the session gap (a reply is always related); the backchannel stays out of every trace
    assert members == [["e0", "e1", "e2", "e3", "e4"]]
    unrelated = _unit(rng.normal(size=(6, 384)))  # consecutive turns on unrelated topics do not chain
    assert len(cons.group(eps[:4], unrelated[:4], set(), {e.id for e in eps[:4]}, {})) == 4
    many = [_episode(g, 10 + i, 50_000.0 + i, message_id=None) for i in range(25)]
    same = _unit(np.ones((25, 16)))
    groups = cons.group(many, same, set(), {e.id for e in many}, {})
    assert max(len(gr.episode_ids) for gr in groups) <= cons.MAX_GROUP
    assert sum(len(gr.episode_ids) for gr in groups) == 25


def test_trace_links_and_summary():
    vectors = _unit([[1, 0, 0], [0.99, 0.1, 0], [0, 1, 0]])
    assert cons.links(["a", "b", "c"], vectors, {"a"}) == {("a", "b"): pytest.approx(0.995, abs=1e-3)}
    texts = ["about cats", "cats and dogs   everywhere", "dogs"]
    mid = _unit([[1, 0.2, 0], [1, 1, 0], [0.2, 1, 0]])
    assert cons.summarise(texts, mid, lambda t, n: t) == "cats and dogs everywhere"


def test_decay_curve():
    assert decayed(0.5, 0.0, 0.0) == pytest.approx(0.5)
    week = HALF_LIFE_DAYS * 86_400
    assert decayed(0.5, 0.0, week) == pytest.approx(FLOOR + 0.2)
    assert decayed(0.5, 0.0, 100 * week) == pytest.approx(FLOOR, abs=1e-6)


def test_fast_tier_on_the_held_out_sample():
    """A second sample, labelled the same way but never looked at while writing the tier: the honest
    figure (measured span F1 0.932, typed 0.855 when it was labelled)."""
    rows = _records("entities_locomo_heldout.jsonl")
    assert len(rows) >= 200
    tp = fp = fn = 0
    for r in rows:
        gold = {(e["start"], e["end"]) for e in r["entities"]}
        got = {(m.start, m.end) for m in find_mentions(r["text"])}
        tp, fp, fn = tp + len(gold & got), fp + len(got - gold), fn + len(gold - got)
    assert 2 * tp / (2 * tp + fp + fn) >= 0.88


def test_deep_tier_answer_validation():
    from sidecar.graph.deep import parse
    from sidecar.llm import LLMError

    text = "my mentor zed taught me chess in Oslo"
    ents, rels = parse(
        {
            "entities": [
                {"name": "Zed", "type": "person"},
                {"name": "Ghost", "type": "person"},
                {"name": "Oslo", "type": "organization"},
                {"name": "Oslo", "type": "planet"},
                "junk",
                {"name": 5, "type": "person"},
            ],
            "relations": [
                {"predicate": "Mentor Of", "object": "zed"},
                {"predicate": "x", "object": "Mars"},
                {"predicate": "likes"},
            ],
        },
        text,
    )
    assert ents == [("Zed", "person"), ("Oslo", "organisation")]  # invented names and bad types dropped
    assert rels == [("mentor_of", "zed")]
    with pytest.raises(LLMError):
        parse({"facts": []}, text)


def test_spreading_activation_inhibition_and_firing():
    from sidecar.graph import activation as act

    p = act.Params()
    graph = {"a": {"b": 1.0}, "b": {"a": 1.0, "c": 1.0}, "c": {"b": 1.0}, "x": {}}
    fired = act.spread(lambda n: graph.get(n, {}), {"a": 0.5}, p)
    assert fired["a"] > fired["c"] > 0 and fired["b"] > fired["c"]  # the farthest node gets the least
    assert "x" not in fired  # nothing reaches an unconnected node
    assert act.fire({"n": p.theta}, p)["n"] == pytest.approx(0.5)  # the sigmoid's midpoint is theta
    # lateral inhibition: the top M keep their value, a weak node under strong winners drops out,
    # but a seed is never inhibited
    many = {f"w{i}": 1.0 for i in range(p.top_m)} | {"weak": 0.2, "seed": 0.2}
    kept = act.inhibit(many, p, exempt={"seed"})
    assert all(kept[f"w{i}"] == 1.0 for i in range(p.top_m)) and "weak" not in kept and kept["seed"] == 0.2
    # potentials are capped at 1, so a hub cannot flood the rest
    hub = {"h": {f"e{i}": 1.0 for i in range(50)}} | {f"e{i}": {"h": 1.0} for i in range(50)}
    assert (
        max(act.spread(lambda n: hub.get(n, {}), {f"e{i}": 1.0 for i in range(50)}, p).values())
        <= act.fire({"x": 1.0}, p)["x"]
    )


def test_the_memory_budget_counts_what_a_graph_really_holds():
    """The LRU budget (--graph-cache-mb) trusts approx_bytes: it must stay near what tracemalloc sees."""
    import gc
    import tracemalloc
    import uuid

    from sidecar.graph.builder import Changes, build_episode
    from sidecar.graph.recall import GraphView
    from sidecar.graph.records import Trace

    texts = [
        "I met Ana and Bruno at the Lisbon fair.",
        "We hiked in Sintra with Carla.",
        "lol ok",
        "My sister Dora moved to Porto for work at Acme.",
        "Work was long today, I am tired.",
    ]
    rng = np.random.default_rng(3)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    g = UserGraph("u")
    for i in range(2_000):
        row = {
            "id": uuid.uuid4().hex,
            "timestamp": 1e9 + i * 60,
            "content": texts[i % 5] + f" ({i})",
            "channel_id": "c",
            "message_id": None,
            "username": "Eve",
        }
        build_episode(g, row, np.zeros(384, np.float32), None, Changes())
    ids = list(g.episodes)
    for k in range(0, len(ids), 2):
        t = Trace(
            uuid.uuid4().hex,
            " ".join(texts) + str(k),
            ids[k : k + 2],
            [],
            0.5,
            0.0,
            0.0,
            0.0,
            0.0,
            rng.standard_normal(384).astype(np.float16),
        )
        g.traces[t.id] = t
        for e in t.episode_ids:
            g.episodes[e].trace_id = t.id
    traces = list(g.traces)
    for a, b in itertools.pairwise(traces):
        g.links[(a, b)] = 0.9
    g.view = (g.version, GraphView(g))
    gc.collect()
    real = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert 0.8 * real <= g.approx_bytes() <= 1.25 * real, (g.approx_bytes(), real)


def test_a_built_graph_keeps_none_of_the_builders_batch():
    """Regression (soak of 2026-11-24): each graph kept its latest vectors for novelty as views into the
    builder's batch, so every user's graph pinned a whole batch of vectors that its LRU budget never saw.
    After the batch is gone, what the graph holds must stay within what approx_bytes counts."""
    import gc
    import threading
    import tracemalloc
    import uuid

    from sidecar.graph.builder import Builder

    g = UserGraph("u")
    b = Builder(threading.RLock(), lambda user_id: g, None, None, lambda n: None)
    rows = [
        {
            "id": uuid.uuid4().hex,
            "timestamp": 1e9 + i,
            "content": f"We hiked in Sintra with Carla ({i}).",
            "channel_id": "c",
            "message_id": None,
            "username": "Eve",
        }
        for i in range(4_000)
    ]
    find_relations("We live in Oslo.")  # the reader's import and patterns, once per process: not the graph's
    rng = np.random.default_rng(1)  # (numpy.random's import, the same)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    vectors = rng.standard_normal((len(rows), 384)).astype(np.float32)  # 6 MB
    b._build_user("u", list(range(0, len(rows), 200)), rows, vectors)  # this user's 20 of the batch's rows
    del vectors
    gc.collect()
    real = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(g.recent) == 10
    assert real <= 1.25 * g.approx_bytes(), (real, g.approx_bytes())


def test_builder_queue_is_bounded_and_what_it_left_out_is_caught_up(monkeypatch):
    """Past QUEUE_MAX queued rows, stored messages are not held in memory: once the queue drains, the
    catch-up (here: handing back what was left out, as the table would) builds them, and the builder
    is not idle (graph commands do not answer) before that is done."""
    import threading

    from sidecar.graph import builder as builder_mod

    monkeypatch.setattr(builder_mod, "QUEUE_MAX", 10)
    monkeypatch.setattr(builder_mod, "BATCH_DELAY", 0.01)
    gate, built, left_out, calls = threading.Event(), [], [], []
    b = builder_mod.Builder(threading.RLock(), None, None, None, lambda n: None)

    def build(rows, vectors, parts=None):
        gate.wait(10)
        built.extend(r["id"] for r in rows)

    def catch_up():
        calls.append(len(left_out))
        rows, left_out[:] = list(left_out), []
        b.wait_room(4)
        b.submit(rows, np.zeros((len(rows), 2), np.float32))

    b.build, b.on_overflow = build, catch_up
    b.start()
    for k in range(6):
        rows = [{"id": f"{k}-{i}", "content": "a stored message"} for i in range(4)]
        before = b.pending
        b.submit(rows, np.zeros((4, 2), np.float32))
        if b.pending == before:  # not queued: the table still has them
            left_out.extend(rows)
    assert b.overflowed and len(left_out) == 12 and b.pending == 12
    assert not b.wait_idle(0.2)
    gate.set()
    assert b.wait_idle(10)
    assert sorted(built) == sorted(f"{k}-{i}" for k in range(6) for i in range(4))
    assert calls == [12] and not b.overflowed and b.pending == 0
    b.stop()


def test_a_delete_waits_for_the_rows_queued_before_it_not_for_a_stream_of_later_stores(monkeypatch):
    """Regression: a delete (expiry every cleanup interval) waited for the builder to be idle, which a
    steady stream of stores never lets happen: expiry stalled 30 s at a time (CI failed on it). It now
    waits for the rows queued before it, and the builder steps aside for requests again once it has."""
    import threading
    import time

    from sidecar.graph import builder as builder_mod

    monkeypatch.setattr(builder_mod, "BATCH_DELAY", 0.01)
    built: list[str] = []
    b = builder_mod.Builder(threading.RLock(), None, None, None, lambda n: None)

    def build(rows, vectors, parts=None):
        time.sleep(0.05)
        built.extend(r["id"] for r in rows)

    b.build = build
    b.start()
    stop = threading.Event()

    def stream():  # a host storing without pause
        k = 0
        while not stop.is_set():
            b.submit([{"id": f"later-{k}", "content": "a stored message"}], np.zeros((1, 2), np.float32))
            k += 1
            time.sleep(0.005)

    b.submit([{"id": f"early-{i}", "content": "a stored message"} for i in range(3)], np.zeros((3, 2), np.float32))
    writer = threading.Thread(target=stream)
    writer.start()
    try:
        time.sleep(0.02)
        assert b.wait_built(5.0)
        assert {"early-0", "early-1", "early-2"} <= set(built)
        assert b.pending > 0  # the stream's rows were still queued: the old wait (idle) would still wait
        assert not b.wait_idle(0.3)
        time.sleep(0.3)
        assert not b.hurry.is_set()  # every waiter served: the builder steps aside for requests again
    finally:
        stop.set()
        writer.join()
    assert b.wait_idle(10)
    b.stop()


def test_a_builder_group_holds_its_rows_not_its_graphs_so_memory_holds_the_budget():
    """The builder reads a batch's users a group at a time (`preload`: their rows) and makes one user's graph at a
    time. It loaded the group's graphs together: on top of a full budget until 2026-11-25 (memory peaked at budget
    + group on every batch), then in its place until 2026-11-28, and RSS stays at the peak either way."""
    from sidecar.graph.service import GraphService

    one = _sized("x", 200).approx_bytes()
    svc = GraphService(_Tables(200), None, lambda text, n: text, cache_bytes=10 * one)
    for i in range(10):
        svc.graph(f"old{i}")
    assert len(svc._cache) == 10  # the budget is full

    def held() -> int:
        return sum(g.approx_bytes() for g in svc._cache.values())

    svc.preload([f"new{i}" for i in range(12)])  # a group larger than the budget
    assert list(svc._cache) == [f"old{i}" for i in range(10)]  # no graph made yet
    for i in range(12):
        svc.graph(f"new{i}", background=True)
        assert held() <= 10 * one and f"new{i}" in svc._cache
        svc.release(f"new{i}")
    svc.preload([])
    assert held() <= 10 * one and not svc._pinned
    assert sum(u.startswith("new") for u in svc._cache) == 1  # the builder's: an eighth of the budget


def test_the_graph_cache_keeps_its_byte_count_as_graphs_come_grow_and_leave():
    """Eviction trusts a running count (GraphCache.total): it must match the graphs held after every kind of change."""
    from sidecar.graph.cache import GraphCache

    cache = GraphCache(budget=10**9)

    def exact() -> int:
        return sum(g.approx_bytes() for g in cache.values())

    for k in range(5):
        cache.put(f"u{k}", _sized(f"u{k}", 10 * (k + 1)))
    assert cache.total == exact()
    _episode(cache.get("u1"), 999, 1.0)  # the builder adds to a held graph...
    cache.get("u1").recent.append(np.zeros(384, np.float32))
    cache.touch("u1")  # ...and its next use counts it
    assert cache.total == exact() and list(cache)[-1] == "u1"
    cache.pop("u3")
    cache.keep_only(lambda u: u != "u0")
    assert cache.total == exact() and sorted(cache) == ["u1", "u2", "u4"]
    cache.budget = cache.total - 1  # one over: the oldest unprotected one leaves
    cache.evict(lambda u: u == "u2")
    assert list(cache) == ["u2", "u1"] and cache.total == exact()  # u4, the oldest unprotected, left


def test_using_a_cached_graph_does_not_measure_every_graph_held(monkeypatch):
    """Regression (a 100,000-request soak, 2026-11-27): every graph use summed approx_bytes over all cached
    graphs; with 300 users cached that sum took 6% of the soak's CPU under the GIL by its end."""
    from sidecar.graph import model
    from sidecar.graph.service import GraphService

    svc = GraphService(_Tables(0), None, lambda text, n: text, cache_bytes=64 << 20)
    for i in range(300):
        svc.graph(f"u{i}")
    calls = 0
    original = model.UserGraph.approx_bytes

    def counted(self):
        nonlocal calls
        calls += 1
        return original(self)

    monkeypatch.setattr(model.UserGraph, "approx_bytes", counted)
    for i in range(100):
        svc.graph(f"u{i}")
    assert calls <= 2 * 100, calls  # about one measure per use, not one per graph held


def test_graphs_only_background_work_used_are_held_to_their_own_share_of_the_budget():
    """A bulk import builds every user's graph: those graphs no command reads must not fill the cache
    (RSS added by the graph at 100k episodes, issue 19), while the graphs hosts use stay."""
    from sidecar.graph.cache import GraphCache

    one = _sized("x", 50).approx_bytes()
    cache = GraphCache(budget=20 * one)
    for k in range(4):
        cache.put(f"host{k}", _sized(f"host{k}", 50))
        cache.touch(f"host{k}")  # a command used it
    for k in range(10):  # the builder's users, one after another
        cache.put(f"bg{k}", _sized(f"bg{k}", 50))
        cache.touch(f"bg{k}", foreground=False)
        cache.evict(lambda u, k=k: u == f"bg{k}", background_budget=3 * one)
    assert sorted(cache) == sorted([f"host{k}" for k in range(4)] + ["bg7", "bg8", "bg9"])
    assert cache.background <= 3 * one and cache.total == sum(g.approx_bytes() for g in cache.values())
    cache.touch("bg8")  # recalled: from now on it is the host's, under the whole budget
    for k in range(10, 13):
        cache.put(f"bg{k}", _sized(f"bg{k}", 50))
        cache.evict(lambda u: False, background_budget=3 * one)
    assert "bg8" in cache and "bg9" not in cache
    assert cache.background == sum(cache.get(u).approx_bytes() for u in cache if u.startswith("bg") and u != "bg8")


def test_the_builders_graphs_keep_to_their_share_in_a_backlog_too():
    """Regression: in a backlog (a catch-up, an import) the builder's graphs kept the whole budget, and Python
    keeps the object memory of its busiest moment (a 20k ingest's object arenas: high-water mark = count at the
    end, none returned), so a budget filled once stayed in RSS (graph-build at 100k: +68 MiB held)."""
    from sidecar.graph.service import BACKGROUND_SHARE, GraphService

    one = _sized("x", 50).approx_bytes()
    svc = GraphService(_Tables(50), None, lambda text, n: text, cache_bytes=BACKGROUND_SHARE * 4 * one)
    svc.builder.pending = 5_000  # a catch-up's backlog
    for k in range(20):
        svc.graph(f"bg{k}", background=True)
    assert sorted(svc._cache) == ["bg16", "bg17", "bg18", "bg19"]  # the four newest: an eighth of the budget
    svc.graph("host", background=False)
    assert "host" in svc._cache and svc._cache.background <= 4 * one


def test_the_builder_reads_a_groups_rows_together_and_holds_one_users_graph_at_a_time():
    """The builder reads a group of users' rows with one read per table, as many users as the budget holds at
    the cached graphs' mean size (at most USER_GROUP), but makes and keeps one user's graph at a time: it loaded
    the group's graphs together (16 users of 1,000 episodes, 25 MiB), and Python keeps the object memory of its
    busiest moment (graph-build at 100k: +68 MiB held, target 50)."""
    from sidecar.graph.builder import USER_GROUP
    from sidecar.graph.service import BACKGROUND_SHARE, GraphService

    one = _sized("x", 50).approx_bytes()
    budget = int(3.5 * one)  # three graphs of 50 episodes (and a few more)
    tables = _Tables(50)
    read: list[list[str]] = []
    tables.read_rows = lambda users: (read.append(list(users)), {})[1]
    svc = GraphService(tables, None, lambda text, n: text, cache_bytes=budget)
    assert svc.group_size() == USER_GROUP  # no graph known yet: the cap
    svc.graph("x", background=True)
    assert svc.group_size() == 3
    held: list[int] = []
    release = svc.release
    svc.builder.release = lambda u: (release(u), held.append(svc._cache.total))
    svc.builder.save = lambda built, rows: rows
    svc.builder.commit = lambda rows: None
    rows = [
        {"id": f"m{i}", "user_id": f"u{i % 10}", "content": "We met Alice in Paris.", "timestamp": 1e9 + i}
        for i in range(20)
    ]
    svc.builder.build(rows, _unit([[1.0] * 8] * 20))
    assert read == [["u0", "u1", "u2"], ["u3", "u4", "u5"], ["u6", "u7", "u8"], ["u9"]]
    assert len(held) == 10 and max(held) <= budget // BACKGROUND_SHARE  # each user's graph trimmed once built
    assert not svc._pinned


def test_consolidation_reads_a_users_messages_twice_per_pass_not_once_per_trace():
    """A pass reads the window it groups, then the messages of every trace it made or grew, in one read.
    Regression: it read them trace by trace (a table read each for a user whose vectors are not cached), with
    the graph's lock held, and the builder waited through most of a 100k import's catch-up (py-spy)."""
    from sidecar.graph.service import GraphService

    class Reader:  # the messages domain: every episode's message, on a topic of its own per ten
        def __init__(self):
            self.reads: list[list[str]] = []

        def embedded(self, ids, user_id=None):
            self.reads.append(list(ids))
            vectors = _unit([[1.0 if d == int(i[1:]) // 10 else 0.01 for d in range(8)] for i in ids])
            return [{"id": i, "content": f"message {i}"} for i in ids], vectors

    reader = Reader()
    svc = GraphService(_Tables(60), reader, lambda text, n: text, cache_bytes=64 << 20)
    got = svc.consolidate_user("u")
    g = svc.graph("u")
    assert got["episodes"] == 60 and got["traces_created"] >= 6
    assert len(reader.reads) == 2  # the window, then every new trace's messages together
    assert sorted(reader.reads[1]) == sorted(e for t in g.traces.values() for e in t.episode_ids)
    for t in g.traces.values():  # each trace made from its own messages only
        assert t.summary.startswith("message e") and t.vector is not None
        assert len({int(e[1:]) // 10 for e in t.episode_ids}) == 1
        assert (t.start, t.end) == (
            min(g.episodes[e].ts for e in t.episode_ids),
            max(g.episodes[e].ts for e in t.episode_ids),
        )


def test_consolidation_leaves_episodes_the_builder_has_not_written_yet_for_its_next_pass():
    """The builder lets the lock go between a batch's groups and writes the batch once, after its last group. A
    pass that consolidated a group's episodes meanwhile upserted their rows, then the batch appended them
    again: 901 duplicate episode rows after a 100k import's catch-up (measured). The pass leaves them alone."""
    from sidecar.graph.service import GraphService

    class Reader:
        def embedded(self, ids, user_id=None):
            return [{"id": i, "content": f"message {i}"} for i in ids], _unit(np.ones((len(ids), 8)))

    tables = _Tables(12)
    svc = GraphService(tables, Reader(), lambda text, n: text, cache_bytes=64 << 20)
    svc.builder.unwritten.update({"e8", "e9", "e10", "e11"})
    assert svc.consolidate_user("u")["episodes"] == 8
    g = svc.graph("u")
    assert set(tables.saved) == {f"e{i}" for i in range(8)}
    assert all(g.episodes[f"e{i}"].trace_id is None for i in range(8, 12))
    svc.builder.unwritten.clear()  # the batch written: the next pass takes them
    assert svc.consolidate_user("u")["episodes"] == 4
    assert all(g.episodes[f"e{i}"].trace_id is not None for i in range(12))


def test_the_builder_marks_a_batchs_episodes_unwritten_until_its_commit_and_keeps_a_failed_batchs():
    """What consolidation must leave alone (see the test above): a batch's episodes from the moment its first
    group is built until its commit. A batch whose commit failed keeps them there: nothing writes their rows,
    so the next start builds them again (the catch-up reads what has no episode row)."""
    import threading

    from sidecar.graph.builder import Builder

    graphs: dict[str, UserGraph] = {}
    seen: list[set[str]] = []

    def commit(rows):
        seen.append(set(b.unwritten))
        if fail:
            raise OSError("disk full")

    b = Builder(
        threading.RLock(),
        lambda u: graphs.setdefault(u, UserGraph(u)),
        lambda built, rows: rows,
        commit,
        lambda n: None,
    )
    rows = [
        {
            "id": f"m{i}",
            "user_id": f"u{i % 20}",
            "timestamp": 1e9 + i,
            "content": "ok",
            "channel_id": None,
            "message_id": None,
            "username": None,
        }
        for i in range(40)
    ]  # 20 users: two groups of 16 and 4
    fail = True
    with pytest.raises(OSError):
        b.build(rows[:20], np.zeros((20, 8), np.float32))
    assert seen[-1] == {f"m{i}" for i in range(20)} == b.unwritten  # both groups', until the commit
    fail = False
    b.build(rows[20:], np.zeros((20, 8), np.float32))
    assert seen[-1] == {f"m{i}" for i in range(40)}
    assert b.unwritten == {f"m{i}" for i in range(20)}  # the failed batch's stay


def test_a_delete_waits_only_for_its_own_rows_in_the_builders_hands(monkeypatch):
    """Regression (issue 64): a `cleanup` of old memories waited for every message queued before it (up to 30 s
    behind a busy builder, every request in the pipe behind it). It waits only when one of the rows it deletes is
    queued or being built: their episodes are written before they are removed."""
    import threading

    from sidecar.graph import builder as builder_mod

    monkeypatch.setattr(builder_mod, "BATCH_DELAY", 0.01)
    gate = threading.Event()
    built: list[str] = []
    b = builder_mod.Builder(threading.RLock(), None, None, None, lambda n: None)

    def build(rows, vectors, parts=None):
        gate.wait(30)
        built.extend(r["id"] for r in rows)

    b.build = build
    b.start()
    b.submit([{"id": f"busy-{i}", "content": "another user's message"} for i in range(3)], np.zeros((3, 2), np.float32))
    assert b.wait_rows(["old-1", "old-2"], 5.0)  # long built: at once, the builder still held
    assert b.pending == 3 and not built
    assert not b.wait_rows(["old-1", "busy-1"], 0.2)  # one of them still in the builder's hands: it waits
    gate.set()
    assert b.wait_rows(["busy-1"], 10.0) and "busy-1" in built
    assert b.wait_idle(10)
    b.stop()
