"""Facts end to end through the real process (real model, real LanceDB, real pipes), without an LLM."""

from __future__ import annotations

import shutil
import uuid

import orjson
from conftest import files_containing

from sidecar.storage import SCHEMA_VERSION


def remember(sc, user, text, category="preference", **extra):
    r = sc.request({"type": "remember", "user_id": user, "text": text, "category": category, **extra})
    assert r["type"] == "remembered", r
    return r


def facts(sc, user, **extra):
    r = sc.request({"type": "facts", "user_id": user, **extra})
    assert r["type"] == "facts", r
    return r["facts"]


def test_remember_duplicate_collapses_and_confirms(shared_sidecar):
    a = remember(shared_sidecar, "dup1", "Lives in New York", "answer", username="Alice")
    assert a["action"] == "added" and a["candidates"] == [] and a["fact"]["source"] == "manual"
    assert a["fact"]["confidence"] == 1.0 and a["fact"]["username"] == "Alice" and a["fact"]["active"] is True
    b = remember(shared_sidecar, "dup1", "lives in new york city", "answer", source="chat")
    assert b["action"] == "duplicate" and b["fact"]["id"] == a["fact"]["id"] and b["fact"]["similarity"] > 0.88
    c = remember(shared_sidecar, "dup1", "  Lives   in New York ", "answer")
    assert c["action"] == "duplicate"
    assert [f["text"] for f in facts(shared_sidecar, "dup1")] == ["Lives in New York"]
    hist = shared_sidecar.request({"type": "fact_history", "fact_id": a["fact"]["id"]})
    assert [e["action"] for e in hist["events"]] == ["created", "confirmed", "confirmed"]
    # other users are untouched by the rule
    assert remember(shared_sidecar, "dup2", "Lives in New York", "answer")["action"] == "added"
    # numbers differ: never a duplicate, shown as a candidate instead
    remember(shared_sidecar, "dup3", "Is 29 years old", "answer")
    d = remember(shared_sidecar, "dup3", "Is 30 years old", "answer")
    assert d["action"] == "added" and [x["text"] for x in d["candidates"]] == ["Is 29 years old"]


def test_facts_in_a_script_the_model_does_not_read_are_not_merged_by_similarity_alone(shared_sidecar):
    # all-MiniLM-L6-v2 reads Latin only: to it, Arabic (or Cyrillic) sentences are all alike (cosine above the
    # duplicate threshold), so different facts sharing a first word were once merged; the terms decide now
    for user, texts, again in (
        ("unread-ar", ["أخي يعمل طبيبا", "أخي أهداني كتابا", "أخي يسكن في دبي"], "أخي أهداني كتابا!"),
        (
            "unread-ru",
            ["Мой брат работает врачом", "Мой брат подарил мне книгу", "Мой брат живёт в Дубае"],
            "Мой брат подарил мне книгу.",
        ),
    ):
        added = [remember(shared_sidecar, user, t) for t in texts]
        assert [r["action"] for r in added] == ["added"] * 3, added
        assert sorted(f["text"] for f in facts(shared_sidecar, user)) == sorted(texts)
        for text in (texts[0], again):  # a true duplicate (the same, or only its punctuation changed) still merges
            r = remember(shared_sidecar, user, text)
            assert r["action"] == "duplicate" and r["fact"]["id"] == added[texts.index(text.rstrip("!."))]["fact"]["id"]
        assert sorted(f["text"] for f in facts(shared_sidecar, user)) == sorted(texts)


def test_candidates_and_resolve_each_action(shared_sidecar):
    ny = remember(shared_sidecar, "cand", "Lives in New York", "answer")["fact"]
    la = remember(shared_sidecar, "cand", "Moved to Los Angeles", "answer")
    assert la["action"] == "added"
    assert [c["id"] for c in la["candidates"]] == [ny["id"]] and 0.35 <= la["candidates"][0]["similarity"] < 0.88
    unrelated = remember(shared_sidecar, "cand", "Has a cat named Miso", "preference")
    assert unrelated["candidates"] == []

    # INVALIDATE: the old fact goes inactive, kept for history
    r = shared_sidecar.request(
        {
            "type": "resolve",
            "fact_id": la["fact"]["id"],
            "candidate_id": ny["id"],
            "action": "INVALIDATE",
            "reason": "moved",
        }
    )
    assert r["type"] == "resolved" and r["action"] == "INVALIDATE"
    assert r["candidate"]["active"] is False and r["candidate"]["superseded_by"] == la["fact"]["id"]
    assert r["candidate"]["superseded_reason"] == "invalidated" and r["fact"]["active"] is True
    assert {f["text"] for f in facts(shared_sidecar, "cand")} == {"Moved to Los Angeles", "Has a cat named Miso"}
    all_facts = facts(shared_sidecar, "cand", include_inactive=True)
    assert {f["text"]: f["active"] for f in all_facts}["Lives in New York"] is False
    hist = shared_sidecar.request({"type": "fact_history", "fact_id": ny["id"]})
    assert hist["fact"]["active"] is False
    assert [(e["action"], e.get("other_fact_id"), e.get("decided_by")) for e in hist["events"]] == [
        ("created", None, "manual"),
        ("invalidated", la["fact"]["id"], "host"),
    ]
    assert hist["events"][1]["reason"] == "moved"
    again = shared_sidecar.request(
        {"type": "resolve", "fact_id": la["fact"]["id"], "candidate_id": ny["id"], "action": "KEEP"}
    )
    assert again["type"] == "error" and again["code"] == "invalid_request" and "no longer active" in again["message"]

    # MERGE: both become one fact (the candidate's id), re-embedded
    xbox = remember(shared_sidecar, "cand-g", "Owns an Xbox")["fact"]
    ps5 = remember(shared_sidecar, "cand-g", "Bought a PS5")
    assert [c["id"] for c in ps5["candidates"]] == [xbox["id"]]
    m = shared_sidecar.request(
        {
            "type": "resolve",
            "fact_id": ps5["fact"]["id"],
            "candidate_id": xbox["id"],
            "action": "merge",
            "merged_text": "Owns both an Xbox and a PS5",
        }
    )
    assert m["action"] == "MERGE" and m["candidate"]["text"] == "Owns both an Xbox and a PS5"
    assert m["candidate"]["active"] is True and m["fact"]["active"] is False
    assert m["fact"]["superseded_by"] == xbox["id"] and m["fact"]["superseded_reason"] == "merged"
    assert [f["text"] for f in facts(shared_sidecar, "cand-g")] == ["Owns both an Xbox and a PS5"]
    best = facts(shared_sidecar, "cand-g", text="playstation console")[0]
    assert best["id"] == xbox["id"] and best["similarity"] > 0.3  # searchable by the merged text
    hist = shared_sidecar.request({"type": "fact_history", "fact_id": xbox["id"]})
    assert [e["action"] for e in hist["events"]] == ["created", "merged"]
    assert (
        hist["events"][1]["previous_text"] == "Owns an Xbox"
        and hist["events"][1]["text"] == "Owns both an Xbox and a PS5"
    )

    # KEEP: both stay
    s1 = remember(shared_sidecar, "cand-k", "Speaks Spanish")["fact"]
    s2 = remember(shared_sidecar, "cand-k", "Speaks French")
    assert [c["id"] for c in s2["candidates"]] == [s1["id"]]
    k = shared_sidecar.request(
        {"type": "resolve", "fact_id": s2["fact"]["id"], "candidate_id": s1["id"], "action": "KEEP"}
    )
    assert k["fact"]["active"] and k["candidate"]["active"]
    assert len(facts(shared_sidecar, "cand-k")) == 2

    # bad resolves
    for bad, code in [
        ({"fact_id": s1["id"], "candidate_id": s1["id"], "action": "KEEP"}, "invalid_request"),
        ({"fact_id": s1["id"], "candidate_id": xbox["id"], "action": "KEEP"}, "invalid_request"),  # other user
        ({"fact_id": s1["id"], "candidate_id": "nope", "action": "KEEP"}, "not_found"),
        ({"fact_id": s1["id"], "candidate_id": s2["fact"]["id"], "action": "MERGE"}, "invalid_request"),
        ({"fact_id": s1["id"], "candidate_id": s2["fact"]["id"], "action": "DROP"}, "invalid_request"),
    ]:
        r = shared_sidecar.request({"type": "resolve", **bad})
        assert r["type"] == "error" and r["code"] == code, (bad, r)


def test_update_and_forget_fact(shared_sidecar):
    f = remember(shared_sidecar, "upd", "Works at Acme", "company")["fact"]
    r = shared_sidecar.request(
        {"type": "update_fact", "fact_id": f["id"], "text": "Works at Acme Robotics", "reason": "typo"}
    )
    assert r["type"] == "fact" and r["fact"]["text"] == "Works at Acme Robotics" and r["fact"]["id"] == f["id"]
    r = shared_sidecar.request({"type": "update_fact", "fact_id": f["id"], "category": "Answer"})
    assert r["fact"]["category"] == "answer"
    assert (
        shared_sidecar.request({"type": "update_fact", "fact_id": f["id"], "category": "bogus"})["code"]
        == "invalid_request"
    )
    assert shared_sidecar.request({"type": "update_fact", "fact_id": f["id"]})["code"] == "invalid_request"
    assert shared_sidecar.request({"type": "update_fact", "fact_id": "missing", "text": "x"})["code"] == "not_found"
    hist = shared_sidecar.request({"type": "fact_history", "fact_id": f["id"]})
    assert [(e["action"], e.get("previous_text"), e.get("reason")) for e in hist["events"]] == [
        ("created", None, None),
        ("updated", "Works at Acme", "typo"),
        ("updated", "Works at Acme Robotics", "correction"),
    ]
    assert facts(shared_sidecar, "upd", text="robotics company")[0]["text"] == "Works at Acme Robotics"

    assert shared_sidecar.request({"type": "forget_fact", "fact_id": f["id"]}) == {"type": "ok", "deleted": 1}
    assert shared_sidecar.request({"type": "forget_fact", "fact_id": f["id"]})["code"] == "not_found"
    assert shared_sidecar.request({"type": "fact_history", "fact_id": f["id"]})["code"] == "not_found"
    assert facts(shared_sidecar, "upd", include_inactive=True) == []


def test_facts_filters_order_and_limits(shared_sidecar):
    remember(shared_sidecar, "filt", "Likes dark roast coffee", "preference")
    remember(shared_sidecar, "filt", "Works at Globex as a designer", "company")
    remember(shared_sidecar, "filt", "Goes swimming every Tuesday", "pattern")
    assert [f["text"] for f in facts(shared_sidecar, "filt")] == [
        "Goes swimming every Tuesday",
        "Works at Globex as a designer",
        "Likes dark roast coffee",
    ]  # recent first
    assert [f["text"] for f in facts(shared_sidecar, "filt", category="company")] == ["Works at Globex as a designer"]
    assert len(facts(shared_sidecar, "filt", category=["company", "pattern"])) == 2
    rel = facts(shared_sidecar, "filt", text="what does she drink in the morning?", limit=1)
    assert [f["text"] for f in rel] == ["Likes dark roast coffee"] and "similarity" in rel[0]
    assert shared_sidecar.request({"type": "facts", "user_id": "filt", "limit": 1000})["code"] == "too_large"
    assert facts(shared_sidecar, "x' OR '1'='1") == []
    assert (
        shared_sidecar.request({"type": "remember", "user_id": "filt", "text": "x", "category": "mood"})["code"]
        == "invalid_request"
    )
    assert (
        shared_sidecar.request({"type": "remember", "user_id": "filt", "text": "  ", "category": "pattern"})["code"]
        == "invalid_request"
    )
    assert (
        shared_sidecar.request(
            {"type": "remember", "user_id": "filt", "text": "x", "category": "pattern", "confidence": 2}
        )["code"]
        == "invalid_request"
    )


def test_recall_three_users_and_usernames(shared_sidecar):
    remember(shared_sidecar, "a", "Plays the cello", "preference", username="Ann")
    remember(shared_sidecar, "b", "Works at a bakery", "company")
    remember(shared_sidecar, "b", "Bakes sourdough every weekend", "pattern")
    remember(shared_sidecar, "c", "Allergic to cats", "answer")
    shared_sidecar.store("c", "hello there, I am Cleo", username="Cleo")  # store names a user too
    r = shared_sidecar.request(
        {"type": "recall", "users": {"c": None, "a": None, "b": "Bea"}, "text": "bread", "limit": 5}
    )
    assert r["type"] == "recall"
    assert [(u["user_id"], u.get("username")) for u in r["users"]] == [("c", "Cleo"), ("a", "Ann"), ("b", "Bea")]
    by = {u["user_id"]: sorted(f["text"] for f in u["facts"]) for u in r["users"]}
    assert by == {
        "c": ["Allergic to cats"],
        "a": ["Plays the cello"],
        "b": ["Bakes sourdough every weekend", "Works at a bakery"],
    }
    sims = [f["similarity"] for f in r["users"][2]["facts"]]
    assert sims == sorted(sims, reverse=True)
    # the new name stuck
    assert facts(shared_sidecar, "b")[0]["username"] == "Bea"
    shared_sidecar.request({"type": "query", "user_id": "b", "text": "x", "username": "Beatrix"})
    assert facts(shared_sidecar, "b")[0]["username"] == "Beatrix"
    assert shared_sidecar.request({"type": "recall", "users": {}})["code"] == "invalid_request"


CONTEXT_FIXTURE = [
    ("alice", "preference", "Prefers dark roast coffee"),
    ("alice", "company", "Works at Acme as a backend engineer"),
    ("alice", "pattern", "Goes climbing every Saturday"),
    ("alice", "preference", "Likes jazz records"),
    ("bob", "answer", "His budget for a new laptop is 1500 euros"),
    ("bob", "preference", "Prefers Linux laptops"),
]


def _load_fixture(sc):
    for user, cat, text in CONTEXT_FIXTURE:
        assert remember(sc, user, text, cat)["action"] == "added"


def test_context_xml_and_markdown_byte_for_byte(spawn):
    sc = spawn()
    _load_fixture(sc)
    req = {
        "type": "context",
        "users": {"alice": "Alice", "bob": "Bob <admin>"},
        "text": "Which laptop should I buy for coding?",
        "limit": 2,
    }
    xml = sc.request({**req, "format": "xml"})
    assert xml["text"] == (
        "<background_facts>\n"
        '<user name="Alice">\n'
        "- Works at Acme as a backend engineer\n"
        "- Prefers dark roast coffee\n"
        "</user>\n"
        '<user name="Bob &lt;admin&gt;">\n'
        "- Prefers Linux laptops\n"
        "- His budget for a new laptop is 1500 euros\n"
        "</user>\n"
        "</background_facts>"
    ), xml["text"]
    assert xml["facts"] == 4 and xml["format"] == "xml"
    one = sc.request(
        {
            "type": "context",
            "format": "markdown",
            "user_id": "alice",
            "text": "where does she work?",
            "preferences_limit": 10,
            "relevant_limit": 2,
        }
    )
    assert one["text"] == (
        "## Memory Context\n\n"
        "### User Preferences\n"
        "- [preference] Likes jazz records\n"
        "- [preference] Prefers dark roast coffee\n\n"
        "### Relevant Context\n"
        "- [company] Works at Acme as a backend engineer\n"
        "- [pattern] Goes climbing every Saturday"
    ), one["text"]
    assert one["facts"] == 4
    # deterministic: the same data gives the same bytes, also after a restart
    again = sc.request(
        {
            "type": "context",
            "format": "markdown",
            "user_id": "alice",
            "text": "where does she work?",
            "preferences_limit": 10,
            "relevant_limit": 2,
        }
    )
    assert again["text"] == one["text"]
    xml_again = sc.request({**req, "format": "xml"})["text"]
    assert sc.shutdown() == 0
    sc2 = spawn()
    assert sc2.request({**req, "format": "xml"})["text"] == xml_again
    # nothing known: empty string in both formats
    for fmt in ("xml", "markdown"):
        empty = sc2.request({"type": "context", "format": fmt, "user_id": "stranger", "text": "hi"})
        assert empty["text"] == "" and empty["facts"] == 0
    assert sc2.request({"type": "context", "format": "html", "user_id": "a"})["code"] == "invalid_request"
    assert sc2.request({"type": "context", "format": "xml"})["code"] == "invalid_request"


def test_extract_inline_end_to_end(shared_sidecar):
    reply = (
        'Great, I will keep that in mind! <memory category="preference">Prefers aisle seats</memory>\n'
        '<MEMORY category="Company">Works at Initech</MEMORY>\n'
        '<memory category="mood">Feels tired today</memory>'
        '<memory category="answer">Budget is <memory category="answer">about 300 dollars</memory></memory>\n'
        'Here are three flights. <memory category="pattern">Flies to Berlin every'
    )
    r = shared_sidecar.request(
        {"type": "extract_inline", "user_id": "inline", "username": "Ulla", "reply": reply, "message_id": "m-9"}
    )
    assert r["type"] == "extracted", r
    assert r["reply"] == "Great, I will keep that in mind!\nHere are three flights."
    assert [
        (
            f["action"],
            f["fact"]["text"],
            f["fact"]["category"],
            f["fact"]["source"],
            f["fact"]["confidence"],
            f["fact"]["message_id"],
        )
        for f in r["facts"]
    ] == [
        ("added", "Prefers aisle seats", "preference", "chat", 0.8, "m-9"),
        ("added", "Works at Initech", "company", "chat", 0.8, "m-9"),
        ("added", "about 300 dollars", "answer", "chat", 0.8, "m-9"),
    ]
    assert [x["reason"] for x in r["rejected"]] == ["unknown_category", "nested", "unclosed"]
    # the same tag again is a duplicate, and the answer still strips it
    r2 = shared_sidecar.request(
        {
            "type": "extract_inline",
            "user_id": "inline",
            "reply": 'Sure. <memory category="preference">prefers aisle seats</memory>',
        }
    )
    assert r2["reply"] == "Sure." and r2["facts"][0]["action"] == "duplicate"
    plain = shared_sidecar.request({"type": "extract_inline", "user_id": "inline", "reply": "No tags here."})
    assert plain == {"type": "extracted", "reply": "No tags here.", "facts": [], "rejected": []}


def test_memory_instructions(spawn):
    sc = spawn("--fact-categories", "hobby,Work")
    r = sc.request({"type": "memory_instructions", "request_id": 3})
    assert r["type"] == "instructions" and r["request_id"] == 3 and r["categories"] == ["hobby", "work"]
    assert '<memory category="CATEGORY">fact</memory>' in r["text"] and "hobby, work" in r["text"]
    bad = sc.request(
        {
            "type": "extract_inline",
            "user_id": "u",
            "reply": '<memory category="preference">x</memory><memory category="hobby">Knits</memory>',
        }
    )
    assert [x["reason"] for x in bad["rejected"]] == ["unknown_category"] and bad["facts"][0]["fact"]["text"] == "Knits"


def test_forget_user_deletes_facts_history_and_name(sidecar):
    marker = "okapi-" + uuid.uuid4().hex
    sidecar.store("victim", f"{marker} message", username=f"{marker}-name")
    remember(sidecar, "victim", f"Keeps an {marker} as a pet")
    f2 = remember(sidecar, "victim", f"Keeps an {marker} as a pet at home")["fact"]
    remember(sidecar, "victim", "Works at Globex", "company")
    keep = remember(sidecar, "other", "Works at Globex", "company")["fact"]
    assert files_containing(sidecar.data_dir, marker.encode())
    r = sidecar.request({"type": "forget_user", "user_id": "victim"})
    assert {k: r[k] for k in ("type", "deleted", "facts_deleted", "graph_episodes_deleted")} == {
        "type": "ok",
        "deleted": 1,
        "facts_deleted": 2,
        "graph_episodes_deleted": 1,
    }, (r, f2)
    assert r["removed"] == {"memories": 1, "facts": 2, "graph_episodes": 1, "chunks": 0}, r
    assert files_containing(sidecar.data_dir, marker.encode()) == []
    assert facts(sidecar, "victim", include_inactive=True) == []
    assert [f["id"] for f in facts(sidecar, "other")] == [keep["id"]]
    assert sidecar.request({"type": "stats"})["facts"] == 1


def test_version_1_data_dir_is_migrated(spawn, tmp_path):
    sc = spawn()
    mid = sc.store("u", "I keep bees in the garden")
    assert sc.shutdown() == 0
    # make it a version-1 data dir: only the messages table, schema_version 1
    lance = sc.data_dir / "lancedb"
    for name in ("facts.lance", "fact_events.lance", "users.lance"):
        shutil.rmtree(lance / name)
    meta_path = sc.data_dir / "meta.json"
    meta = orjson.loads(meta_path.read_bytes())
    meta["schema_version"] = 1
    meta_path.write_bytes(orjson.dumps(meta))
    sc2 = spawn()
    assert sc2.ready["memories"] == 1
    assert "migrating" in sc2.stderr()
    assert orjson.loads(meta_path.read_bytes())["schema_version"] == SCHEMA_VERSION
    st = sc2.request({"type": "stats"})
    assert st["schema_version"] == SCHEMA_VERSION and st["facts"] == 0
    assert sc2.request({"type": "query", "user_id": "u", "text": "bees", "limit": 1})["messages"][0]["id"] == mid
    assert remember(sc2, "u", "Keeps bees", "pattern")["action"] == "added"
    assert sc2.shutdown() == 0
    sc3 = spawn()
    assert "migrating" not in sc3.stderr() and len(facts(sc3, "u")) == 1


def test_bad_fact_requests_get_one_error_line_each(shared_sidecar):
    keep = remember(shared_sidecar, "bad", "Works at Globex", "company")["fact"]
    hostile = "x' OR '1'='1"
    cases = [
        ({"type": "remember", "user_id": "bad", "text": 5, "category": "company"}, "invalid_request"),
        ({"type": "remember", "user_id": "bad", "text": "ok"}, "invalid_request"),
        ({"type": "remember", "user_id": "bad", "text": "a\u0000b", "category": "company"}, "invalid_request"),
        ({"type": "remember", "user_id": "bad", "text": "x" * 1001, "category": "company"}, "too_large"),
        ({"type": "extract_inline", "user_id": "bad", "reply": ["not", "a", "string"]}, "invalid_request"),
        ({"type": "facts", "user_id": "bad", "limit": "5"}, "invalid_request"),
        ({"type": "facts", "user_id": "bad", "category": []}, "invalid_request"),
        ({"type": "recall", "users": ["bad"]}, "invalid_request"),
        ({"type": "context", "user_id": "bad", "limit": 0}, "invalid_request"),
        ({"type": "context", "user_id": "bad", "relevant_limit": 10_000}, "too_large"),
        ({"type": "fact_history", "fact_id": hostile}, "not_found"),
        ({"type": "forget_fact", "fact_id": hostile}, "not_found"),
        ({"type": "update_fact", "fact_id": hostile, "text": "x"}, "not_found"),
        ({"type": "resolve", "fact_id": hostile, "candidate_id": keep["id"], "action": "KEEP"}, "not_found"),
        ({"type": "sync", "timeout": -1}, "invalid_request"),
    ]
    for n, (req, code) in enumerate(cases):
        r = shared_sidecar.request({**req, "request_id": n})
        assert r["type"] == "error" and r["code"] == code and r["request_id"] == n, (req, r)
    assert [f["id"] for f in facts(shared_sidecar, "bad")] == [keep["id"]]
    assert shared_sidecar.request({"type": "ping"})["type"] == "pong"
