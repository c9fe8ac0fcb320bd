"""Recall by validity, pure (sidecar/graph/recall_validity.py and recall.rank_by_validity): which questions ask
about the present or the past, which relations they ask about, and which episodes then rank first.
No process, no model: the end-to-end test is test_graph_recall.py's."""

from __future__ import annotations

import pytest

from sidecar.graph import recall_validity as validity
from sidecar.graph.model import UserGraph
from sidecar.graph.recall import rank_by_validity
from sidecar.graph.recall_validity import BOTH, PAST, PRESENT, order, predicates, tense
from sidecar.graph.records import Episode, Relation


@pytest.mark.parametrize(
    "question, expected",
    [
        ("where does Sam live now?", PRESENT),
        ("Where do I live currently?", PRESENT),
        ("what is she doing these days?", PRESENT),
        ("Does Sam still live in Berlin?", PRESENT),
        ("where does Sam live?", PRESENT),
        ("what's Sam's job?", PRESENT),
        ("who is Sam dating?", PRESENT),
        ("where did Sam move to?", PRESENT),  # the destination: what is true since the move
        ("where did Sam live before?", PAST),
        ("where did Sam use to work?", PAST),
        ("Sam's old job?", PAST),
        ("where did Sam live?", PAST),
        ("where did Sam move from?", PAST),
        ("What was Sam's job?", PAST),
        ("where was she working previously?", PAST),
        ("where does Sam live now, and where did he live before?", BOTH),
        ("what did we do on Sunday?", None),
        ("how old is Sam?", None),
        ("tell me about Berlin", None),
        ("when did Sam come home?", None),  # a hint of a relation ("home") with a tense alone: nothing
        ("", None),
    ],
)
def test_the_time_a_question_asks_about(question, expected):
    assert tense(question) == expected


def test_the_relations_a_question_asks_about():
    assert predicates("where does Sam live now?") == {"lives_in"}
    assert predicates("what is Sam's job these days?") == {"works_at", "job_title"}
    assert predicates("who is Sam's girlfriend now?") == {"partner"}
    assert predicates("what is Sam up to now?") == set()
    assert predicates("his old office") == {"works_at"} and predicates("his old office", plain=True) == set()


def _episode(g: UserGraph, n: int, ts: float) -> Episode:
    ep = Episode(f"e{n}", ts, "c", None, None, 0.0, False)
    g.episodes[ep.id] = ep
    return ep


@pytest.fixture
def moved():
    """Sam lived in Berlin (e1, restated in e2), moved to Paris (e3); works at Acme (e4, never changed);
    his sister Ana lives in Rome (e5), Ana is known with nothing else."""
    g = UserGraph("sam")
    me, _ = g.resolve("Sam", "person")
    me.aliases.add("me")
    g.index(me)
    berlin, _ = g.resolve("Berlin", "place")
    paris, _ = g.resolve("Paris", "place")
    acme, _ = g.resolve("Acme", "organisation")
    ana, _ = g.resolve("Ana", "person")
    e = [_episode(g, n, 100.0 * n) for n in range(1, 6)]
    g.add_relation(me, "lives_in", True, berlin, "Berlin", e[0], 0.6)
    g.add_relation(me, "lives_in", True, berlin, "Berlin", e[1], 0.6)
    g.add_relation(me, "lives_in", True, paris, "Paris", e[2], 0.6)
    g.add_relation(me, "works_at", True, acme, "Acme", e[3], 0.6)
    g.add_relation(me, "sister", False, ana, "Ana", e[4], 0.6)
    return g


def test_the_present_ranks_the_current_relation_first_and_the_past_the_closed_one(moved):
    now = order(moved, "where does Sam live now?", [moved.by_key["sam"]], None)
    assert now.favoured == {"e3"} and now.disfavoured == {"e1", "e2"} and now.seed
    before = order(moved, "where did I live before?", [], None)
    assert before.favoured == {"e1", "e2"} and before.disfavoured == {"e3"}
    # a question naming no relation ranks what recall found, and seeds nothing of its own
    vague = order(moved, "what is new with me these days?", [], None)
    assert vague.favoured == {"e3"} and vague.disfavoured == {"e1", "e2"} and not vague.seed
    # a relation that never changed has no "before": nothing to reorder
    assert not order(moved, "where did Sam work before?", [], None)
    assert not order(moved, "where does Sam work now?", [], None)
    # both times asked for: both seed recall, neither ranks below the other; no time asked for: nothing
    both = order(moved, "where does Sam live now and where did he live before?", [], None)
    assert both.favoured == {"e1", "e2", "e3"} and both.disfavoured == set() and both.seed
    assert not order(moved, "what is new now compared to before?", [], None)
    assert not order(moved, "tell me about Berlin", [], None)


def test_a_named_time_ranks_the_relations_valid_then(moved):
    assert order(moved, "where did Sam live in 2022?", [], (150.0, 250.0)).favoured == {"e1", "e2"}
    assert order(moved, "where did Sam live in 2022?", [], (350.0, 400.0)).favoured == {"e3"}
    assert not order(moved, "where did Sam live in 2022?", [], (10.0, 400.0))  # both valid in it: no order


def test_someone_else_is_asked_about_only_through_their_own_relations(moved):
    ana = moved.by_key["ana"]
    assert not order(moved, "where does Ana live now?", [ana], None)  # not Sam's home: nothing
    rome, _ = moved.resolve("Rome", "place")
    milan, _ = moved.resolve("Milan", "place")
    e6, e7 = _episode(moved, 6, 600.0), _episode(moved, 7, 700.0)
    moved.add_relation(moved.entities[ana], "lives_in", True, rome, "Rome", e6, 0.6)
    moved.add_relation(moved.entities[ana], "lives_in", True, milan, "Milan", e7, 0.6)
    o = order(moved, "where does Ana live now?", [ana], None)
    assert o.favoured == {"e7"} and o.disfavoured == {"e6"}


def test_all_closed_merged_and_repeated_relations_are_harmless(moved):
    paris = next(r for r in moved.relations.values() if r.object_value == "Paris")
    moved.remove_episodes({"e3"})  # the move deleted: Berlin is closed and nothing is current
    assert paris.id not in moved.relations
    assert not order(moved, "where does Sam live now?", [], None)
    # Sam merged into another person: the relations follow, "me" still names him
    g2 = UserGraph("u")
    sam, _ = g2.resolve("Sam", "person")
    sam.aliases.add("me")
    g2.index(sam)
    samuel, _ = g2.resolve("Samuel", "person")
    a, b = g2.resolve("Oslo", "place")[0], g2.resolve("Bergen", "place")[0]
    g2.add_relation(sam, "lives_in", True, a, "Oslo", _episode(g2, 1, 1.0), 0.6)
    g2.add_relation(sam, "lives_in", True, b, "Bergen", _episode(g2, 2, 2.0), 0.6)
    g2.merge(sam, samuel)
    o = order(g2, "where does Samuel live now?", [samuel.id], None)
    assert o.favoured == {"e2"} and o.disfavoured == {"e1"}
    # a relation stated a hundred times seeds its latest few episodes only
    g3 = UserGraph("u")
    me, _ = g3.resolve("me", "person")
    x, y = g3.resolve("Oslo", "place")[0], g3.resolve("Bergen", "place")[0]
    for n in range(100):
        g3.add_relation(me, "lives_in", True, x, "Oslo", _episode(g3, n, float(n)), 0.6)
    g3.add_relation(me, "lives_in", True, y, "Bergen", _episode(g3, 100, 100.0), 0.6)
    o = order(g3, "where did I live before?", [], None)
    assert o.favoured == {f"e{n}" for n in range(95, 100)} and len(o.disfavoured) == 1


def test_rank_by_validity_puts_the_favoured_first_and_leaves_the_rest_in_order(moved):
    for ep, trace in (("e1", "t1"), ("e2", "t1"), ("e3", "t2"), ("e4", "t3")):
        moved.episodes[ep].trace_id = trace
    o = validity.Order({"e3"}, {"e1", "e2"}, True)
    fired = {"e:e1": 0.9, "e:e2": 0.5, "e:e3": 0.4, "e:e4": 0.95, "t:t1": 0.99, "t:t2": 0.3, "t:t3": 0.2}
    kept = ("e:e4", "t:t2", "t:t3")
    for o in (validity.Order({"e3"}, {"e1", "e2"}, False), validity.Order({"e3"}, {"e1", "e2"}, True)):
        out = rank_by_validity(moved, fired, o)
        assert max(out["e:e1"], out["e:e2"], out["t:t1"]) < out["e:e3"]  # the closed relation, and its trace, below
        assert {k: out[k] for k in kept} == {k: fired[k] for k in kept}  # the rest as it was
        # the question names the relation: the current one's episode rises to the best activation
        assert out["e:e3"] == (0.95 if o.seed else 0.4)
        assert rank_by_validity(moved, {"e:e1": 0.9}, o) == {"e:e1": 0.9}  # no favoured one fired: nothing to do


def test_what_is_true_now_as_context_shows_it(moved):
    got = validity.true_now(moved, "any tips for my commute?", [], 5)
    assert [(r["sentence"], r["since"]) for r in got] == [
        ("Lives in Paris", 300.0),
        ("Works at Acme", 400.0),
        ("Has a sister, Ana", None),
    ]  # Berlin is closed
    # what the text asks about first; a person it names adds their own current relations, by name
    ana = moved.entities[moved.by_key["ana"]]
    rome, _ = moved.resolve("Rome", "place")
    moved.add_relation(ana, "lives_in", True, rome, "Rome", _episode(moved, 6, 600.0), 0.6)
    moved.add_relation(ana, "partner", True, None, "Tom", _episode(moved, 7, 700.0), 0.6)
    got = [r["sentence"] for r in validity.true_now(moved, "how is my job going? and Ana?", [ana.id], 10)]
    assert got[0] == "Works at Acme" and {"Ana lives in Rome", "Ana's partner is Tom"} <= set(got)
    assert validity.true_now(moved, None, [], 2) == validity.true_now(moved, "", [], 5)[:2]
    assert validity.true_now(moved, "x", [], 0) == []
    # an object merged into another entity is named by what it is now called
    acme = moved.entities[moved.by_key["acme"]]
    corp, _ = moved.resolve("Acme Corporation", "organisation")
    moved.merge(acme, corp)
    assert "Works at Acme Corporation" in [r["sentence"] for r in validity.true_now(moved, None, [], 5)]


def test_what_is_true_now_of_ten_thousand_relations_keeps_to_its_limit():
    g = UserGraph("big")
    me, _ = g.resolve("me", "person")
    for n in range(10_000):  # made directly: add_relation looks through every relation of the user
        r = Relation(f"r{n}", me.id, "likes", None, f"thing {n}", float(n), None, [_episode(g, n, float(n)).id], 0.6)
        g.relations[r.id] = r
    home, _ = g.resolve("Oslo", "place")
    g.add_relation(me, "lives_in", True, home, "Oslo", _episode(g, 10_000, 1.0), 0.6)
    got = validity.true_now(g, "what do I like about thing 42?", [], 5)
    assert len(got) == 5 and got[0]["sentence"] == "Likes thing 42" and got[1]["sentence"] == "Lives in Oslo"
