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
