"""The past on request, end to end (real sidecar, model and store): `as_of` on `entity`, `facts`, `context` and
`graph_recall` answers as of that time: relations valid then, facts active then (with the text they had), memories
said by then; "what is true now" becomes "what was true then"; bad values of `as_of` are refused with a clear
error and the process keeps serving. The pure slice of a graph: test_graph_units.py's as_of tests."""

from __future__ import annotations

import time

import pytest
from helpers import T0

DAY = 86_400
MONTH = 30 * DAY
START = T0 - 3 * MONTH  # Berlin; Paris a month later; Lisbon a month after that


@pytest.fixture(scope="module")
def moved(shared_sidecar):
    """One sidecar; user "u1" lived in Berlin, moved to Paris, then to Lisbon; "u2" lives in Rome."""
    sc = shared_sidecar
    lines = [
        (START, "I live in Berlin."),
        (START + 3_600, "The trams in Berlin are always late."),
        (START + MONTH, "I moved to Paris."),
        (START + MONTH + 3_600, "Paris has the best bakeries."),
        (START + 2 * MONTH, "I moved to Lisbon."),
    ]
    msgs = [{"user_id": "u1", "username": "Sam", "content": c, "timestamp": ts} for ts, c in lines]
    r = sc.request({"type": "store", "messages": msgs})
    assert r["type"] == "ok", r
    r2 = sc.request({"type": "store", "user_id": "u2", "content": "I live in Rome.", "timestamp": START})
    assert r2["type"] == "ok", r2
    sc.ids = r["ids"]
    return sc


def _homes(sc, user: str, as_of: float | None) -> list[tuple[str, int, int | None]]:
    req = {"type": "entity", "user_id": user, "name": "me"}
    if as_of is not None:
        req["as_of"] = as_of
    r = sc.request(req)
    assert r["type"] == "entity", r
    return [(x["object"], x["valid_from"], x["valid_to"]) for x in r["relations"] if x["predicate"] == "lives_in"]


def test_entity_as_of_shows_the_relations_valid_then_and_now_without_it(moved):
    assert _homes(moved, "u1", None) == [
        ("Lisbon", START + 2 * MONTH, None),
        ("Berlin", START, START + MONTH),
        ("Paris", START + MONTH, START + 2 * MONTH),
    ]
    assert _homes(moved, "u1", START + DAY) == [("Berlin", START, None)]  # closed later: current then
    assert _homes(moved, "u1", START + MONTH) == [("Paris", START + MONTH, None)]  # the moment it changed: the new
    assert _homes(moved, "u1", START + MONTH - 1) == [("Berlin", START, None)]
    assert _homes(moved, "u1", START + 2 * MONTH + 5) == [("Lisbon", START + 2 * MONTH, None)]
    future = int(time.time()) + 365 * DAY  # a time in the future answers as now (the current relations)
    assert _homes(moved, "u1", future) == [("Lisbon", START + 2 * MONTH, None)]
    assert _homes(moved, "u2", START + MONTH) == [("Rome", START, None)]  # another user's answer is their own
    # before anything was said the entity was not known: not_found, saying so
    r = moved.request({"type": "entity", "user_id": "u1", "name": "me", "as_of": START - 1})
    assert r["type"] == "error" and r["code"] == "not_found" and "as of" in r["message"], r
    r = moved.request({"type": "entity", "user_id": "u1", "name": "Lisbon", "as_of": START + MONTH})
    assert r["type"] == "error" and r["code"] == "not_found", r


def test_context_as_of_says_what_was_true_then_and_shows_only_memories_said_by_then(moved):
    now = moved.request({"type": "context", "user_id": "u1", "text": "where do I live?", "format": "markdown"})
    assert "### True Now" in now["text"] and "Lives in Lisbon" in now["text"], now
    then = moved.request(
        {"type": "context", "user_id": "u1", "text": "where do I live?", "format": "markdown", "as_of": START + DAY}
    )
    assert then["type"] == "context", then
    day = time.strftime("%Y-%m-%d", time.gmtime(START + DAY))
    assert f"### True Then ({day})" in then["text"] and "Lives in Berlin" in then["text"], then["text"]
    assert "Paris" not in then["text"] and "Lisbon" not in then["text"], then["text"]  # nothing said later
    xml = moved.request({"type": "context", "user_id": "u1", "text": "bakeries in Paris", "as_of": START + MONTH + DAY})
    assert f'<true_then date="{time.strftime("%Y-%m-%d", time.gmtime(START + MONTH + DAY))}">' in xml["text"], xml
    assert "Lives in Paris" in xml["text"] and "Lisbon" not in xml["text"] and "<true_now>" not in xml["text"]
    # the related-memories block too: traces dated by what was said by then
    related = {"type": "context", "user_id": "u1", "text": "where do I live?", "related": 3}
    later = moved.request(related)["related_block"]
    assert later.startswith("[related memories]") and time.strftime("%Y-%m-%d", time.gmtime(START + 2 * MONTH)) in later
    early = moved.request({**related, "as_of": START + DAY}).get("related_block", "")
    dates = [line[2:12] for line in early.splitlines()[1:]]
    assert dates and all(d <= day for d in dates), early
    future = moved.request({"type": "context", "user_id": "u1", "text": "where?", "as_of": int(time.time()) + DAY})
    assert "<true_now>" in future["text"] and "Lives in Lisbon" in future["text"], future


def test_graph_recall_as_of_recalls_only_episodes_said_by_then(moved):
    req = {"type": "graph_recall", "user_id": "u1", "text": "where do I live now?", "strengthen": False}
    now = moved.request(req)
    assert now["type"] == "graph_recall" and now["known"], now
    got = [e["id"] for t in now["traces"] for e in t["episodes"]]
    assert got[0] == moved.ids[4], got  # Lisbon
    then = moved.request({**req, "as_of": START + MONTH + DAY})
    said = [e for t in then["traces"] for e in t["episodes"]]
    assert said and all(e["timestamp"] <= START + MONTH + DAY for e in said), then
    assert said[0]["id"] == moved.ids[2], said  # Paris: what was true "now" then
    # a window and as_of together: the earlier of the two ends
    both = moved.request({**req, "as_of": START + MONTH + DAY, "until": START + DAY})
    assert all(e["timestamp"] <= START + DAY for t in both["traces"] for e in t["episodes"]), both


@pytest.mark.parametrize(
    ("value", "words"),
    [(-1, "greater than or equal to 0"), ("2024-01-01", "must be a number"), (True, "not bool"), (10**13, "less than")],
)
def test_a_bad_as_of_is_refused_with_a_clear_error_on_every_command(moved, value, words):
    for req in (
        {"type": "entity", "user_id": "u1", "name": "me"},
        {"type": "facts", "user_id": "u1"},
        {"type": "context", "user_id": "u1", "text": "hi"},
        {"type": "graph_recall", "user_id": "u1", "text": "where?"},
    ):
        r = moved.request({**req, "as_of": value, "request_id": 7})
        assert r["type"] == "error" and r["code"] == "invalid_request", r
        assert "as_of" in r["message"] and words in r["message"], r
    assert moved.request({"type": "ping"})["type"] == "pong"


def test_nan_as_of_is_refused_and_the_process_keeps_serving(moved):
    moved.send_raw(b'{"type":"facts","user_id":"u1","as_of":NaN}\n')
    r = moved.recv()
    assert r["type"] == "error" and r["code"] == "invalid_json", r  # NaN is not JSON
    moved.send_raw(b'{"type":"facts","user_id":"u1","as_of":1e400}\n')
    r = moved.recv()
    assert r["type"] == "error" and r["code"] == "invalid_json", r  # nor is a number past a double
    assert moved.request({"type": "ping"})["type"] == "pong"


def test_facts_as_of_are_those_active_then_with_the_text_they_had(spawn):
    sc = spawn("--graph", "false")

    def remember(text: str) -> dict:
        r = sc.request({"type": "remember", "user_id": "f1", "text": text, "category": "answer"})
        assert r["type"] == "remembered", r
        return r["fact"]

    def facts(**extra) -> list[tuple[str, bool]]:
        r = sc.request({"type": "facts", "user_id": "f1", **extra})
        assert r["type"] == "facts", r
        return [(f["text"], f["active"]) for f in r["facts"]]

    before = time.time()
    harbour = remember("The office is by the harbour")
    t1 = time.time()
    uptown = remember("The office is uptown")
    r = sc.request({"type": "resolve", "fact_id": uptown["id"], "candidate_id": harbour["id"], "action": "INVALIDATE"})
    assert r["type"] == "resolved", r
    t2 = time.time()
    tea = remember("Likes green tea")
    t3 = time.time()
    r = sc.request({"type": "update_fact", "fact_id": tea["id"], "text": "Likes black tea"})
    assert r["type"] == "fact", r

    assert facts(as_of=before - 1) == []
    assert facts(as_of=t1) == [("The office is by the harbour", True)]
    assert facts(as_of=t2) == [("The office is uptown", True)]
    assert facts() == [("Likes black tea", True), ("The office is uptown", True)]
    # with the inactive: those made by then, each as it stood then
    assert sorted(facts(as_of=t2, include_inactive=True)) == [
        ("The office is by the harbour", False),
        ("The office is uptown", True),
    ]
    # a corrected fact has the text it had then
    assert ("Likes green tea", True) in facts(as_of=t3)
    assert facts(as_of=t3, text="tea")[0] == ("Likes green tea", True)
    assert sc.shutdown() == 0
