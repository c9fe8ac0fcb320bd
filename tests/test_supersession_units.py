"""What is true now, first, pure: which episodes of a graph were replaced and by which (graph/supersession.py),
whether a question asks about the past, and the result pipeline step that puts the current memory above a
replaced one (messages/supersession.py). No process, no model: the end-to-end test is test_supersession.py's."""

from __future__ import annotations

import time

import pytest

from sidecar.graph.model import Episode, UserGraph
from sidecar.graph.supersession import replaced
from sidecar.messages import Replaced
from sidecar.messages.supersession import asks_past, current_first, marked


def _graph() -> tuple[UserGraph, object]:
    g = UserGraph("sam")
    me, _ = g.resolve("Sam", "person")
    me.aliases.add("me")
    g.index(me)
    return g, me


def _episode(g: UserGraph, n: int, ts: float) -> Episode:
    ep = Episode(f"e{n}", ts, "c", None, None, 0.0, False)
    g.episodes[ep.id] = ep
    return ep


def _live(g: UserGraph, me, city: str, ep: Episode) -> None:
    place, _ = g.resolve(city, "place")
    g.add_relation(me, "lives_in", True, place, city, ep, 0.6)


def test_a_chain_of_ten_moves_points_each_home_at_the_next_and_ends_at_the_latest():
    g, me = _graph()
    for n in range(10):
        _live(g, me, f"City{n}", _episode(g, n, 100.0 * (n + 1)))
    links = replaced(g)
    assert set(links) == {f"e{n}" for n in range(9)}  # the tenth is current
    for n in range(9):
        assert links[f"e{n}"] == (f"e{n + 1}", 100.0 * (n + 2), "e9")


def test_a_place_left_and_come_back_to_is_current_again_and_the_place_between_is_replaced_by_the_return():
    g, me = _graph()
    _live(g, me, "Berlin", _episode(g, 1, 100.0))
    _live(g, me, "Lisbon", _episode(g, 2, 200.0))
    _live(g, me, "Berlin", _episode(g, 3, 300.0))  # "back in Berlin!"
    links = replaced(g)
    assert links["e2"] == ("e3", 300.0, "e3")  # Lisbon: replaced by the return
    assert links["e1"] == ("e2", 200.0, "e3")  # the first Berlin: by Lisbon, and what is true now is the return
    assert "e3" not in links


def test_a_restated_home_is_replaced_with_it_and_an_ending_replaces_without_a_new_value():
    g, me = _graph()
    _live(g, me, "Berlin", _episode(g, 1, 100.0))
    _live(g, me, "Berlin", _episode(g, 2, 150.0))  # "still in Berlin"
    _live(g, me, "Paris", _episode(g, 3, 200.0))
    acme, _ = g.resolve("Acme", "organisation")
    g.add_relation(me, "works_at", True, acme, "Acme", _episode(g, 4, 300.0), 0.6)
    g.end_relation(me, "works_at", acme, "Acme", _episode(g, 5, 400.0), 0.6)  # "I quit Acme"
    oslo, _ = g.resolve("Oslo", "place")
    g.end_relation(me, "lives_in", oslo, "Oslo", _episode(g, 6, 500.0), 0.6)  # "I used to live in Oslo"
    links = replaced(g)
    assert links["e1"] == links["e2"] == ("e3", 200.0, "e3")
    assert links["e4"] == ("e5", 400.0, "e5")
    assert {"e3", "e5", "e6"}.isdisjoint(links)  # what closed a relation, and a past told as past, are not replaced


def test_a_closing_episode_deleted_leaves_no_link_to_it():
    g, me = _graph()
    _live(g, me, "Berlin", _episode(g, 1, 100.0))
    _live(g, me, "Paris", _episode(g, 2, 200.0))
    g.remove_episodes({"e2"})
    assert all("e2" not in (by, current) for by, _at, current in replaced(g).values())


NOW = time.time()


@pytest.mark.parametrize(
    "question, past",
    [
        ("where do I live now?", False),
        ("which company do I work for?", False),
        ("who am I dating these days?", False),
        ("what's my dog called?", False),
        ("where did I live before?", True),
        ("where did we live before buying the house?", True),
        ("what did I use to do? used to, I mean", True),
        ("who was my ex again?", True),
        ("where was I living in 2019?", True),  # a time that ended before now
        ("where do I live now, and where before?", False),  # the present first
        ("我以前住哪里？", True),
        ("我现在住在哪个城市？", False),
        ("うちのワンちゃんの名前って何だっけ？", False),  # 名前 is "name", not "before"
        ("где я жила раньше?", True),
        ("где я сейчас живу?", False),
        ("شو كان شغلي قبل؟", True),
        ("وين ساكنة هالأيام؟", False),
        ("أين المكان؟", False),  # مكان (place) holds كان (was): a word, not a part of one
        ("예전에 무슨 일 했었지?", True),
        ("나 지금 어디 살지?", False),
    ],
)
def test_a_question_about_the_past_is_told_from_one_about_now(question, past):
    assert asks_past(question, NOW) is past


def _row(i: str, score: float) -> dict:
    return {"id": i, "score": score, "similarity": score}


def test_the_current_memory_ranks_just_above_the_replaced_one_with_the_scores_in_order():
    rows = [_row("a", 0.9), _row("old", 0.8), _row("b", 0.7), _row("mid", 0.6)]
    info = {"old": Replaced("mid", 200.0, "now"), "mid": Replaced("now", 300.0, "now")}
    out = marked(current_first(rows, info, {"now": _row("now", 0.1)}, 5), info)
    assert [r["id"] for r in out] == ["a", "now", "old", "b", "mid"]
    assert [r["score"] for r in out] == sorted((r["score"] for r in out), reverse=True)
    assert out[2]["superseded"] == {"id": "mid", "at": 200} and out[4]["superseded"] == {"id": "now", "at": 300}
    assert "superseded" not in out[1] and "superseded" not in out[0]
    # the current one already among the rows moves up (once); the limit holds
    rows = [_row("old", 0.8), _row("x", 0.5), _row("now", 0.4)]
    out = current_first(rows, {"old": Replaced("now", 300.0, "now")}, {}, 2)
    assert [r["id"] for r in out] == ["now", "old"]
    # a current memory not found (deleted, another user's, outside the window): the replaced one stays, marked
    out = current_first([_row("old", 0.8)], {"old": Replaced("now", 300.0, "now")}, {}, 5)
    assert [r["id"] for r in out] == ["old"]
