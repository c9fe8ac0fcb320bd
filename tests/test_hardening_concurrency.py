"""Concurrency: 10,000 pipelined requests answered in order; a second sidecar refused while the first
is busy; background expiry and compaction running under a request stream lose nothing and block no
request for long (measured and printed)."""

from __future__ import annotations

import statistics
import threading
import time

import orjson

DAY = 86_400


def test_ten_thousand_pipelined_requests_answered_in_order(sidecar):
    cheap = [
        {"type": "ping"},
        {"type": "memory_instructions"},
        {"type": "sync", "timeout": 1},
        {"type": "no_such_command"},
        {"type": "query", "user_id": "p", "text": ""},
    ]
    requests = []
    for i in range(10_000):
        if i % 50 == 0:
            req = {"type": "store", "user_id": "p", "content": f"pipelined memory {i}"}
        elif i % 100 == 25:
            req = {"type": "query", "user_id": "p", "text": f"pipelined memory {i - 25}", "limit": 1}
        else:
            req = dict(cheap[i % len(cheap)])
        req["request_id"] = i
        requests.append(req)
    stream = b"".join(orjson.dumps(r) + b"\n" for r in requests)
    t0 = time.perf_counter()
    writer = threading.Thread(target=sidecar.send_raw, args=(stream,))
    writer.start()  # the whole stream at once, without waiting for any answer
    answers = [sidecar.recv() for _ in requests]
    elapsed = time.perf_counter() - t0
    writer.join()
    assert [a.get("request_id") for a in answers] == list(range(10_000))
    expected = {
        "store": "ok",
        "query": "results",
        "ping": "pong",
        "memory_instructions": "instructions",
        "sync": "synced",
        "no_such_command": "error",
    }
    for req, ans in zip(requests, answers):
        if req["type"] == "query" and req["text"] == "":
            assert ans["code"] == "invalid_request", ans
        else:
            assert ans["type"] == expected[req["type"]], (req, ans)
        if req["type"] == "query" and req["text"]:
            # the store 25 requests earlier is visible to the query (answers follow request order)
            assert [m["content"] for m in ans["messages"]] == [req["text"]], (req, ans)
    print(f"10,000 pipelined requests (200 stores, 100 queries) answered in order in {elapsed:.1f} s")
    assert sidecar.request({"type": "stats"})["memories"] == 200


def test_second_sidecar_refused_while_the_first_is_busy(sidecar, spawn):
    stream = b"".join(
        orjson.dumps({"type": "store", "user_id": "b", "content": f"busy {i}", "request_id": i}) + b"\n"
        for i in range(300)
    )
    writer = threading.Thread(target=sidecar.send_raw, args=(stream,))
    writer.start()
    second = spawn(data_dir=sidecar.data_dir, wait_ready=False)
    r = second.recv()
    assert r["code"] == "startup_failed" and "in use" in r["message"], r
    assert second.proc.wait(30) == 1
    answers = [sidecar.recv() for _ in range(300)]
    writer.join()
    assert [a["type"] for a in answers] == ["ok"] * 300
    assert sidecar.request({"type": "stats"})["memories"] == 300


def test_background_expiry_and_compaction_under_a_request_stream(spawn):
    # expiry every ~1.8 s (with old rows to delete each time) and a compaction after every write,
    # while a host sends requests one at a time and times each of them
    sc = spawn(
        "--ttl-days",
        "1",
        "--cleanup-interval-hours",
        "0.0005",
        "--compact-every-writes",
        "1",
        "--compact-interval-seconds",
        "0",
        "--compact-max-duty",
        "1",
        "--max-window",
        "100000",
    )
    old_ts = time.time() - 10 * DAY
    kept: list[str] = []
    lat: dict[str, list[float]] = {"store": [], "query": []}
    end = time.monotonic() + 20
    i = 0
    while time.monotonic() < end:
        if i % 40 == 0:  # rows for the next expiry round to delete
            r = sc.request(
                {
                    "type": "store",
                    "messages": [{"user_id": "old", "content": f"old {i} {k}", "timestamp": old_ts} for k in range(20)],
                }
            )
            assert r["type"] == "ok", r
        kind = ("store", "query")[i % 2]
        if kind == "store":
            req = {"type": "store", "user_id": "live", "content": f"live memory {i}"}
        else:
            req = {"type": "query", "user_id": "live", "text": "live memory", "limit": 3}
        t0 = time.perf_counter()
        r = sc.request(req)
        lat[kind].append(time.perf_counter() - t0)
        assert r["type"] in ("ok", "results"), r
        if kind == "store":
            kept.append(req["content"])
        i += 1
    stats = sc.request({"type": "stats"})
    assert stats["memories"] >= len(kept)
    hist = sc.request({"type": "history", "user_id": "live", "full_count": 100000, "mid_count": 0, "short_count": 0})
    on_disk = {line.split(": ", 1)[1] for line in hist["block"].splitlines()[1:]}
    assert set(kept) <= on_disk, set(kept) - on_disk
    old_left = sc.request(
        {"type": "history", "user_id": "old", "full_count": 100000, "mid_count": 0, "short_count": 0}
    )["messages"]
    # expiry did run, several times, during the stream
    assert old_left < 20 * (i // 40 + 1) // 2, (old_left, i, sc.stderr()[-4000:])
    report = {
        k: (
            round(statistics.median(v) * 1000, 1),
            round(sorted(v)[int(0.99 * len(v))] * 1000, 1),
            round(max(v) * 1000, 1),
            len(v),
        )
        for k, v in lat.items()
    }
    print(f"latency under expiry + compaction (median, p99, max ms; n): {report}")
    # The target is 100 ms. Expiry used to compact exclusively and every background compaction held
    # the lock over the three fact tables: stores then waited up to 1.3 s here. The bound is
    # generous because the test machine is shared; `python scripts/bench.py maintenance` compares it with a
    # run without maintenance.
    assert max(lat["store"] + lat["query"]) < 1.0, report


def _graph_settled(sc, timeout: float = 300.0) -> dict:
    deadline = time.monotonic() + timeout
    while (graph := sc.request({"type": "health"})["graph"])["pending"]:
        assert time.monotonic() < deadline, f"the graph still has {graph['pending']} messages to build"
        time.sleep(0.2)
    return graph


def test_a_cleanup_over_many_users_is_answered_while_another_users_graph_backlog_still_builds(spawn):
    """Issue 64: a `cleanup` of about 3,600 memories over 1,000 users held every request in the pipe for 46-73 s
    in a soak: the graph read each user's graph and each user's trace messages one user at a time, and the
    delete waited for every message queued to the graph builder before it (another user's long messages too).
    Now its answer comes while the other user's backlog, queued before it, is still pending; afterwards the
    expired memories are gone from every answer and the graph, and every other memory is there."""
    sc = spawn("--ttl-days", "0")
    old, users = time.time() - 10 * DAY, 300
    for ts, what in ((old, "I went to Lisbon with Bob, an old memory"), (None, "I went to Berlin with my sister")):
        for start in range(0, 2 * users if ts else users, 300):
            msgs = [
                {"user_id": f"u{k % users}", "content": f"{what} {k}", **({"timestamp": ts} if ts else {})}
                for k in range(start, start + 300)
            ]
            assert sc.request({"type": "store", "messages": msgs})["type"] == "ok"
    sc.store("live", "I moved to Porto last spring")
    _graph_settled(sc)
    assert sc.request({"type": "consolidate"}, timeout=300)["type"] == "consolidated"  # traces the delete redoes
    episodes = sc.request({"type": "health"})["graph"]["episodes"]
    talk = (" and I live in Berlin" * 1600)[:32_000]
    lines = [{"type": "store", "user_id": "talker", "content": talk, "request_id": f"t{k}"} for k in range(16)]
    lines += [
        {"type": "cleanup", "ttl_days": 1, "request_id": "cleanup"},
        {"type": "health", "request_id": "health"},
        {"type": "query", "user_id": "live", "text": "Porto", "limit": 3, "request_id": "query"},
    ]
    sc.send_raw(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    answers = [sc.recv(timeout=300) for _ in lines]
    assert [a.get("request_id") for a in answers] == [line["request_id"] for line in lines]
    assert all(a["type"] == "ok" for a in answers[:16])
    assert answers[16]["deleted"] == 2 * users
    assert answers[17]["graph"]["pending"] >= 1  # the talker's messages, stored before it: not waited for
    assert [m["content"] for m in answers[18]["messages"]] == ["I moved to Porto last spring"]
    graph = _graph_settled(sc)
    assert graph["episodes"] == episodes - 2 * users + 16
    assert sc.request({"type": "stats"})["memories"] == users + 1 + 16
    for k in (0, 150, users - 1):
        got = sc.request({"type": "query", "user_id": f"u{k}", "text": "Lisbon Bob", "limit": 10})["messages"]
        assert [m["content"] for m in got] == [f"I went to Berlin with my sister {k}"]
    assert sc.shutdown(timeout=30) == 0
