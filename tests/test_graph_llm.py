"""The graph's deep (LLM) tier end to end: the real sidecar talks to a scripted OpenAI-compatible
server on 127.0.0.1 (test_llm.ScriptedLLM). What the rule tier misses, the LLM adds; what the LLM
invents, fails or garbles changes nothing else and the process keeps serving."""

from __future__ import annotations

import time


def _spawn(spawn, server, *extra):
    return spawn(
        "--llm-base-url",
        server.url,
        "--llm-model",
        "m",
        "--graph-llm",
        "true",
        "--llm-extract",
        "false",
        "--llm-retries",
        "1",
        *extra,
    )


def _settle(sc, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        h = sc.request({"type": "health"})["graph"]["llm"]
        if h["pending"] == 0 and h["done"] + h["failed"] > 0:
            return h
        time.sleep(0.1)
    raise AssertionError("deep tier did not finish")


def _built(sc, episodes: int, timeout=30.0):
    """The graph's health once `episodes` are built and nothing is queued (the builder's or the LLM's)."""
    deadline = time.monotonic() + timeout
    while True:
        g = sc.request({"type": "health"})["graph"]
        if g["episodes"] >= episodes and g["queue"] == 0 and g["llm"]["pending"] == 0:
            return g
        assert time.monotonic() < deadline, g
        time.sleep(0.05)


def test_llm_adds_entities_and_relations_the_rules_miss(spawn, llm):
    llm.extract.append(
        {
            "json": {
                "entities": [{"name": "Zed", "type": "person"}, {"name": "Ghost", "type": "person"}],
                "relations": [{"predicate": "mentor", "object": "zed"}],
            }
        }
    )
    sc = _spawn(spawn, llm)
    sc.store("u1", "my mentor zed taught me chess", username="Kim")
    h = _settle(sc)
    assert h == {"configured": True, "reachable": True, "pending": 0, "done": 1, "failed": 0, "dropped": 0}
    names = {e["name"] for e in sc.request({"type": "entities", "user_id": "u1"})["entities"]}
    assert "Zed" in names and "Ghost" not in names  # an invented name is dropped
    me = sc.request({"type": "entity", "user_id": "u1", "name": "Kim"})
    assert [(r["predicate"], r["object"], r["confidence"]) for r in me["relations"]] == [("mentor", "Zed", 0.8)]
    assert llm.calls[0]["body"]["messages"][0]["content"].startswith("You read one chat message")
    # a backchannel is never sent; a message with nothing named and no "I" is not either
    sc.store("u1", "lol ok")
    sc.store("u1", "the weather is nice")
    graph = _built(sc, episodes=3)  # the deep tier's pre-filter ran for both (it runs as each episode is built)
    assert graph["llm"]["pending"] == 0 and graph["llm"]["done"] == 1, graph
    assert llm.count("extract") == 1
    assert sc.shutdown() == 0


def test_llm_failures_and_garbage_change_nothing(spawn, llm):
    llm.extract.extend(
        [
            {"content": "not json at all"},
            {"content": "still not json"},  # retried once, then given up
            {"status": 500},
            {"status": 500},
            {"json": {"entities": "many", "relations": []}},
            {"json": {"entities": "many"}},
        ]
    )
    sc = _spawn(spawn, llm)
    for text in ("I moved to Lisbon.", "I work at Acme.", "My sister Ana called."):
        sc.store("u1", text, username="Kim")
    deadline = time.monotonic() + 60
    while sc.request({"type": "health"})["graph"]["llm"]["failed"] < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    h = sc.request({"type": "health"})["graph"]["llm"]
    assert h["failed"] == 3 and h["done"] == 0 and h["pending"] == 0
    names = {e["name"] for e in sc.request({"type": "entities", "user_id": "u1"})["entities"]}
    assert {"Lisbon", "Acme", "Ana"} <= names  # the rule tier's graph stands
    assert sc.request({"type": "ping"})["type"] == "pong"
    assert sc.shutdown() == 0


def test_unreachable_llm_is_reported_and_harmless(spawn):
    sc = spawn(
        "--llm-base-url",
        "http://127.0.0.1:9/v1",
        "--llm-model",
        "m",
        "--graph-llm",
        "true",
        "--llm-extract",
        "false",
        "--llm-retries",
        "0",
        "--llm-timeout",
        "1",
    )
    sc.store("u1", "I moved to Lisbon.", username="Kim")
    assert sc.request({"type": "health"})["graph"]["llm"]["reachable"] is False
    assert "Lisbon" in {e["name"] for e in sc.request({"type": "entities", "user_id": "u1"})["entities"]}
    assert sc.shutdown() == 0


def test_graph_llm_needs_an_llm(spawn):
    sc = spawn("--graph-llm", "true", wait_ready=False)
    assert sc.proc.wait(60) == 2  # a configuration error, like any other: stderr says what to set
    assert "--graph-llm needs an LLM" in sc.stderr() and sc.raw_stdout == []


def test_the_pre_filter_sends_first_person_statements_in_every_language(spawn, llm):
    """A Chinese statement names no one the rules find and has no English "I": its lexicon's first person sends
    it (before: never sent); a memory in a language with no lexicon is sent; a German line of nouns only is not."""
    llm.extract.extend(
        [
            {
                "json": {
                    "entities": [{"name": "小明", "type": "person"}],
                    "relations": [{"predicate": "mentor", "object": "小明"}],
                }
            },
            {"json": {"entities": [], "relations": []}},
        ]
    )
    sc = _spawn(spawn, llm)
    sc.store("u1", "我的导师小明教我下棋", username="Kim")
    sc.store("u1", "저는 요즘 바빠요")  # Korean: no lexicon, sent
    sc.store("u1", "Das Wetter ist heute schön")  # no first person, no name (a capital is no name in German)
    graph = _built(sc, episodes=3)
    assert graph["llm"]["done"] == 2 and llm.count("extract") == 2, graph
    me = sc.request({"type": "entity", "user_id": "u1", "name": "Kim"})
    assert [(r["predicate"], r["object"]) for r in me["relations"]] == [("mentor", "小明")]
    prompt = llm.calls[0]["body"]["messages"][0]["content"]
    assert "in its own language" in prompt and "never translated" in prompt
    assert sc.shutdown() == 0
