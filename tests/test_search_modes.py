"""Keyword (LanceDB full-text) and hybrid search, end to end over the pipe: each mode finds what it
should on a small set where keyword and semantic disagree, new rows are keyword-searchable at once,
users stay isolated in every mode, deleted text leaves no trace in another row, old data dirs migrate."""

from __future__ import annotations

import time

import orjson
from conftest import files_containing

from sidecar.storage import SCHEMA_VERSION

MODES = ("semantic", "keyword", "hybrid")

CAT = "my cat Miso hates the vacuum cleaner"
INVOICE = "the invoice number is 88341207, pay it by friday"
HIKE = "I went hiking with my sister last weekend"


def query(sc, user, text, mode=None, limit=5, **extra):
    req = {"type": "query", "user_id": user, "text": text, "limit": limit, **extra}
    if mode is not None:
        req["mode"] = mode
    r = sc.request(req)
    assert r["type"] == "results", r
    return r["messages"]


def contents(messages):
    return [m["content"] for m in messages]


def test_each_mode_finds_what_it_should(sidecar):
    for text in (CAT, INVOICE, HIKE):
        sidecar.store("u", text)
    # no word in common with any message: keyword finds nothing, meaning finds the cat
    assert query(sidecar, "u", "tell me about animals", "keyword") == []
    assert contents(query(sidecar, "u", "tell me about animals", "semantic"))[0] == CAT
    assert contents(query(sidecar, "u", "tell me about animals", "hybrid"))[0] == CAT
    # a bare number: only the message that contains it matches by keyword; hybrid puts it first
    assert contents(query(sidecar, "u", "88341207", "keyword")) == [INVOICE]
    assert contents(query(sidecar, "u", "88341207", "hybrid"))[0] == INVOICE
    # stemming: "hike" matches "hiking"
    assert contents(query(sidecar, "u", "hike", "keyword")) == [HIKE]
    # the default is hybrid, and every result carries its cosine similarity
    default = query(sidecar, "u", "88341207")
    assert default == query(sidecar, "u", "88341207", "hybrid")
    # (min_score 0: semantic returns every row, hybrid keeps the ones whose search text has the number)
    sem = {m["id"]: m["similarity"] for m in query(sidecar, "u", "88341207", "semantic", min_score=0)}
    for m in default:
        assert abs(m["similarity"] - sem[m["id"]]) < 1e-3
    # searching writes nothing to stderr: LanceDB warns on every full-text query that selects
    # columns without `_score` (a line per query in the host's log; regression)
    assert "Deprecation warning" not in sidecar.stderr()


def test_filters_apply_in_every_mode(shared_sidecar):
    t = int(time.time()) - 3_600
    shared_sidecar.store("filters", "old note about the quarterly zeppelin budget", timestamp=t)
    shared_sidecar.store("filters", "bot note about the zeppelin", is_bot=True, timestamp=t + 300)
    new = shared_sidecar.store("filters", "new note about the zeppelin schedule", timestamp=t + 200)
    for mode in MODES:
        got = query(shared_sidecar, "filters", "zeppelin", mode, since=t + 100, include_bot=False)
        assert [m["id"] for m in got] == [new], (mode, got)


def test_new_rows_are_keyword_searchable_at_once(shared_sidecar):
    for i in range(5):
        shared_sidecar.store("fresh", f"filler message number {i} about nothing much")
    shared_sidecar.request({"type": "cleanup", "ttl_days": 36500})  # compacts: the index now covers these rows
    fresh = shared_sidecar.store("fresh", "the wombat ate my sandwich")  # not in any index yet
    assert [m["id"] for m in query(shared_sidecar, "fresh", "wombat", "keyword")] == [fresh]
    assert query(shared_sidecar, "fresh", "wombat", "hybrid")[0]["id"] == fresh
    shared_sidecar.request({"type": "cleanup", "ttl_days": 36500})
    assert [m["id"] for m in query(shared_sidecar, "fresh", "wombat", "keyword")] == [fresh]  # and after compaction
    batch = shared_sidecar.request(
        {"type": "store", "messages": [{"user_id": "fresh", "content": "a platypus in the pool"}]}
    )
    assert [m["id"] for m in query(shared_sidecar, "fresh", "platypus", "keyword")] == batch["ids"]


def test_users_are_isolated_in_every_mode(spawn, tmp_path):
    hostile = ["a'b", "a\\'b", "x' OR '1'='1", 'q"uote', "back\\slash\\", "a"]
    for cache in ("128", "0"):  # from the in-memory cache and from LanceDB alone
        sc = spawn("--cache-mb", cache, data_dir=tmp_path / f"data-{cache}")
        ids = {u: sc.store(u, f"{u} keeps a narwhal named Bob") for u in hostile}
        for u in hostile:
            for mode in MODES:
                got = query(sc, u, "narwhal", mode, limit=10)
                assert [m["id"] for m in got] == [ids[u]], (cache, u, mode, got)
                assert all(m["user_id"] == u for m in got)
        for mode in MODES:
            assert query(sc, "nobody", "narwhal", mode) == []
        assert sc.shutdown() == 0


def test_invalid_mode_is_an_invalid_request(shared_sidecar):
    shared_sidecar.store("modes", CAT)
    for bad in ("fuzzy", "", 1, None):
        r = shared_sidecar.request({"type": "query", "user_id": "modes", "text": "cat", "mode": bad})
        assert r["type"] == "error" and r["code"] == "invalid_request" and "mode" in r["message"], r
        r = shared_sidecar.request({"type": "facts", "user_id": "modes", "text": "cat", "mode": bad})
        assert r["type"] == "error" and r["code"] == "invalid_request", r
    assert contents(query(shared_sidecar, "modes", "cat"))[0] == CAT  # still serving


def test_context_of_the_previous_messages_is_searchable_and_forgotten(shared_sidecar):
    """A reply ("yes, last Tuesday") is found by the words of the message it answers, in hybrid mode;
    deleting that message removes its words from the reply's search text, on disk too."""
    q = shared_sidecar.store("ctx", "did you ever visit the xylophone museum?", channel_id="c1")
    a = shared_sidecar.store("ctx", "yes, last Tuesday, it was wonderful", channel_id="c1")
    shared_sidecar.store("ctx", "an unrelated remark about groceries", channel_id="c2")  # other channel: not linked
    assert [m["id"] for m in query(shared_sidecar, "ctx", "xylophone", "keyword")] == [q]  # keyword: own text only
    got = [m["id"] for m in query(shared_sidecar, "ctx", "xylophone museum", "hybrid", limit=2)]
    assert set(got) == {q, a}
    r = shared_sidecar.request({"type": "delete", "id": q})
    assert (r["type"], r["deleted"], r["tombstone"]["id"]) == ("ok", 1, q), r
    assert files_containing(shared_sidecar.data_dir, b"xylophone") == []


def test_one_batch_over_many_users_links_each_to_its_own_stored_messages(spawn, tmp_path):
    """A batch store over many users, none of them in memory (a fresh process), links each reply to
    the newest stored messages of its own user and channel, read from the table for the whole batch."""
    sc = spawn()
    topics = ["xylophone museum", "saxophone lessons", "glacier hiking", "origami cranes", "sourdough starter"]
    asked = {}
    for i, topic in enumerate(topics):
        for filler in ("the weather was grey today", "I need to buy new shoes", "work ran late again"):
            sc.store(f"u{i}", filler, channel_id="other")
        asked[i] = sc.store(f"u{i}", f"have you ever tried {topic}?", channel_id="c")
        for newer in ("my phone battery died", "the bus was late"):  # newer, but in another channel
            sc.store(f"u{i}", newer, channel_id="other")
    assert sc.shutdown() == 0
    sc = spawn(data_dir=tmp_path / "data")
    r = sc.request(
        {
            "type": "store",
            "messages": [
                {"user_id": f"u{i}", "content": "yes, last Tuesday, it was wonderful", "channel_id": "c"}
                for i in range(len(topics))
            ],
        }
    )
    assert r["type"] == "ok", r
    for i, topic in enumerate(topics):  # each reply is found by the words of the question it answers
        assert {m["id"] for m in query(sc, f"u{i}", topic, "hybrid", limit=2)} == {asked[i], r["ids"][i]}, topic


def test_fact_search_modes(sidecar):
    def remember(user, text):
        r = sidecar.request({"type": "remember", "user_id": user, "text": text, "category": "answer"})
        assert r["type"] == "remembered", r
        return r["fact"]["id"]

    pet = remember("u", "Has a dog named Pickles")
    plate = remember("u", "Car licence plate is KX-4471")
    remember("other", "Car licence plate is KX-4471 too")

    def facts(user, text, mode):
        r = sidecar.request({"type": "facts", "user_id": user, "text": text, "mode": mode, "limit": 5})
        assert r["type"] == "facts", r
        return [f["id"] for f in r["facts"]]

    assert facts("u", "KX-4471", "keyword") == [plate]
    assert facts("u", "KX-4471", "hybrid")[0] == plate
    assert facts("u", "animals at home", "keyword") == []
    assert facts("u", "animals at home", "semantic")[0] == pet
    assert facts("u", "animals at home", "hybrid")[0] == pet
    assert facts("nobody", "KX-4471", "keyword") == []
    # recall and context rank by the same search
    r = sidecar.request({"type": "recall", "users": {"u": None}, "text": "KX-4471", "mode": "keyword"})
    assert [f["id"] for f in r["users"][0]["facts"]] == [plate]
    r = sidecar.request({"type": "context", "user_id": "u", "text": "KX-4471", "mode": "keyword"})
    assert r["type"] == "context" and "KX-4471" in r["text"] and "Pickles" not in r["text"], r


def test_schema_2_data_dir_is_migrated(spawn):
    """A data dir from before keyword search (schema 2: no search_text, no full-text indexes) is brought
    up to date at start-up: linked, indexed, searchable in every mode."""
    import lancedb

    sc = spawn("--ttl-days", "0")
    q = sc.store("u", "did you ever visit the xylophone museum?", channel_id="c1", timestamp=1_000)
    a = sc.store("u", "yes, last Tuesday, it was wonderful", channel_id="c1", timestamp=2_000)
    fact = sc.request({"type": "remember", "user_id": "u", "text": "Plays the bassoon", "category": "answer"})
    assert sc.shutdown() == 0
    # rewrite the tables the way schema 2 had them: without the new columns and without any index
    db = lancedb.connect(str(sc.data_dir / "lancedb"))
    messages = db.open_table("messages").to_arrow().drop_columns(["search_text", "prev_id", "prev2_id"])
    db.create_table("messages", data=messages, mode="overwrite")
    db.create_table("facts", data=db.open_table("facts").to_arrow(), mode="overwrite")
    assert not db.open_table("messages").list_indices() and not db.open_table("facts").list_indices()
    meta_path = sc.data_dir / "meta.json"
    meta = orjson.loads(meta_path.read_bytes())
    meta["schema_version"] = 2
    meta_path.write_bytes(orjson.dumps(meta))
    del db, messages

    sc2 = spawn("--ttl-days", "0")
    assert sc2.ready["memories"] == 2
    err = sc2.stderr()
    assert "migrating" in err and "linking 2 memories" in err, err
    assert orjson.loads(meta_path.read_bytes())["schema_version"] == SCHEMA_VERSION
    assert sc2.request({"type": "stats"})["schema_version"] == SCHEMA_VERSION
    assert [m["id"] for m in query(sc2, "u", "xylophone", "keyword")] == [q]
    assert {m["id"] for m in query(sc2, "u", "xylophone museum", "hybrid", limit=2)} == {q, a}
    r = sc2.request({"type": "facts", "user_id": "u", "text": "bassoon", "mode": "keyword"})
    assert [f["id"] for f in r["facts"]] == [fact["fact"]["id"]]
    new = sc2.store("u", "and then a quokka walked in", channel_id="c1")
    assert [m["id"] for m in query(sc2, "u", "quokka", "keyword")] == [new]
    # linked across the restart to the stored messages before it (their words find it)
    assert {m["id"] for m in query(sc2, "u", "Tuesday", "hybrid", limit=2)} == {a, new}
    assert sc2.shutdown() == 0
    sc3 = spawn("--ttl-days", "0")
    assert "migrating" not in sc3.stderr()
    assert [m["id"] for m in query(sc3, "u", "xylophone", "keyword")] == [q]
    assert sc3.shutdown() == 0
