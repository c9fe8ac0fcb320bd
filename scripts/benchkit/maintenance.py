"""Request latency while background maintenance runs: one host sends store and query requests one at
a time (waiting for each answer) for --seconds, under three configurations:

  none     no expiry, default compaction schedule (the baseline)
  compact  a background compaction after every write (--compact-every-writes 1)
  expire   automatic expiry every ~1.8 s, with 20 expired rows to delete each time
  restart  a restart after a long pause: --expired memories over 100 other users, stored earlier, are
           past their time; the expiry at start deletes them all while the requests are timed
  cleanup  a `cleanup` request: --expired memories ten days old over --users users (their graph built and
           consolidated) beside --prefill recent ones; the cleanup is sent, and another user's `query` every
           100 ms behind it without waiting (answers come in order: each waits for the cleanup's answer).
           Per --rounds round: the cleanup's seconds and the longest and median wait of those queries

and prints median / p99 / max latency per request type. Maintenance blocks a request when its max
is far above the baseline's.

    python scripts/bench.py maintenance --seconds 20
    python scripts/bench.py maintenance --configs none,expire --prefill 20000   # a bigger table
    python scripts/bench.py maintenance --configs none,restart --expired 20000
    python scripts/bench.py maintenance --configs cleanup --expired 3600 --users 1000 --prefill 14000
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

from . import ROOT
from .client import Sidecar
from .output import log, print_table
from .timing import pct

SUMMARY = "latency while compaction or expiry runs"
DAY = 86_400
CONFIGS = {
    "none": ["--ttl-days", "0"],
    "compact": [
        "--ttl-days",
        "0",
        "--compact-every-writes",
        "1",
        "--compact-interval-seconds",
        "0",
        "--compact-max-duty",
        "1",
    ],
    "expire": ["--ttl-days", "1", "--cleanup-interval-hours", "0.0005"],
    "restart": ["--ttl-days", "1"],
    "cleanup": ["--ttl-days", "0"],
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of requests per configuration")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated configurations to run")
    parser.add_argument("--prefill", type=int, default=0, help="memories stored before timing starts")
    parser.add_argument(
        "--expired",
        type=int,
        default=20_000,
        help="restart, cleanup: memories ten days old, stored before the restart or the cleanup (expiry off)",
    )
    parser.add_argument("--users", type=int, default=100, help="cleanup: users the expired memories belong to")
    parser.add_argument("--rounds", type=int, default=3, help="cleanup: cleanups timed (the expired stored again)")


def store_bulk(sc: Sidecar, n: int, user: str, content: str, timestamp: float | None = None, users: int = 100) -> None:
    """n memories over `users` users (user-0 .. user-99 by default), 1,000 per request."""
    for start in range(0, n, 1000):
        sc.request(
            {
                "type": "store",
                "messages": [
                    {
                        "user_id": f"{user}-{k % users}",
                        "content": f"{content} {k}",
                        **({"timestamp": timestamp} if timestamp is not None else {}),
                    }
                    for k in range(start, min(n, start + 1000))
                ],
            },
            "ok",
        )


def measure(name: str, flags: list[str], seconds: float, tmp: Path, prefill: int = 0, expired: int = 0) -> list[dict]:
    """One configuration: a table row per request type (n, median, p99 and max in ms)."""
    old_ts = time.time() - 10 * DAY
    if name == "restart":
        with Sidecar(
            tmp / name, ["--ttl-days", "0"], expiry_off=False, stderr=tmp / f"{name}.log", cwd=ROOT, clean_env=True
        ) as sc:
            sc.wait_ready()
            store_bulk(sc, expired, "gone", "an old memory", old_ts)
            sc.finish(120)
    with Sidecar(tmp / name, flags, expiry_off=False, stderr=tmp / f"{name}.log", cwd=ROOT, clean_env=True) as sc:
        sc.wait_ready()
        store_bulk(sc, prefill, "bulk", "bulk memory")  # other users' recent memories: a bigger table to compact
        lat: dict[str, list[float]] = {"store": [], "query": []}
        end = time.monotonic() + seconds
        i = 0
        while time.monotonic() < end:
            if i % 40 == 0 and name != "restart":
                sc.request(
                    {
                        "type": "store",
                        "messages": [
                            {"user_id": "old", "content": f"old {i} {k}", "timestamp": old_ts} for k in range(20)
                        ],
                    },
                    "ok",
                )
            if i % 2 == 0:
                lat["store"].append(
                    sc.timed({"type": "store", "user_id": "live", "content": f"live memory {i}"}, "ok")[1]
                )
            else:
                lat["query"].append(
                    sc.timed({"type": "query", "user_id": "live", "text": "live memory", "limit": 3}, "results")[1]
                )
            i += 1
        sc.finish(60)
    rows = []
    for kind, values in lat.items():
        p = pct(values)
        rows.append(
            {
                "config": name,
                "request": kind,
                "n": p["n"],
                "median ms": p["p50_ms"],
                "p99 ms": pct(values, "rank")["p99_ms"],
                "max ms": p["max_ms"],
            }
        )
    return rows


def graph_settled(sc: Sidecar, timeout: float = 900.0) -> None:
    """Wait until the graph has built every stored message (`health`'s graph.pending 0), then consolidate."""
    deadline = time.monotonic() + timeout
    while sc.request({"type": "health"}, "health")["graph"]["pending"]:
        if time.monotonic() > deadline:
            raise sc.fail(f"the graph did not build the stored messages within {timeout:g} s")
        time.sleep(1.0)
    sc.request({"type": "consolidate"}, "consolidated")


def queries(sc: Sidecar, sent: list[float], stop: threading.Event) -> None:
    """Another user's queries, every 100 ms, not waiting for their answers (each one's time sent into `sent`)."""
    k = 0
    while not stop.is_set():
        sent.append(time.perf_counter())
        sc.send({"type": "query", "user_id": "live", "text": "Berlin", "limit": 3, "request_id": k})
        k += 1
        stop.wait(0.1)


def cleanup_rounds(args: argparse.Namespace, tmp: Path) -> list[dict]:
    """The `cleanup` configuration: per round, the cleanup's seconds and the waits of the queries behind it."""
    old_ts = time.time() - 10 * DAY
    rows = []
    with Sidecar(
        tmp / "cleanup", CONFIGS["cleanup"], expiry_off=False, stderr=tmp / "cleanup.log", cwd=ROOT, clean_env=True
    ) as sc:
        sc.wait_ready()
        sc.request({"type": "store", "user_id": "live", "content": "I moved to Berlin last year"}, "ok")
        store_bulk(sc, args.prefill, "bulk", "I went to Berlin with my sister, a recent memory", users=args.users)
        for r in range(args.rounds):
            store_bulk(sc, args.expired, "gone", "I went to Lisbon with Bob, an old memory", old_ts, args.users)
            graph_settled(sc)
            sent: list[float] = []
            stop = threading.Event()

            t0 = time.perf_counter()
            sc.send({"type": "cleanup", "ttl_days": 1, "request_id": "cleanup"})
            sender = threading.Thread(target=queries, args=(sc, sent, stop))
            sender.start()
            answer = sc.check(sc.read(), "cleanup", "ok")
            took = time.perf_counter() - t0
            during = [at for at in sent if at < t0 + took]  # the queries sent while it ran: answered after it
            waits = []
            for at in during:
                sc.check(sc.read(), "query", "results")
                waits.append(time.perf_counter() - at)
            stop.set()
            sender.join()
            for _ in range(len(sent) - len(during)):
                sc.check(sc.read(), "query", "results")
            if answer.get("deleted") != args.expired:
                raise sc.fail(f"round {r}: the cleanup deleted {answer.get('deleted')}, not {args.expired}")
            rows.append(
                {
                    "config": "cleanup",
                    "round": r + 1,
                    "deleted": answer["deleted"],
                    "cleanup s": round(took, 2),
                    "queries behind it": len(waits),
                    "longest wait s": round(max(waits, default=0.0), 2),
                    "median wait s": round(statistics.median(waits), 2) if waits else 0.0,
                }
            )
            log(f"cleanup round {r + 1}: {rows[-1]}")
        sc.finish(120)
    return rows


def run(args: argparse.Namespace) -> int:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-maint-") as tmp:
        for name in args.configs.split(","):
            if name == "cleanup":
                print_table(cleanup_rounds(args, Path(tmp)))
                continue
            got = measure(name, CONFIGS[name], args.seconds, Path(tmp), args.prefill, args.expired)
            log(
                f"{name}: "
                + ", ".join(
                    f"{r['request']} median {r['median ms']:.1f} p99 {r['p99 ms']:.1f} "
                    f"max {r['max ms']:.1f} ms (n={r['n']})"
                    for r in got
                )
            )
            rows += got
    if rows:
        print_table(rows)
    return 0
