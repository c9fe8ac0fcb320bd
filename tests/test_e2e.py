"""End-to-end: the real process, real pipes, the real model and a real LanceDB directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from conftest import ROOT, files_containing

DAY = 86_400


def test_original_four_lines(sidecar):
    ok = sidecar.request({"type": "store", "user_id": "123", "content": "hey what's up", "is_bot": False})
    assert ok["type"] == "ok" and uuid.UUID(ok["id"])
    res = sidecar.request({"type": "query", "user_id": "123", "text": "what did we talk about?", "limit": 5})
    assert res["type"] == "results"
    [m] = res["messages"]
    assert m["content"] == "hey what's up" and m["id"] == ok["id"] and m["is_bot"] is False
    assert isinstance(m["timestamp"], int) and abs(m["timestamp"] - time.time()) < 60
    assert -1.0 <= m["similarity"] <= 1.0
    assert sidecar.request({"type": "cleanup", "ttl_days": 30}) == {"type": "ok", "deleted": 0}
    assert sidecar.request({"type": "shutdown"}) == {"type": "ok"}
    assert sidecar.proc.wait(30) == 0


def test_a_fresh_start_is_quiet_on_stderr_at_the_default_level(sidecar):
    """docs/protocol.md: logs go to stderr, quiet (`warning`) by default. A fresh data dir, stores, a query, the
    graph and a shutdown write nothing there: not LanceDB's notice that it creates a table, nor the graph's
    start-up catch-up taking the messages just stored (already queued for the graph) for a backlog."""
    for i in range(3):
        sidecar.send({"type": "store", "user_id": "q", "content": f"I went hiking with Ana, day {i}"})
    assert all(sidecar.recv()["type"] == "ok" for _ in range(3))
    assert sidecar.request({"type": "query", "user_id": "q", "text": "hiking", "limit": 1})["messages"]
    assert sidecar.request({"type": "entities", "user_id": "q"})["type"] == "entities"  # waits for the catch-up
    assert sidecar.shutdown() == 0
    assert sidecar.stderr() == ""


# The checks taking `shared_sidecar` share one process (a spawn each cost about 3 s of CPU): each keeps to users
# of its own and none reads a count over all users.


def test_semantic_ranking_pets_before_hiking(shared_sidecar):
    sidecar = shared_sidecar
    sidecar.store("ranking", "We went hiking up the mountain trail on Saturday")
    cat = sidecar.store("ranking", "My cat Luna keeps knocking glasses off the table")
    sidecar.store("ranking", "The quarterly tax forms are due next week")
    res = sidecar.request({"type": "query", "user_id": "ranking", "text": "tell me about your pets", "limit": 3})
    contents = [m["content"] for m in res["messages"]]
    assert res["messages"][0]["id"] == cat, contents
    sims = [m["similarity"] for m in res["messages"]]
    assert sims == sorted(sims, reverse=True)


def test_users_are_isolated_even_with_hostile_ids(sidecar):
    ids = ["alice", "x' OR '1'='1", "bob\\", "o'brien", 'quote"d', "ünï🚀", "1 OR 1=1 --", "alice "]
    for uid in ids:
        sidecar.store(uid, f"secret of {uid}: I like cats")
    sidecar.store(123, "numeric id memory")
    for uid in ids:
        res = sidecar.request({"type": "query", "user_id": uid, "text": "cats", "limit": 50})
        assert [m["content"] for m in res["messages"]] == [f"secret of {uid}: I like cats"]
        assert all(m["user_id"] == uid for m in res["messages"])
    res = sidecar.request({"type": "query", "user_id": "123", "text": "memory", "limit": 50})
    assert [m["content"] for m in res["messages"]] == ["numeric id memory"]
    # forget_user of a hostile id deletes exactly that user
    assert sidecar.request({"type": "forget_user", "user_id": "x' OR '1'='1"})["deleted"] == 1
    assert sidecar.request({"type": "stats"})["memories"] == len(ids)  # 8 stored + 1 numeric - 1 forgotten


def test_query_filters(shared_sidecar):
    sidecar = shared_sidecar
    now = int(time.time())
    sidecar.store("filters", "I love pizza", timestamp=now - 3 * DAY)
    sidecar.store("filters", "Pizza is my favourite food, said the bot", is_bot=True, timestamp=now - DAY)
    sidecar.store("filters", "I had pizza again today", timestamp=now)
    q = {"type": "query", "user_id": "filters", "text": "pizza", "limit": 10}
    assert len(sidecar.request(q)["messages"]) == 3
    no_bot = sidecar.request({**q, "include_bot": False})["messages"]
    assert [m["is_bot"] for m in no_bot] == [False, False]
    since = sidecar.request({**q, "since": now - 2 * DAY})["messages"]
    assert sorted(m["timestamp"] for m in since) == [now - DAY, now]
    until = sidecar.request({**q, "until": now - 2 * DAY})["messages"]
    assert [m["content"] for m in until] == ["I love pizza"]
    high = sidecar.request({**q, "min_similarity": 0.99})["messages"]
    assert high == []
    limited = sidecar.request({**q, "limit": 1})["messages"]
    assert len(limited) == 1


def test_batch_store_one_commit_ids_in_order(shared_sidecar):
    sidecar = shared_sidecar
    msgs = [
        {
            "user_id": "b",
            "content": f"batch message number {i} about topic {i}",
            "message_id": f"m{i}",
            "channel_id": "c1",
            "username": "Bee",
            "reply_to": f"m{i - 1}" if i else None,
        }
        for i in range(20)
    ]
    r = sidecar.request({"type": "store", "messages": msgs, "request_id": 5})
    assert r["type"] == "ok" and r["request_id"] == 5 and len(r["ids"]) == 20 and len(set(r["ids"])) == 20
    res = sidecar.request({"type": "query", "user_id": "b", "text": "batch message number 7 about topic 7", "limit": 1})
    [top] = res["messages"]
    assert top["id"] == r["ids"][7]
    assert (top["message_id"], top["channel_id"], top["username"], top["reply_to"]) == ("m7", "c1", "Bee", "m6")


def test_ttl_cleanup_deletes_only_old(spawn):
    # Automatic expiry off: with it on (the default 30 days), the background sweep may delete some of
    # these 40-day-old memories before the explicit cleanup runs, and the count below would race it.
    sidecar = spawn("--ttl-days", "0")
    now = int(time.time())
    old = [sidecar.store("t", f"old memory {i}", timestamp=now - 40 * DAY) for i in range(3)]
    sidecar.store("t", "fresh memory", timestamp=now - DAY)
    sidecar.store("other", "someone else's old memory", timestamp=now - 40 * DAY)
    r = sidecar.request({"type": "cleanup", "ttl_days": 30, "user_id": "t"})
    assert r == {"type": "ok", "deleted": 3}
    left = sidecar.request({"type": "query", "user_id": "t", "text": "memory", "limit": 10})["messages"]
    assert [m["content"] for m in left] == ["fresh memory"]
    assert not set(old) & {m["id"] for m in left}
    assert sidecar.request({"type": "cleanup", "ttl_days": 30})["deleted"] == 1  # the other user's
    assert sidecar.request({"type": "cleanup", "ttl_days": 0})["code"] == "invalid_request"


def test_automatic_expiry_at_startup(spawn, tmp_path):
    now = int(time.time())
    sc = spawn("--ttl-days", "0")
    sc.store("u", "ancient", timestamp=now - 100 * DAY)
    sc.store("u", "recent", timestamp=now - 1 * DAY)
    assert sc.shutdown() == 0
    sc = spawn("--ttl-days", "30")
    deadline = time.time() + 30
    while time.time() < deadline and sc.request({"type": "stats"})["memories"] != 1:
        time.sleep(0.2)
    left = sc.request({"type": "query", "user_id": "u", "text": "anything", "limit": 10})["messages"]
    assert [m["content"] for m in left] == ["recent"]
    assert sc.shutdown() == 0


def test_a_store_answer_says_when_the_memory_expires_and_warns_when_that_has_passed(spawn):
    now = int(time.time())
    sc = spawn("--ttl-days", "30")
    fresh = sc.request({"type": "store", "user_id": "u", "content": "fresh", "timestamp": now - DAY})
    assert fresh["expires_at"] == now + 29 * DAY and "note" not in fresh
    old = sc.request({"type": "store", "user_id": "u", "content": "ancient", "timestamp": now - 100 * DAY})
    assert old["type"] == "ok" and old["expires_at"] == now - 70 * DAY
    assert "deleted at the next automatic cleanup" in old["note"] and "--ttl-days" in old["note"]
    batch = sc.request(
        {
            "type": "store",
            "messages": [{"user_id": "u", "content": "a"}, {"user_id": "u", "content": "b", "timestamp": 5}],
        }
    )
    assert len(batch["expires_at"]) == 2 and batch["expires_at"][1] == 5 + 30 * DAY
    assert batch["expires_at"][0] >= now + 30 * DAY - 5 and batch["note"].startswith("1 of these 2 memories")
    assert sc.shutdown() == 0
    sc = spawn("--ttl-days", "0")
    kept = sc.request({"type": "store", "user_id": "u", "content": "kept", "timestamp": now - 100 * DAY})
    assert kept["expires_at"] is None and "note" not in kept  # null: it never expires
    assert sc.shutdown() == 0


def test_forget_user_and_delete_leave_nothing_on_disk(sidecar):
    marker = "zebra-marker-" + uuid.uuid4().hex
    for i in range(3):
        sidecar.store("victim", f"{marker} private note {i}")
    fact = sidecar.request(
        {"type": "remember", "user_id": "victim", "text": f"Writes {marker} notes", "category": "pattern"}
    )
    assert fact["type"] == "remembered"
    keep = sidecar.store("survivor", "a note that must stay")
    one = sidecar.store("survivor", f"{marker} deletable")
    assert files_containing(sidecar.data_dir, marker.encode()), "marker should be on disk before deletion"
    forgot = sidecar.request({"type": "forget_user", "user_id": "victim"})
    at = forgot["tombstone"]["at"]
    assert forgot == {
        "type": "ok",
        "deleted": 3,
        "facts_deleted": 1,
        "graph_episodes_deleted": 3,
        "removed": {"memories": 3, "facts": 1, "graph_episodes": 3, "chunks": 0},
        "tombstone": {"of": "user", "id": "victim", "at": at},
    }
    assert abs(at - time.time()) < 600
    deleted = sidecar.request({"type": "delete", "id": one})
    assert deleted == {
        "type": "ok",
        "deleted": 1,
        "tombstone": {"of": "memory", "id": one, "at": deleted["tombstone"]["at"]},
    }
    assert files_containing(sidecar.data_dir, marker.encode()) == []
    assert sidecar.request({"type": "delete", "id": one})["code"] == "not_found"
    assert sidecar.request({"type": "forget_user", "user_id": "victim"})["deleted"] == 0
    assert sidecar.request({"type": "fact_history", "fact_id": fact["fact"]["id"]})["code"] == "not_found"
    res = sidecar.request({"type": "query", "user_id": "survivor", "text": "note", "limit": 5})
    assert [m["id"] for m in res["messages"]] == [keep]


def test_data_survives_restart_and_kill(spawn, tmp_path):
    sc = spawn()
    a = sc.store("u", "remember that my birthday is in May")
    assert sc.shutdown() == 0
    sc = spawn()
    b = sc.store("u", "and my sister's birthday is in June")
    sc.kill()  # SIGKILL right after an acknowledged write
    sc = spawn()
    res = sc.request({"type": "query", "user_id": "u", "text": "birthday", "limit": 5})
    assert {m["id"] for m in res["messages"]} == {a, b}
    assert sc.ready["memories"] == 2
    assert sc.shutdown() == 0


def test_request_id_echo_and_order_when_pipelined(shared_sidecar):
    sidecar = shared_sidecar
    n = 60
    for i in range(n):
        if i % 3 == 0:
            sidecar.send({"type": "store", "user_id": "p", "content": f"message {i}", "request_id": i})
        elif i % 3 == 1:
            sidecar.send({"type": "query", "user_id": "p", "text": "message", "request_id": f"q{i}"})
        else:
            sidecar.send({"type": "nope", "request_id": i})
    got = [sidecar.recv() for _ in range(n)]
    assert [r.get("request_id") for r in got] == [i if i % 3 != 1 else f"q{i}" for i in range(n)]
    assert [r["type"] for r in got] == [("ok", "results", "error")[i % 3] for i in range(n)]


def test_requests_sent_before_ready_are_queued(spawn):
    sc = spawn(wait_ready=False)
    sc.send({"type": "store", "user_id": "e", "content": "early bird", "request_id": "s"})
    sc.send({"type": "query", "user_id": "e", "text": "bird", "request_id": "q"})
    assert sc.recv(120)["type"] == "ready"
    assert sc.recv()["request_id"] == "s"
    res = sc.recv()
    assert res["request_id"] == "q" and [m["content"] for m in res["messages"]] == ["early bird"]
    assert sc.shutdown() == 0


def test_second_instance_on_same_data_dir_is_refused(sidecar, spawn):
    second = spawn(data_dir=sidecar.data_dir, wait_ready=False)
    line = second.recv(120)
    assert line["type"] == "error" and line["code"] == "startup_failed"
    assert "in use by another memory-sidecar" in line["message"]
    assert second.proc.wait(30) == 1
    assert sidecar.request({"type": "ping"})["type"] == "pong"  # the first one is unharmed


def test_a_data_dir_that_is_a_file_is_named_as_such(spawn, tmp_path):
    """Regression: it said "cannot create data dir X: File exists" (mkdir's words)."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    sc = spawn(data_dir=a_file, wait_ready=False)
    line = sc.recv(120)
    assert line["code"] == "startup_failed" and "is a file, not a directory" in line["message"], line
    assert sc.proc.wait(30) == 1
    assert a_file.read_text() == "mine"


@pytest.mark.parametrize("how", ["eof", "sigterm", "sigint"])
def test_graceful_exit_paths(spawn, how):
    """End of stdin (a host that closes it without `shutdown`), SIGTERM and SIGINT: the sidecar leaves by the
    graceful path (its log names the cause), exit 0, the acknowledged store kept. No bound on the seconds it
    takes (a loaded machine stretches them): `wait` is a hang detector. On Windows a host's SIGTERM is
    CTRL_BREAK_EVENT to the sidecar's process group (conftest starts it in its own), and Ctrl+C only reaches a
    whole console, so that case is skipped there."""
    if sys.platform == "win32" and how == "sigint":
        pytest.skip("Windows delivers CTRL_C_EVENT to a whole console, not to one child process group")
    sc = spawn("--log-level", "info")
    sc.store("g", "persist me")
    if how == "eof":
        sc.close_stdin()
    elif sys.platform == "win32":
        sc.proc.send_signal(signal.CTRL_BREAK_EVENT)
    else:
        sc.proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGINT)
    assert sc.proc.wait(30) == 0
    cause = "end of input, shutting down" if how == "eof" else "received signal"
    assert cause in sc.stderr(), sc.stderr()
    sc2 = spawn()
    assert sc2.ready["memories"] == 1
    assert sc2.shutdown() == 0


def test_stats(sidecar):
    sidecar.store("a", "one")
    sidecar.store("a", "two")
    sidecar.store("b", "three")
    s = sidecar.request({"type": "stats", "request_id": "st"})
    assert s["type"] == "stats" and s["request_id"] == "st"
    assert (s["memories"], s["users"]) == (3, 2)
    assert s["disk_bytes"] > 0 and s["uptime_seconds"] >= 0
    assert s["model"]["dim"] == 384 and len(s["model"]["digest"]) == 64
    assert s["model"]["digest"] == sidecar.ready["model_digest"]
    assert set(s["versions"]) >= {"lancedb", "onnxruntime"}


BAD_INPUTS = [
    (b"this is not json", "invalid_json"),
    (b'{"type": "store", ', "invalid_json"),
    (b"\xff\xfe\x00garbage\x80\x81", "invalid_json"),
    (b"[1, 2, 3]", "invalid_request"),
    (b'"just a string"', "invalid_request"),
    (b"null", "invalid_request"),
    (b"{}", "invalid_request"),
    (b'{"type": 5}', "invalid_request"),
    (b'{"type": "fly_to_moon"}', "unknown_type"),
    (b'{"type": "store", "user_id": "1"}', "invalid_request"),
    (b'{"type": "store", "content": "hi"}', "invalid_request"),
    (b'{"type": "store", "user_id": "1", "content": "   "}', "invalid_request"),
    (b'{"type": "store", "user_id": "1", "content": 42}', "invalid_request"),
    (b'{"type": "store", "user_id": null, "content": "x"}', "invalid_request"),
    (b'{"type": "store", "user_id": "1", "content": "x", "is_bot": "yes"}', "invalid_request"),
    (b'{"type": "store", "user_id": "1", "content": "x", "timestamp": "yesterday"}', "invalid_request"),
    (b'{"type": "store", "user_id": "1", "content": "x", "timestamp": -5}', "invalid_request"),
    (b'{"type": "store", "messages": []}', "invalid_request"),
    (b'{"type": "store", "messages": [{"user_id": "1"}]}', "invalid_request"),
    (b'{"type": "store", "user_id": "1", "content": "nul \\u0000 inside"}', "invalid_request"),
    (b'{"type": "query", "user_id": "1"}', "invalid_request"),
    (b'{"type": "query", "user_id": "1", "text": "x", "limit": "5"}', "invalid_request"),
    (b'{"type": "query", "user_id": "1", "text": "x", "limit": 0}', "invalid_request"),
    (b'{"type": "query", "user_id": "1", "text": "x", "limit": 100000}', "too_large"),
    (b'{"type": "query", "user_id": [1], "text": "x"}', "invalid_request"),
    (b'{"type": "cleanup", "ttl_days": "30"}', "invalid_request"),
    (b'{"type": "delete"}', "invalid_request"),
    (b'{"type": "delete", "id": "no-such-id"}', "not_found"),
    (b'{"type": "store", "user_id": "1", "content": "x", "request_id": {"a": 1}}', "invalid_request"),
    (b'{"type": "query", "user_id": "1", "text": "x", "limit": 99999999999999999999999}', "invalid_request"),
]


def test_bad_input_gets_one_error_line_and_process_keeps_serving(shared_sidecar):
    sidecar = shared_sidecar
    good = sidecar.store("ok-user", "a memory that must survive bad input")
    for raw, code in BAD_INPUTS:
        sidecar.send_raw(raw + b"\n")
        r = sidecar.recv()
        assert r["type"] == "error" and r["code"] == code, (raw, r)
        assert isinstance(r["message"], str) and len(r["message"]) > 10
    # request_id is echoed on errors whenever it could be read
    r = sidecar.request({"type": "store", "user_id": "1", "request_id": "bad-1"})
    assert (r["code"], r["request_id"]) == ("invalid_request", "bad-1")
    assert "content" in r["message"]
    r = sidecar.request({"type": "nope", "request_id": 9})
    assert (r["code"], r["request_id"]) == ("unknown_type", 9)
    # CRLF line endings (a Windows host) and unknown fields are fine; the answers end in a bare \n (conftest)
    sidecar.send_raw(b'{"type":"ping","request_id":"crlf","extra_field":[1,2]}\r\n')
    assert sidecar.recv() == {"type": "pong", "request_id": "crlf"}
    sidecar.send_raw(
        b'{"type":"store","user_id":"win","content":"written by a Windows host"}\r\n'
        b'{"type":"query","user_id":"win","text":"Windows host","limit":1}\r\n'
    )
    crlf_id = sidecar.recv()["id"]
    assert [(m["id"], m["content"]) for m in sidecar.recv()["messages"]] == [(crlf_id, "written by a Windows host")]
    res = sidecar.request({"type": "query", "user_id": "ok-user", "text": "memory", "limit": 5})
    assert [m["id"] for m in res["messages"]] == [good]


def test_oversized_line_and_content(spawn):
    sc = spawn("--max-line-bytes", "4096", "--max-content-chars", "100")
    sc.send_raw(b'{"type":"store","user_id":"1","content":"' + b"a" * 100_000 + b'"}\n')
    r = sc.recv()
    assert r["code"] == "too_large" and "4096" in r["message"]
    r = sc.request({"type": "store", "user_id": "1", "content": "b" * 101})
    assert r["code"] == "too_large"
    assert sc.request({"type": "ping"})["type"] == "pong"
    assert sc.shutdown() == 0


def test_last_line_without_newline_is_served(spawn):
    sc = spawn()
    sc.send_raw(b'{"type":"ping","request_id":"last"}')
    sc.close_stdin()
    assert sc.recv() == {"type": "pong", "request_id": "last"}
    assert sc.proc.wait(30) == 0


def test_model_mismatch_is_refused_then_reembed_fixes_it(spawn, tmp_path):
    import orjson

    sc = spawn()
    sc.store("u", "I play the violin every evening")
    fact = sc.request({"type": "remember", "user_id": "u", "text": "Plays the violin", "category": "pattern"})
    assert sc.shutdown() == 0
    meta_path = sc.data_dir / "meta.json"
    meta = orjson.loads(meta_path.read_bytes())
    meta["model"]["digest"] = meta["model"]["vectors"] = "0" * 64  # made by a model of another family
    meta_path.write_bytes(orjson.dumps(meta))
    bad = spawn(wait_ready=False)
    line = bad.recv(120)
    assert line["code"] == "startup_failed" and "--reembed" in line["message"]
    assert bad.proc.wait(30) == 1
    fixed = spawn("--reembed")
    res = fixed.request({"type": "query", "user_id": "u", "text": "music instrument", "limit": 1})
    assert res["messages"][0]["content"] == "I play the violin every evening"
    assert res["messages"][0]["similarity"] > 0.3
    facts = fixed.request({"type": "facts", "user_id": "u", "text": "music instrument"})["facts"]
    assert [f["id"] for f in facts] == [fact["fact"]["id"]] and facts[0]["similarity"] > 0.3  # facts re-embedded too
    assert fixed.shutdown() == 0
    assert orjson.loads(meta_path.read_bytes())["model"]["digest"] == fixed.ready["model_digest"]


def test_a_store_made_with_the_model_shipped_before_opens_as_it_is(spawn):
    """Upgrading from the fp32-computing model file to the int8 one keeps the user's store: same vector family."""
    import orjson

    from sidecar.embedding.model import FUSED_FP16_ONNX

    sc = spawn()
    sc.store("u", "I play the violin every evening")
    assert sc.ready["model_digest"] != FUSED_FP16_ONNX and sc.shutdown() == 0
    meta_path = sc.data_dir / "meta.json"
    meta = orjson.loads(meta_path.read_bytes())
    meta["model"] = {"name": meta["model"]["name"], "dim": 384, "digest": FUSED_FP16_ONNX}  # as written before
    meta_path.write_bytes(orjson.dumps(meta))
    again = spawn()  # no --reembed, no error
    res = again.request({"type": "query", "user_id": "u", "text": "music instrument", "limit": 1, "mode": "semantic"})
    assert res["messages"][0]["content"] == "I play the violin every evening" and res["messages"][0]["similarity"] > 0.3
    assert again.shutdown() == 0


def test_model_checksum_pin_is_enforced(spawn, tmp_path):
    sc = spawn("--model-sha256", "ab" * 32, wait_ready=False)  # the bundled model's file has another digest
    line = sc.recv(120)
    assert line["code"] == "startup_failed"
    assert "--model-sha256 requires" in line["message"]
    assert sc.proc.wait(30) == 1


def test_help_and_bad_flag():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "sidecar", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "--data-dir" in out.stdout and "MEMORY_SIDECAR_TTL_DAYS" in out.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "sidecar", "--ttl-days", "-3"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert bad.returncode == 2 and "--ttl-days" in bad.stderr and bad.stdout == ""


# A host that spawns the sidecar with our pipes as its stdio, says the sidecar's pid on stderr, then waits.
# The sidecar's stderr is a pipe only it holds once the host is dead: its end of file is the sidecar's exit,
# seen the same way on Linux, macOS and Windows (the Windows CI job runs these with the Windows watch).
HOST = (
    "import subprocess, sys, time\n"
    "p = subprocess.Popen([sys.executable, '-m', 'sidecar', *sys.argv[1:]], stdin=sys.stdin, stdout=sys.stdout,"
    " stderr=sys.stderr)\n"
    "print(f'sidecar pid {p.pid}', file=sys.stderr, flush=True)\n"
    "time.sleep(600)\n"
)
PARENT_GONE_WAIT = 10.0  # seconds: a hang detector (it watches every 0.25 s), not a bound on its speed


class HostedSidecar:
    """The sidecar as a grandchild: `host` is its parent, the pipes are ours and stay open."""

    def __init__(self, data_dir, *args: str):
        import threading

        self.host = subprocess.Popen(
            [sys.executable, "-c", HOST, "--data-dir", str(data_dir), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(ROOT),
        )
        self.err: list[bytes] = []
        self.stderr_closed_at: float | None = None
        self.pid: int | None = None

        def read_stderr():
            for line in self.host.stderr:
                if self.pid is None and line.startswith(b"sidecar pid "):
                    self.pid = int(line.split()[-1])
                self.err.append(line)
            self.stderr_closed_at = time.monotonic()

        self._reader = threading.Thread(target=read_stderr, daemon=True)
        self._reader.start()

    def stderr(self) -> bytes:
        return b"".join(self.err)

    def wait_stderr(self, needle: bytes, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.stderr():
            assert time.monotonic() < deadline and self.stderr_closed_at is None, f"no {needle!r}:\n{self.stderr()!r}"
            time.sleep(0.01)

    def kill_host_and_wait_for_the_exit(self) -> None:
        """Kill the host outright (SIGKILL; TerminateProcess on Windows); wait until the sidecar is gone."""
        self.wait_stderr(b"sidecar pid ")
        self.host.kill()
        self.host.wait(10)
        self._reader.join(PARENT_GONE_WAIT)
        if self.stderr_closed_at is None:
            os.kill(self.pid, getattr(signal, "SIGKILL", signal.SIGTERM))
            raise AssertionError(
                f"the sidecar was still running {PARENT_GONE_WAIT:.0f} s after its parent died:\n{self.stderr()!r}"
            )

    def close(self) -> None:
        self.host.stdin.close()


def test_exits_when_parent_dies_even_if_stdin_stays_open(tmp_path, spawn):
    """A dead parent does not always close the pipe: the sidecar watches its parent (its pid on POSIX, its
    process handle on Windows), leaves, and what it acknowledged is kept."""
    hosted = HostedSidecar(tmp_path / "d")
    try:
        assert json.loads(hosted.host.stdout.readline())["type"] == "ready"
        hosted.host.stdin.write(b'{"type":"store","user_id":"u","content":"said before the host died"}\r\n')
        hosted.host.stdin.flush()
        acked = json.loads(hosted.host.stdout.readline())
        assert acked["type"] == "ok", acked
        hosted.kill_host_and_wait_for_the_exit()
        assert b"parent process is gone, shutting down" in hosted.stderr()  # the watch, not the pipes, ended it
    finally:
        hosted.close()
    again = spawn(data_dir=tmp_path / "d")
    hits = again.request({"type": "query", "user_id": "u", "text": "host died", "limit": 5})["messages"]
    assert [m["id"] for m in hits] == [acked["id"]]
    assert again.shutdown() == 0


def test_exits_during_startup_when_parent_dies(tmp_path):
    """Loading takes seconds; a parent that dies meanwhile must not leave the sidecar running until
    `ready`: it leaves during start-up, without ever saying ready."""
    hosted = HostedSidecar(tmp_path / "d", "--log-level", "debug")
    try:
        hosted.wait_stderr(b"configuration:")  # the server is starting
        hosted.kill_host_and_wait_for_the_exit()
        assert hosted.host.stdout.read() == b"", "the sidecar finished starting up instead of leaving"
        assert b"parent process is gone during start-up" in hosted.stderr()
    finally:
        hosted.close()


def test_newer_schema_version_is_refused(spawn):
    import orjson

    sc = spawn()
    sc.store("u", "kept safe")
    assert sc.shutdown() == 0
    meta_path = sc.data_dir / "meta.json"
    meta = orjson.loads(meta_path.read_bytes())
    meta["schema_version"] = 99
    meta_path.write_bytes(orjson.dumps(meta))
    newer = spawn(wait_ready=False)
    line = newer.recv(120)
    assert line["code"] == "startup_failed" and "schema version 99" in line["message"]
    assert newer.proc.wait(30) == 1


def _fragments(data_dir) -> int:
    """Fragments in the table's latest version (what every query scans), read by a second reader."""
    import lancedb

    return lancedb.connect(str(data_dir / "lancedb")).open_table("messages").stats()["fragment_stats"]["num_fragments"]


def test_background_compaction_folds_single_writes(spawn):
    sc = spawn("--compact-every-writes", "10", "--compact-interval-seconds", "0")
    for i in range(45):
        sc.store(f"user{i % 5}", f"single write number {i}")
    deadline = time.time() + 30
    while time.time() < deadline and _fragments(sc.data_dir) > 10:
        time.sleep(0.2)
    assert _fragments(sc.data_dir) <= 10, "45 single-row commits should have been compacted"
    res = sc.request({"type": "query", "user_id": "user3", "text": "single write number 8", "limit": 20})
    assert len(res["messages"]) == 9 and {m["user_id"] for m in res["messages"]} == {"user3"}
    assert sc.shutdown() == 0


def test_pipelined_stores_are_group_committed_and_answered_in_order(spawn):
    sc = spawn("--compact-every-writes", "100000", "--compact-interval-seconds", "0", "--max-content-chars", "200")
    n = 120
    for i in range(n):
        content = "x" * 500 if i == 57 else f"pipelined note {i} about topic {i % 7}"
        sc.send({"type": "store", "user_id": f"p{i % 3}", "content": content, "request_id": i})
    sc.send(
        {"type": "query", "user_id": "p1", "text": "pipelined note 100 about topic 2", "limit": 1, "request_id": "q"}
    )
    got = [sc.recv() for _ in range(n + 1)]
    assert [r.get("request_id") for r in got] == [*range(n), "q"]
    assert got[57]["type"] == "error" and got[57]["code"] == "too_large"  # only that one failed
    ids = [r["id"] for i, r in enumerate(got[:n]) if i != 57]
    assert len(set(ids)) == n - 1 and all(r["type"] == "ok" for i, r in enumerate(got[:n]) if i != 57)
    assert got[n]["messages"][0]["id"] == got[100]["id"]  # a query queued behind the stores sees them
    assert sc.request({"type": "stats"})["memories"] == n - 1
    assert _fragments(sc.data_dir) < n // 2, "queued stores should share commits"
    sc.kill()  # every acknowledged store survives a SIGKILL
    sc2 = spawn()
    assert sc2.ready["memories"] == n - 1
    assert sc2.shutdown() == 0


def test_a_missing_dependency_is_one_clear_start_up_failure(tmp_path):
    """A dependency that cannot be imported (here the keyword stemmer's, shadowed by a package that refuses to
    import) while the model is loading beside the imports: one `startup_failed` line naming it, exit 1, nothing
    else on stdout, and the process exits cleanly rather than aborting mid model load (server.py settles it)."""
    shadow = tmp_path / "shadow" / "snowballstemmer"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('snowballstemmer is missing here')\n")
    env = {**os.environ, "PYTHONPATH": f"{shadow.parent}{os.pathsep}{ROOT}"}
    out = subprocess.run(
        [sys.executable, "-m", "sidecar", "--data-dir", str(tmp_path / "data")],
        input=b"",
        capture_output=True,
        timeout=120,
        env=env,
        cwd=str(tmp_path),
    )
    lines = out.stdout.decode().splitlines()
    assert out.returncode == 1, out.stderr.decode()[-2000:]
    assert len(lines) == 1 and json.loads(lines[0])["code"] == "startup_failed"
    assert "missing dependency" in lines[0] and "snowballstemmer" in lines[0]
    assert b"terminate called" not in out.stderr
