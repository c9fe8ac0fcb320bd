"""channel_context and history end to end: the real process, real pipes, a real LanceDB directory.
Plus the store reads they use, against a real LanceDB table (no model needed)."""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.messages import MessageStore

T0 = 1_704_067_200  # 2024-01-01T00:00:00Z
HEADER = "[recent channel context]"


@pytest.fixture
def sidecar(spawn):
    """A sidecar without automatic expiry: the messages here are dated 2024 (exact times in the blocks)."""
    sc = spawn("--ttl-days", "0")
    yield sc
    if sc.alive():
        assert sc.shutdown() == 0


def put(sc, channel, rows):
    """Store [(message_id, user_id, username, text, t, reply_to, is_bot), ...] in one batch."""
    msgs = []
    for mid, uid, name, text, t, reply_to, is_bot in rows:
        m = {
            "user_id": uid,
            "content": text,
            "timestamp": T0 + t,
            "message_id": mid,
            "channel_id": channel,
            "is_bot": is_bot,
        }
        if name is not None:
            m["username"] = name
        if reply_to is not None:
            m["reply_to"] = reply_to
        msgs.append(m)
    r = sc.request({"type": "store", "messages": msgs})
    assert r["type"] == "ok", r


def cc(sc, **kw):
    r = sc.request({"type": "channel_context", **kw})
    assert r["type"] == "channel_context", r
    return r


def test_channel_context_from_the_store(shared_sidecar):
    put(
        shared_sidecar,
        "general",
        [
            ("101", "u1", "alice", "how do I reset the router?", 0, None, False),
            ("102", "u2", "bob", "lunch at noon?", 60, None, False),
            ("103", "u3", "carol", "hold the button for 10 s", 120, "101", False),
            ("104", "BOT", "helper-bot", "noon works for me", 180, "102", True),
            ("105", "u1", "alice", "thanks carol, and what about the wifi password?", 240, "103", False),
        ],
    )
    put(shared_sidecar, "random", [("201", "u9", "zed", "a message in another channel", 200, None, False)])

    r = cc(shared_sidecar, channel_id="general", bot_user_id="BOT", bot_name="Mika", request_id="c1")
    assert r == {
        "type": "channel_context",
        "request_id": "c1",
        "threads": 2,
        "messages": 5,
        "opted_out": False,
        "block": f"{HEADER}\n\n"
        "thread (alice, carol):\n"
        "  alice: how do I reset the router?\n"
        "  carol: hold the button for 10 s\n"
        "  alice: thanks carol, and what about the wifi password?\n\n"
        "thread (bob, Mika):\n"
        "  bob: lunch at noon?\n"
        "  Mika: noon works for me",
    }

    # the bot was pulled into 105's chain: the host sends that chain itself, so it is left out
    r = cc(shared_sidecar, channel_id="general", exclude_reply_chain_of="105", bot_user_id="BOT", bot_name="Mika")
    assert r["block"] == f"{HEADER}\n\nthread (bob, Mika):\n  bob: lunch at noon?\n  Mika: noon works for me"

    # before a message: the window ends just before it; a reply to a message outside the window is a root
    r = cc(shared_sidecar, channel_id="general", before_message_id="105", limit=2)
    assert r["block"] == (
        f"{HEADER}\n\nstandalone (helper-bot):\n  helper-bot: noon works for me\n\n"
        "standalone (carol):\n  carol: hold the button for 10 s"
    )

    # the chain of a message newer than the window is found through the store
    put(shared_sidecar, "general", [("106", "u2", "bob", "did it work?", 300, "103", False)])
    r = cc(
        shared_sidecar, channel_id="general", before_message_id="105", exclude_reply_chain_of="106", exclude_ids=["104"]
    )
    assert r["block"] == f"{HEADER}\n\nstandalone (bob):\n  bob: lunch at noon?"

    # everything excluded: an empty string, not a header alone
    r = cc(shared_sidecar, channel_id="general", exclude_ids=["101", "102", "103", "104", "105", "106"])
    assert (r["block"], r["threads"], r["messages"]) == ("", 0, 0)
    assert cc(shared_sidecar, channel_id="nobody-talks-here")["block"] == ""

    err = shared_sidecar.request({"type": "channel_context", "channel_id": "general", "before_message_id": "999"})
    assert err["code"] == "not_found" and "999" in err["message"]
    err = shared_sidecar.request({"type": "channel_context", "channel_id": "random", "before_message_id": "101"})
    assert err["code"] == "not_found"  # message ids are looked up within the channel


def test_ten_roots_capped_at_five_and_window_limit(shared_sidecar):
    put(shared_sidecar, "busy", [(str(i), f"u{i}", f"user{i}", f"topic {i}", i, None, False) for i in range(10)])
    r = cc(shared_sidecar, channel_id="busy")
    assert r["threads"] == 5
    assert r["block"] == HEADER + "".join(f"\n\nstandalone (user{i}):\n  user{i}: topic {i}" for i in (9, 8, 7, 6, 5))
    assert cc(shared_sidecar, channel_id="busy", max_threads=2)["threads"] == 2
    r = cc(shared_sidecar, channel_id="busy", limit=3, max_threads=10)
    assert r["threads"] == 3 and "topic 6" not in r["block"]


def test_equal_timestamps_have_a_deterministic_order_across_compaction_and_restart(spawn):
    sc = spawn("--ttl-days", "0")
    # five messages in the same second, stored one by one in scrambled order
    for mid in ("1003", "998", "1001", "999", "1002"):
        put(sc, "tie", [(mid, "u", "ann", f"msg {mid}", 0, None, False)])
    expected = HEADER + "".join(
        f"\n\nstandalone (ann):\n  ann: msg {m}" for m in ("1003", "1002", "1001", "999", "998")
    )
    first = cc(sc, channel_id="tie", max_threads=10)["block"]
    assert first == expected
    # the window boundary falls inside the tie: the 3 newest are always the same 3
    assert cc(sc, channel_id="tie", limit=3, max_threads=10)["block"] == HEADER + "".join(
        f"\n\nstandalone (ann):\n  ann: msg {m}" for m in ("1003", "1002", "1001")
    )
    assert cc(sc, channel_id="tie", before_message_id="1001", limit=1)["block"] == (
        f"{HEADER}\n\nstandalone (ann):\n  ann: msg 999"
    )
    sc.request({"type": "cleanup", "ttl_days": 10_000})  # cleanup compacts
    assert sc.shutdown() == 0
    sc = spawn("--ttl-days", "0")
    assert cc(sc, channel_id="tie", max_threads=10)["block"] == expected
    assert sc.shutdown() == 0


def test_hostile_channel_ids_match_only_themselves(shared_sidecar):
    ids = ["x' OR '1'='1", "c\\", "o'brien", "ünï🚀"]
    for n, cid in enumerate(ids):
        put(shared_sidecar, cid, [(f"m{n}", "u", "ann", f"in {cid}", n, None, False)])
    for cid in ids:
        assert cc(shared_sidecar, channel_id=cid)["block"] == f"{HEADER}\n\nstandalone (ann):\n  ann: in {cid}"
        h = shared_sidecar.request({"type": "history", "channel_id": cid})
        assert h["messages"] == 1 and h["block"].endswith(f"ann: in {cid}")


def test_stateless_channel_context_inline_messages(sidecar):
    msgs = [
        {"user_id": "1", "username": "alice", "content": "first", "message_id": "a", "timestamp": T0 + 1},
        {
            "user_id": "2",
            "username": "bob",
            "content": "reply",
            "message_id": "b",
            "reply_to": "a",
            "timestamp": T0 + 3,
        },
        {"user_id": "3", "content": "", "message_id": "c", "timestamp": T0 + 2},
        {"user_id": "3", "content": "other", "message_id": "d", "timestamp": T0 + 2.5},
    ]
    r = cc(sidecar, messages=msgs)
    assert r["block"] == (
        f"{HEADER}\n\nthread (alice, bob):\n  alice: first\n  bob: reply\n\nstandalone (3):\n  3: other"
    )
    assert cc(sidecar, messages=msgs, before_message_id="b")["block"] == (
        f"{HEADER}\n\nstandalone (3):\n  3: other\n\nstandalone (alice):\n  alice: first"
    )
    assert cc(sidecar, messages=msgs, exclude_reply_chain_of="b")["block"] == f"{HEADER}\n\nstandalone (3):\n  3: other"
    assert cc(sidecar, messages=[])["block"] == ""
    # nothing was stored
    assert sidecar.request({"type": "stats"})["memories"] == 0
    # without timestamps the list order is oldest first
    r = cc(sidecar, messages=[{"user_id": "1", "content": "older"}, {"user_id": "2", "content": "newer"}])
    assert r["block"] == f"{HEADER}\n\nstandalone (2):\n  2: newer\n\nstandalone (1):\n  1: older"


@pytest.mark.parametrize(
    "request_obj,code,needle",
    [
        ({"type": "channel_context"}, "invalid_request", "channel_id"),
        ({"type": "channel_context", "channel_id": "c", "messages": []}, "invalid_request", "not both"),
        ({"type": "channel_context", "channel_id": "c", "limit": 0}, "invalid_request", "limit"),
        ({"type": "channel_context", "channel_id": "c", "limit": 1001}, "too_large", "--max-window"),
        ({"type": "channel_context", "channel_id": "c", "max_threads": "5"}, "invalid_request", "max_threads"),
        ({"type": "channel_context", "channel_id": "c", "exclude_ids": "x"}, "invalid_request", "exclude_ids"),
        ({"type": "channel_context", "channel_id": "nul\u0000"}, "invalid_request", "NUL"),
        (
            {
                "type": "channel_context",
                "messages": [{"user_id": "1", "content": "a", "timestamp": 1}, {"user_id": "1", "content": "b"}],
            },
            "invalid_request",
            "timestamp",
        ),
        ({"type": "channel_context", "messages": [{"content": "a"}]}, "invalid_request", "user_id"),
        (
            {"type": "channel_context", "messages": [{"user_id": "1", "content": "a"}], "before_message_id": "x"},
            "not_found",
            "x",
        ),
        ({"type": "history"}, "invalid_request", "user_id"),
        (
            {"type": "history", "user_id": "u", "full_count": 0, "mid_count": 0, "short_count": 0},
            "invalid_request",
            "at least 1",
        ),
        ({"type": "history", "user_id": "u", "full_count": 2000}, "too_large", "--max-window"),
        ({"type": "history", "user_id": "u", "mid_words": 0}, "invalid_request", "mid_words"),
    ],
)
def test_bad_requests_get_an_error_and_the_process_keeps_serving(shared_sidecar, request_obj, code, needle):
    r = shared_sidecar.request({**request_obj, "request_id": 9})
    assert r["type"] == "error" and r["code"] == code and r["request_id"] == 9, r
    assert needle in r["message"], r
    assert shared_sidecar.request({"type": "ping"})["type"] == "pong"


def test_history_of_a_channel_and_of_a_user(shared_sidecar):
    words = " ".join(f"w{i}" for i in range(40))
    rows = [
        (
            str(100 + i),
            "hist-ann" if i % 2 else "hist-ben",
            "ann" if i % 2 else "ben",
            f"m{i:02d} {words}",
            60 * i,
            None,
            False,
        )
        for i in range(35)
    ]
    put(shared_sidecar, "chan", rows)
    put(shared_sidecar, "elsewhere", [("900", "hist-ann", "ann", "ann elsewhere", 60 * 40, None, False)])
    h = shared_sidecar.request({"type": "history", "channel_id": "chan", "request_id": "h"})
    assert h["type"] == "history" and h["request_id"] == "h" and h["messages"] == 30 and h["opted_out"] is False
    lines = h["block"].split("\n")
    assert lines[0] == "[recent history]" and len(lines) == 31
    assert lines[1] == "[2024-01-01T00:05Z] ann: m05 w0 w1 w2 w3 w4 w5 w6…"
    assert [len(line.split(": ", 1)[1].split()) for line in lines[1:]] == [8] * 15 + [32] * 10 + [41] * 5
    assert lines[-1] == f"[2024-01-01T00:34Z] ben: m34 {words}"

    # a user's history spans channels; before_message_id ends it
    h = shared_sidecar.request(
        {"type": "history", "user_id": "hist-ann", "full_count": 2, "mid_count": 1, "mid_words": 3, "short_count": 0}
    )
    assert h["block"] == (
        "[recent history]\n[2024-01-01T00:31Z] ann: m31 w0 w1…\n"
        f"[2024-01-01T00:33Z] ann: m33 {words}\n[2024-01-01T00:40Z] ann: ann elsewhere"
    )
    h = shared_sidecar.request(
        {
            "type": "history",
            "user_id": "hist-ann",
            "channel_id": "chan",
            "full_count": 1,
            "mid_count": 0,
            "short_count": 0,
            "before_message_id": "133",
            "exclude_ids": ["131"],
        }
    )
    assert h["block"] == f"[recent history]\n[2024-01-01T00:29Z] ann: m29 {words}"
    h = shared_sidecar.request({"type": "history", "user_id": "nobody"})
    assert (h["block"], h["messages"]) == ("", 0)


def test_opt_out_marker_default_configured_and_disabled(spawn):
    sc = spawn("--ttl-days", "0")
    put(sc, "c", [("1", "u", "ann", "hello", 0, None, False)])
    for kind in ("channel_context", "history"):
        r = sc.request({"type": kind, "channel_id": "c", "text": "just answer, no background 🚫 please"})
        assert (r["type"], r["block"], r["opted_out"]) == (kind, "", True)
        r = sc.request({"type": kind, "channel_id": "c", "text": "what's up?"})
        assert r["block"] != "" and r["opted_out"] is False
    assert sc.shutdown() == 0
    sc = spawn("--ttl-days", "0", env={"MEMORY_SIDECAR_OPT_OUT_MARKER": "[private]"})
    assert cc(sc, channel_id="c", text="[PRIVATE] hi")["opted_out"] is True
    assert cc(sc, channel_id="c", text="🚫 hi")["block"] != ""
    assert sc.shutdown() == 0
    sc = spawn("--ttl-days", "0", "--opt-out-marker", "")
    assert cc(sc, channel_id="c", text="🚫 hi")["opted_out"] is False
    assert sc.shutdown() == 0


# ---------------------------------------------------------------- store reads, real LanceDB


MODEL = {"name": "test", "dim": 4, "digest": "0" * 64}


def _rows(specs):
    return [
        {
            "id": f"id-{mid}",
            "user_id": "u",
            "content": mid,
            "is_bot": False,
            "timestamp": float(ts),
            "message_id": mid,
            "channel_id": ch,
            "reply_to": None,
            "username": None,
        }
        for mid, ch, ts in specs
    ]


def test_store_latest_returns_the_whole_tie_at_the_boundary(tmp_path):
    store = MessageStore(tmp_path / "d", MODEL)
    try:
        specs = [("a", "c", 1), ("b", "c", 2), ("c", "c", 2), ("d", "c", 2), ("e", "c", 3), ("x", "other", 9)]
        for s in specs:  # one fragment per row, like single stores
            store.add(_rows([s]), np.zeros((1, 4), dtype=np.float32))
        got = store.latest("channel_id = 'c'", 2)
        assert got[0]["message_id"] == "e" and sorted(r["message_id"] for r in got[1:]) == ["b", "c", "d"]
        every = [r["message_id"] for r in store.latest("channel_id = 'c'", 10)]
        assert every[0] == "e" and sorted(every[1:4]) == ["b", "c", "d"] and every[4] == "a"
        assert store.latest("channel_id = 'none'", 5) == []
        assert sorted(r["message_id"] for r in store.rows("timestamp = 2.0")) == ["b", "c", "d"]
    finally:
        store.close()


def test_channel_index_is_built_on_an_existing_data_dir(tmp_path):
    from lancedb.index import FTS

    store = MessageStore(tmp_path / "d", MODEL)
    store.add(_rows([("a", "c", 1)]), np.zeros((1, 4), dtype=np.float32))
    store.flush()
    names = {ix.name: tuple(ix.columns) for ix in store.table.list_indices()}
    every = {("user_id",), ("channel_id",), ("message_id",)}  # keyword search needs no full-text index
    assert set(names.values()) == every
    for name, cols in names.items():
        if cols != ("user_id",):
            store.table.drop_index(name)  # a data dir made before these indexes existed
    for column in ("content", "search_text"):  # ... with the full-text indexes of before keywords.py
        store.table.create_index(column, config=FTS())
    assert {tuple(ix.columns) for ix in store.table.list_indices()} == {("user_id",), ("content",), ("search_text",)}
    store.close()
    store = MessageStore(tmp_path / "d", MODEL)
    try:
        assert {tuple(ix.columns) for ix in store.table.list_indices()} == every
        assert [r["message_id"] for r in store.latest("channel_id = 'c'", 5)] == ["a"]
    finally:
        store.close()
