"""What is true now, first, end to end (real sidecar, model and store): a memory whose statement a later one
replaced comes back marked `superseded` (the memory that replaced it, and when), below the current one, which
`query` returns too; a question about the past keeps the plain order; `context` says "outdated"; a chain of ten
moves, a place come back to, two users, and a graph still building. The pure rules: test_supersession_units.py."""

from __future__ import annotations

import time

from helpers import T0

MOVES = [
    f"I moved to {city}."
    for city in ("Oslo Gamle", "Bergen", "Tromso", "Bodo", "Alta", "Molde", "Narvik", "Hamar", "Skien", "Lillehammer")
]


def _store(sc, user: str, lines: list[str], start: int = T0, name: str = "Sam") -> list[str]:
    msgs = [
        {"user_id": user, "username": name, "content": c, "timestamp": start + 3_600 * i} for i, c in enumerate(lines)
    ]
    r = sc.request({"type": "store", "messages": msgs})
    assert r["type"] == "ok", r
    return r["ids"]


def _built(sc, user: str) -> None:
    assert sc.request({"type": "entities", "user_id": user})["type"] == "entities"  # waits for the user's graph


def _query(sc, user: str, text: str, **extra) -> list[dict]:
    r = sc.request({"type": "query", "user_id": user, "text": text, **extra})
    assert r["type"] == "results", r
    return r["messages"]


def test_a_chain_of_ten_moves_answers_with_the_latest_home_first_and_each_old_one_marked(sidecar):
    ids = _store(sidecar, "u1", MOVES)
    _built(sidecar, "u1")
    for mode in ("hybrid", "graph"):
        got = _query(sidecar, "u1", "where do I live now?", limit=10, mode=mode)
        assert got[0]["id"] == ids[-1] and "superseded" not in got[0], (mode, got[0])
        for m in got[1:]:
            k = ids.index(m["id"])
            assert m["superseded"] == {"id": ids[k + 1], "at": T0 + 3_600 * (k + 1)}, (mode, k)
        assert [m["score"] for m in got] == sorted((m["score"] for m in got), reverse=True)
    # keyword and semantic asked for keep their own order, and mark the same way
    for mode in ("keyword", "semantic"):
        got = _query(sidecar, "u1", "I moved to Bergen", limit=3, mode=mode)
        for m in got:
            k = ids.index(m["id"])
            assert (m.get("superseded") or {}).get("id") == (ids[k + 1] if k < 9 else None)


def test_a_place_come_back_to_is_current_again_and_a_question_about_the_past_keeps_its_order(sidecar):
    berlin, lisbon, back, other = _store(
        sidecar,
        "u1",
        ["I live in Berlin, in Kreuzberg.", "I moved to Lisbon.", "I moved to Berlin again.", "I love cooking pasta."],
    )
    _built(sidecar, "u1")
    got = _query(sidecar, "u1", "Kreuzberg")  # only the first Berlin memory matches: its current one comes too
    order = [m["id"] for m in got]
    assert order.index(back) < order.index(berlin)
    marks = {m["id"]: m.get("superseded") for m in got}
    assert marks[berlin] == {"id": lisbon, "at": T0 + 3_600}
    assert marks[back] is None and marks.get(other) is None
    if lisbon in marks:
        assert marks[lisbon] == {"id": back, "at": T0 + 7_200}
    # the past: plain order (the first Berlin memory answers), still marked
    past = _query(sidecar, "u1", "where did I live before, in Kreuzberg?")
    assert past[0]["id"] == berlin and past[0]["superseded"]["id"] == lisbon
    # context marks the line of a replaced memory
    ctx = sidecar.request({"type": "context", "user_id": "u1", "text": "Kreuzberg"})
    lines = [line for line in ctx["text"].splitlines() if "Kreuzberg" in line]
    assert lines and all("outdated" in line for line in lines), ctx["text"]
    assert not any("outdated" in line for line in ctx["text"].splitlines() if "Berlin again" in line)


def test_no_user_sees_another_users_memories_through_the_replacement_link(sidecar):
    mine = _store(sidecar, "alice", ["I live in Paris.", "I moved to Rome."])
    theirs = _store(sidecar, "bob", ["I live in Paris.", "I moved to Madrid.", "I moved to Rome."], start=T0 + 60)
    _built(sidecar, "alice")
    _built(sidecar, "bob")
    for user, own in (("alice", mine), ("bob", theirs)):
        got = _query(sidecar, user, "Paris", limit=10)
        assert {m["id"] for m in got} <= set(own) and all(m["user_id"] == user for m in got)
        assert all(m["superseded"]["id"] in own for m in got if "superseded" in m)
    paris = next(m for m in _query(sidecar, "alice", "Paris") if m["id"] == mine[0])
    assert paris["superseded"]["id"] == mine[1]
    # a forgotten user's links are gone with them; the other's stay
    assert sidecar.request({"type": "forget_user", "user_id": "bob"})["type"] == "ok"
    assert _query(sidecar, "bob", "Paris") == []
    assert next(m for m in _query(sidecar, "alice", "Paris") if m["id"] == mine[0])["superseded"]["id"] == mine[1]


def test_a_graph_still_building_answers_at_once_with_what_it_knows_and_never_a_wrong_mark(sidecar):
    ids = _store(sidecar, "u1", MOVES)
    # asked at once: the builder may be anywhere in these; whatever is marked points at a later memory of the user
    for _ in range(5):
        for m in _query(sidecar, "u1", "where do I live now?", limit=10):
            assert m["id"] in ids
            if "superseded" in m:
                assert ids.index(m["superseded"]["id"]) == ids.index(m["id"]) + 1
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # once built, the marks are all there (no settle request in between)
        got = _query(sidecar, "u1", "where do I live now?", limit=10)
        if got[0]["id"] == ids[-1] and sum("superseded" in m for m in got) == 9:
            break
        time.sleep(0.1)
    assert got[0]["id"] == ids[-1] and sum("superseded" in m for m in got) == 9, got


def test_after_a_restart_the_links_come_back_without_a_query_waiting_for_the_graph(spawn, tmp_path):
    sc = spawn(data_dir=tmp_path / "d")
    ids = _store(sc, "u1", MOVES[:3])
    _built(sc, "u1")
    assert sc.shutdown() == 0
    sc = spawn(data_dir=tmp_path / "d")  # no graph held: the first answers may carry no mark, never a wrong one
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        got = _query(sc, "u1", "where do I live now?", limit=3)
        assert all(m["superseded"]["id"] == ids[ids.index(m["id"]) + 1] for m in got if "superseded" in m)
        if sum("superseded" in m for m in got) == 2:
            break
        time.sleep(0.1)
    assert got[0]["id"] == ids[-1] and sum("superseded" in m for m in got) == 2, got
    assert sc.shutdown() == 0


def test_without_graph_memory_nothing_is_marked(spawn):
    sc = spawn("--graph", "false")
    _store(sc, "u1", MOVES[:3])
    assert all("superseded" not in m for m in _query(sc, "u1", "where do I live now?", limit=10))
    assert sc.shutdown() == 0


def _remember(sc, user: str, text: str, message_id: str) -> dict:
    r = sc.request({"type": "remember", "user_id": user, "text": text, "category": "answer", "message_id": message_id})
    assert r["type"] == "remembered", r
    return r


def _invalidate(sc, new: dict, old: dict) -> None:
    r = sc.request(
        {"type": "resolve", "fact_id": new["fact"]["id"], "candidate_id": old["fact"]["id"], "action": "INVALIDATE"}
    )
    assert r["type"] == "resolved", r


def test_a_fact_invalidated_by_a_later_one_marks_the_memory_it_came_from_and_only_for_its_user(spawn):
    sc = spawn("--graph", "false")  # the facts alone
    old, new, _hi = _store(sc, "u1", ["The office is by the harbour.", "The office is uptown these days.", "hi"])
    (theirs,) = _store(sc, "u2", ["The office is by the harbour."], start=T0 + 60)
    _invalidate(sc, _remember(sc, "u1", "Office is uptown", new), _remember(sc, "u1", "Office is by the harbour", old))
    # another user's fact naming u1's memories: nothing of u1's reaches u2, and u2's memory is not marked by it
    _invalidate(
        sc, _remember(sc, "u2", "Office is uptown", new), _remember(sc, "u2", "Office is by the harbour", theirs)
    )
    got = _query(sc, "u1", "harbour office", limit=3)
    assert [m["id"] for m in got][:2] == [new, old]
    assert got[1]["superseded"] == {"id": new, "at": T0 + 3_600} and "superseded" not in got[0]
    mine = _query(sc, "u2", "harbour office", limit=3)
    assert [m["id"] for m in mine] == [theirs] and "superseded" not in mine[0]
    assert sc.shutdown() == 0


def test_a_fact_invalidated_after_a_recall_is_marked_at_the_next_one(spawn):
    """What a recall read of the user's replaced facts is dropped at the next fact write: never a stale answer."""
    sc = spawn("--graph", "false")
    old_office, new_office, old_gym, new_gym = _store(
        sc,
        "u1",
        [
            "The office is by the harbour.",
            "The office is uptown these days.",
            "My gym is on Elm Street.",
            "I switched gyms, the new one is on Oak Avenue.",
        ],
    )
    _invalidate(
        sc,
        _remember(sc, "u1", "Office is uptown", new_office),
        _remember(sc, "u1", "Office is by the harbour", old_office),
    )
    got = {m["id"]: m for m in _query(sc, "u1", "office gym street", limit=4)}
    assert got[old_office]["superseded"]["id"] == new_office and "superseded" not in got[old_gym]
    _invalidate(
        sc, _remember(sc, "u1", "Gym is on Oak Avenue", new_gym), _remember(sc, "u1", "Gym is on Elm Street", old_gym)
    )
    got = {m["id"]: m for m in _query(sc, "u1", "office gym street", limit=4)}
    assert got[old_gym]["superseded"]["id"] == new_gym and got[old_office]["superseded"]["id"] == new_office
    assert sc.shutdown() == 0
