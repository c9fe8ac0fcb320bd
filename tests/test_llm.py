"""The LLM path end to end: the real sidecar talks to a local HTTP server (127.0.0.1) that speaks
the OpenAI chat-completions wire format and answers from a script, including slow, failing and
malformed answers."""

from __future__ import annotations

import json
import time

import pytest


def spawn_with(spawn, llm, *args, env=None):
    return spawn("--llm-base-url", llm.url, "--llm-model", "scripted-model", *args, env=env)


def remember(sc, user, text, category="preference"):
    r = sc.request({"type": "remember", "user_id": user, "text": text, "category": category})
    assert r["type"] == "remembered", r
    return r


def test_llm_decides_invalidate_and_merge(spawn, llm):
    sc = spawn_with(spawn, llm, "--llm-extract", "0", env={"MEMORY_SIDECAR_LLM_API_KEY": "sekret"})
    ny = remember(sc, "u", "Lives in New York", "answer")["fact"]
    assert llm.count("decide") == 0  # no candidate, no call
    llm.decide.append({"json": {"action": "INVALIDATE", "merged_text": None}})
    la = remember(sc, "u", "Moved to Los Angeles", "answer")
    assert la["action"] == "added" and la["candidates"] == []
    assert la["decisions"] == [{"candidate_id": ny["id"], "action": "INVALIDATE", "decided_by": "llm"}]
    call = llm.calls[-1]
    assert call["path"] == "/v1/chat/completions" and call["auth"] == "Bearer sekret"
    assert call["body"]["model"] == "scripted-model" and call["body"]["temperature"] == 0
    assert json.loads(call["body"]["messages"][1]["content"]) == {
        "EXISTING": "Lives in New York",
        "NEW": "Moved to Los Angeles",
    }
    hist = sc.request({"type": "fact_history", "fact_id": ny["id"]})
    assert hist["fact"]["active"] is False and hist["events"][-1]["action"] == "invalidated"
    assert hist["events"][-1]["decided_by"] == "llm" and hist["events"][-1]["other_fact_id"] == la["fact"]["id"]

    xbox = remember(sc, "g", "Owns an Xbox")["fact"]
    llm.decide.append({"content": '```json\n{"action": "merge", "merged_text": "Owns both an Xbox and a PS5"}\n```'})
    m = remember(sc, "g", "Bought a PS5")
    assert m["action"] == "merged" and m["fact"]["id"] == xbox["id"]
    assert m["fact"]["text"] == "Owns both an Xbox and a PS5"
    assert [f["text"] for f in sc.request({"type": "facts", "user_id": "g"})["facts"]] == [
        "Owns both an Xbox and a PS5"
    ]

    # a duplicate never reaches the LLM
    before = llm.count("decide")
    assert remember(sc, "g", "owns both an Xbox and a PS5")["action"] == "duplicate"
    assert llm.count("decide") == before
    # KEEP: both stay
    remember(sc, "k", "Speaks Spanish")
    llm.decide.append({"json": {"action": "KEEP"}})
    k = remember(sc, "k", "Speaks French")
    assert k["action"] == "added" and k["decisions"][0]["action"] == "KEEP"
    assert len(sc.request({"type": "facts", "user_id": "k"})["facts"]) == 2
    assert sc.shutdown() == 0


@pytest.mark.parametrize(
    "step",
    [
        {"status": 500},
        {"content": "I think you should keep both!"},
        {"json": {"action": "DELETE"}},
        {"raw": b"<html>bad gateway</html>"},
        {"sleep": 3, "json": {"action": "INVALIDATE"}},
    ],
    ids=["http500", "prose", "bad-action", "not-chat-json", "slow"],
)
def test_llm_failure_on_request_path_falls_back_to_the_host(spawn, llm, step):
    sc = spawn_with(spawn, llm, "--llm-extract", "0", "--llm-timeout", "1")
    old = remember(sc, "u", "Lives in New York", "answer")["fact"]
    llm.decide.append(step)
    t0 = time.monotonic()
    r = remember(sc, "u", "Moved to Los Angeles", "answer")
    elapsed = time.monotonic() - t0
    assert r["action"] == "added" and r["decisions"] == []
    assert [c["id"] for c in r["candidates"]] == [old["id"]] and r["llm_error"]
    assert llm.count("decide") == 1  # requests try once
    assert elapsed < 2.8, elapsed  # bounded by --llm-timeout, not by the slow server
    # the host can still decide
    res = sc.request({"type": "resolve", "fact_id": r["fact"]["id"], "candidate_id": old["id"], "action": "INVALIDATE"})
    assert res["type"] == "resolved"
    assert sc.request({"type": "ping"})["type"] == "pong"
    assert "LLM could not decide" in sc.stderr()
    assert sc.shutdown() == 0


def test_background_extraction_retries_and_sync_waits(spawn, llm):
    sc = spawn_with(spawn, llm, "--llm-timeout", "5", "--llm-retries", "3")
    llm.extract.extend(
        [
            {"status": 503},
            {"content": "Sure! Here are the facts: none"},
            {
                "sleep": 1.5,
                "json": {
                    "facts": [
                        {"text": "Works at Globex as a designer", "category": "company"},
                        {"text": "Likes hiking", "category": "Preference"},
                        {"text": "Is in a good mood", "category": "mood"},
                    ]
                },
            },
        ]
    )
    t0 = time.monotonic()
    r = sc.request(
        {
            "type": "store",
            "user_id": "u",
            "username": "Uli",
            "message_id": "m1",
            "content": "Started a new job at Globex as a designer! Also I love hiking.",
        }
    )
    assert r["type"] == "ok" and time.monotonic() - t0 < 1.0  # the answer never waits for the LLM
    # skipped: short, bot, and extract=false messages
    sc.store("u", "ok thx")
    sc.store("u", "Happy to help with your hiking plans!", is_bot=True)
    sc.store("u", "I also collect vinyl records", extract=False)
    s = sc.request({"type": "sync", "timeout": 60}, timeout=90)
    assert s == {"type": "synced", "pending": 0, "done": 1, "failed": 0}
    assert time.monotonic() - t0 > 1.5 + 1 + 2 - 0.5  # slow answer + backoff 1 s + 2 s
    assert llm.count("extract") == 3
    assert llm.calls[0]["body"]["messages"][1]["content"].startswith("Started a new job")
    got = sc.request({"type": "facts", "user_id": "u"})["facts"]
    assert sorted((f["text"], f["category"], f["source"], f["message_id"], f["confidence"]) for f in got) == [
        ("Likes hiking", "preference", "extraction", "m1", 0.7),
        ("Works at Globex as a designer", "company", "extraction", "m1", 0.7),
    ]
    assert got[0]["username"] == "Uli"
    err = sc.stderr()
    assert "retrying" in err and "HTTP 503" in err
    # the same message again: the facts are duplicates, nothing new
    llm.extract.append({"json": {"facts": [{"text": "Likes hiking", "category": "preference"}]}})
    sc.store("u", "Did I mention that I love hiking?")
    assert sc.request({"type": "sync"})["done"] == 2
    assert len(sc.request({"type": "facts", "user_id": "u"})["facts"]) == 2
    assert sc.shutdown() == 0


def test_extraction_gives_up_without_losing_the_message(spawn, llm):
    sc = spawn_with(spawn, llm, "--llm-retries", "1")
    llm.extract.extend([{"status": 500}, {"status": 500}])
    mid = sc.store("u", "My favourite food is ramen from the place downtown")
    s = sc.request({"type": "sync"}, timeout=90)
    assert s["pending"] == 0 and s["failed"] == 1 and s["done"] == 0
    assert sc.request({"type": "stats"})["extraction"] == {"pending": 0, "done": 0, "failed": 1, "dropped": 0}
    assert llm.count("extract") == 2
    assert sc.request({"type": "query", "user_id": "u", "text": "food", "limit": 1})["messages"][0]["id"] == mid
    assert "gave up" in sc.stderr()
    assert sc.shutdown() == 0


def test_unreachable_llm_and_prompt_shutdown_with_slow_job(spawn, llm, tmp_path):
    # nothing listens on the port: connection refused, logged, counted, process fine
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sc = spawn(
        "--llm-base-url",
        f"http://127.0.0.1:{port}/v1",
        "--llm-model",
        "m",
        "--llm-retries",
        "0",
        data_dir=tmp_path / "a",
    )
    sc.store("u", "I moved to Lisbon last spring")
    assert sc.request({"type": "sync"})["failed"] == 1
    assert "cannot reach" in sc.stderr()
    assert sc.shutdown() == 0

    # a job stuck on a slow LLM does not hold up shutdown
    sc2 = spawn_with(spawn, llm, "--llm-timeout", "60")
    llm.extract.append({"sleep": 30, "json": {"facts": []}})
    sc2.store("u", "I moved to Lisbon last spring")
    deadline = time.monotonic() + 10
    while llm.count("extract") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sc2.request({"type": "sync", "timeout": 0.5})["pending"] == 1
    t0 = time.monotonic()
    assert sc2.shutdown() == 0
    assert time.monotonic() - t0 < 15


def test_several_candidates_one_merge_at_most_and_partial_failure(spawn, llm):
    sc = spawn_with(spawn, llm, "--llm-extract", "0")
    for user in ("a", "b"):
        remember(sc, user, "Owns an Xbox console")
        remember(sc, user, "Owns a Nintendo Switch console")
    xbox_a = next(f for f in sc.request({"type": "facts", "user_id": "a"})["facts"] if "Xbox" in f["text"])
    # both candidates answered MERGE: the most similar one wins, the other counts as KEEP
    llm.decide.extend(
        [
            {"json": {"action": "MERGE", "merged_text": "Owns an Xbox and a PS5"}},
            {"json": {"action": "MERGE", "merged_text": "Owns a Switch and a PS5"}},
        ]
    )
    r = remember(sc, "a", "Bought a PS5 game console")
    assert r["action"] == "merged" and r["fact"]["id"] == xbox_a["id"] and r["fact"]["text"] == "Owns an Xbox and a PS5"
    assert [(d["action"], d["decided_by"]) for d in r["decisions"]] == [("MERGE", "llm"), ("KEEP", "llm")]
    assert "second MERGE" in r["decisions"][1]["reason"]
    assert sorted(f["text"] for f in sc.request({"type": "facts", "user_id": "a"})["facts"]) == [
        "Owns a Nintendo Switch console",
        "Owns an Xbox and a PS5",
    ]
    # the first candidate decided, the second failed: that one is left to the host
    llm.decide.extend([{"json": {"action": "KEEP"}}, {"status": 500}])
    r = remember(sc, "b", "Bought a PS5 game console")
    assert r["action"] == "added" and [d["action"] for d in r["decisions"]] == ["KEEP"]
    assert [c["text"] for c in r["candidates"]] == ["Owns a Nintendo Switch console"] and "HTTP 500" in r["llm_error"]
    assert sc.shutdown() == 0


def test_server_refusing_json_mode_is_asked_without_it(spawn, llm):
    sc = spawn_with(spawn, llm, "--llm-extract", "0")
    remember(sc, "u", "Lives in New York", "answer")
    llm.decide.extend([{"status": 400}, {"json": {"action": "INVALIDATE"}}])
    r = remember(sc, "u", "Moved to Los Angeles", "answer")
    assert [d["action"] for d in r["decisions"]] == ["INVALIDATE"]
    first, second = llm.calls[-2], llm.calls[-1]
    assert first["body"]["response_format"] == {"type": "json_object"} and "response_format" not in second["body"]
    remember(sc, "v", "Lives in Paris", "answer")
    remember(sc, "v", "Moved to Berlin", "answer")
    assert "response_format" not in llm.calls[-1]["body"]  # remembered for later calls
    assert "refused response_format" in sc.stderr()
    assert sc.shutdown() == 0


def test_request_path_llm_budget_is_shared_by_the_candidates(spawn, llm):
    sc = spawn_with(spawn, llm, "--llm-extract", "0", "--llm-timeout", "2")
    remember(sc, "a", "Owns an Xbox console")
    remember(sc, "a", "Owns a Nintendo Switch console")
    llm.decide.extend([{"sleep": 1.4, "json": {"action": "KEEP"}}, {"sleep": 1.4, "json": {"action": "KEEP"}}])
    t0 = time.monotonic()
    r = remember(sc, "a", "Bought a PS5 game console")
    elapsed = time.monotonic() - t0
    assert [d["action"] for d in r["decisions"]] == ["KEEP"]  # the first answered in time
    assert [c["text"] for c in r["candidates"]] == ["Owns a Nintendo Switch console"] and r["llm_error"]
    assert elapsed < 3.5, elapsed  # one 2 s budget, not 2 s per candidate
    assert sc.shutdown() == 0


def test_forget_user_cancels_background_extraction(spawn, llm):
    sc = spawn_with(spawn, llm, "--llm-timeout", "10")
    llm.extract.extend(
        [
            {"sleep": 2, "json": {"facts": [{"text": "Lives in Porto", "category": "answer"}]}},
            {"json": {"facts": [{"text": "Has a boat", "category": "preference"}]}},
        ]
    )
    sc.store("u", "I live in Porto and sail a lot")
    sc.store("u", "I have a small sailing boat")
    deadline = time.monotonic() + 10
    while llm.count("extract") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    r = sc.request({"type": "forget_user", "user_id": "u"})
    assert r["deleted"] == 2
    assert sc.request({"type": "sync"})["pending"] == 0
    assert sc.request({"type": "facts", "user_id": "u", "include_inactive": True})["facts"] == []
    assert llm.count("extract") == 1  # the queued second job was dropped
    assert sc.shutdown() == 0
