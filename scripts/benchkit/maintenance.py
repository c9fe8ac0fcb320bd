"""Request latency while background maintenance runs: one host sends store and query requests one at
a time (waiting for each answer) for --seconds, under three configurations:

  none     no expiry, default compaction schedule (the baseline)
  compact  a background compaction after every write (--compact-every-writes 1)
  expire   automatic expiry every ~1.8 s, with 20 expired rows to delete each time
  restart  a restart after a long pause: --expired memories over 100 other users, stored earlier, are
           past their time; the expiry at start deletes them all while the requests are timed

and prints median / p99 / max latency per request type. Maintenance blocks a request when its max
is far above the baseline's.

    python scripts/bench.py maintenance --seconds 20
    python scripts/bench.py maintenance --configs none,expire --prefill 20000   # a bigger table
    python scripts/bench.py maintenance --configs none,restart --expired 20000
"""

from __future__ import annotations

import argparse
import tempfile
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
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of requests per configuration")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated configurations to run")
    parser.add_argument("--prefill", type=int, default=0, help="memories stored before timing starts")
    parser.add_argument(
        "--expired",
        type=int,
        default=20_000,
        help="restart: memories ten days old, stored before the restart (expiry off)",
    )


def store_bulk(sc: Sidecar, n: int, user: str, content: str, timestamp: float | None = None) -> None:
    """n memories over 100 users (user-0 .. user-99), 1,000 per request."""
    for start in range(0, n, 1000):
        sc.request(
            {
                "type": "store",
                "messages": [
                    {
                        "user_id": f"{user}-{k % 100}",
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


def run(args: argparse.Namespace) -> int:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-maint-") as tmp:
        for name in args.configs.split(","):
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
    print_table(rows)
    return 0
