"""Speed and footprint the way hosts use the sidecar, each figure beside the model floor measured in the
same run (issue 21's table):

  floor      one short message embedded directly (no pipe, no store), median of 50
  ready      spawn -> `ready` of `python -m sidecar` on an empty data dir (median), and its RSS then
  (a)        right after a batch import (--import-rows over --import-users, batch `store`), with no
             idle time and no compaction: --rounds rounds of one `store` and one `query` per mode
  (b)        steady state: a store of --steady-rows over --steady-users (built directly with random
             unit vectors, as `ab` builds its store: no embedding), every user queried once, then
             --rounds rounds as in (a)
  cold/warm  the (b) store: a query for a user the cache evicted (read from the table) against one for a
             user queried just before; with a cache that holds every user there is no cold user, and
             the run says so (give --cold-cache-mb to make room smaller than the store)
  rss        each sidecar's peak RSS (VmHWM)

The graph is on (the default) everywhere: its background build after an import is part of real use.

    python scripts/bench.py realuse                       # 10k import, 100k over 1,000 users
    python scripts/bench.py realuse --steady-rows 1000000 --steady-users 10000 --cold-cache-mb 128
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from .ab import build
from .client import Sidecar, add_sidecar_arguments
from .core import median_wall
from .graph import floor_ms
from .output import log, print_table, write_json
from .timing import pct
from .workload import fill, make_message, make_question, query_every_user, user_id

SUMMARY = "latency and RSS in real use: after an import, steady state, cold users (vs the floor)"
MODES = ("default", "semantic", "keyword")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--import-rows", type=int, default=10_000, help="(a): memories batch-imported")
    parser.add_argument("--import-users", type=int, default=100, help="(a): users they are spread over")
    parser.add_argument("--steady-rows", type=int, default=100_000, help="(b): memories in the built store")
    parser.add_argument("--steady-users", type=int, default=1_000, help="(b): users they are spread over")
    parser.add_argument("--rounds", type=int, default=300, help="timed rounds (a store and a query per mode)")
    parser.add_argument("--cold-cache-mb", type=int, default=None,
                        help="cold/warm: run the (b) store again with this --cache-mb (default: the sidecar's)")
    parser.add_argument("--ready-runs", type=int, default=5, help="spawns timed (their median)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", default="bench-results/realuse.json", help="results file")
    add_sidecar_arguments(parser, timeout=600.0)


def rounds(sc: Sidecar, rng: random.Random, users: int, n: int) -> dict[str, Any]:
    """n rounds, one request at a time: a `store`, then a `query` in each mode, for random users."""
    times: dict[str, list[float]] = {"store": [], **{m: [] for m in MODES}}
    for _ in range(n):
        times["store"].append(sc.timed({"type": "store", "user_id": user_id(rng.randrange(users)),
                                        "content": make_message(rng, False)}, "ok")[1])
        for mode in MODES:
            req = {"type": "query", "user_id": user_id(rng.randrange(users)), "text": make_question(rng), "limit": 5}
            if mode != "default":
                req["mode"] = mode
            times[mode].append(sc.timed(req, "results")[1])
    return {kind: pct(t) for kind, t in times.items()}


def state_a(args: argparse.Namespace, tmp: Path, rng: random.Random) -> dict[str, Any]:
    with Sidecar(tmp / "a", python=args.python, stderr=tmp / "a.log", timeout=args.timeout) as sc:
        sc.wait_ready()
        log(f"(a) importing {args.import_rows} memories over {args.import_users} users")
        ingest = fill(sc, rng, args.import_rows, args.import_users, 1000, quiet=True)
        out = rounds(sc, rng, args.import_users, args.rounds)
        out["ingest_per_s"] = args.import_rows / ingest["seconds"]
        out["peak_rss_mb"] = sc.vm_status().get("VmHWM", 0) / 1024
        sc.shutdown()
    return out


def state_b(args: argparse.Namespace, tmp: Path, rng: random.Random) -> dict[str, Any]:
    data = tmp / "b"
    log(f"(b) building {args.steady_rows} memories over {args.steady_users} users (random vectors)")
    build(data, args.steady_rows, args.steady_users, args.seed)
    with Sidecar(data, python=args.python, stderr=tmp / "b.log", timeout=args.timeout) as sc:
        sc.wait_ready()
        query_every_user(sc, args.steady_users, rng)
        out = rounds(sc, rng, args.steady_users, args.rounds)
        out["peak_rss_mb"] = sc.vm_status().get("VmHWM", 0) / 1024
        out["cache"] = sc.request({"type": "stats"}, "stats").get("cache")
        sc.shutdown()
    flags = ["--cache-mb", str(args.cold_cache_mb)] if args.cold_cache_mb is not None else []
    with Sidecar(data, flags, python=args.python, stderr=tmp / "cold.log", timeout=args.timeout) as sc:
        sc.wait_ready()
        query_every_user(sc, args.steady_users, rng)  # in order: the first users are the least recently used
        cached = sc.request({"type": "stats"}, "stats")["cache"]["users"]
        out["cold"] = None
        if cached < args.steady_users:
            n = min(args.rounds, args.steady_users - cached)
            cold, warm = [], []
            for i in range(n):  # each cold query evicts the next least recently used user, never a warm one
                q = {"type": "query", "user_id": user_id(i), "text": make_question(rng), "limit": 5}
                cold.append(sc.timed(q, "results")[1])
                w = {**q, "user_id": user_id(args.steady_users - 1 - i % max(1, cached // 4))}
                warm.append(sc.timed(w, "results")[1])
            out["cold"] = {"cold": pct(cold), "warm": pct(warm), "cached_users": cached}
        sc.shutdown()
    return out


def ready(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    out = median_wall([args.python, "-m", "sidecar"], args.ready_runs, True, tmp)
    with Sidecar(tmp / "ready-rss", python=args.python, stderr=tmp / "ready.log", timeout=args.timeout) as sc:
        sc.wait_ready()
        out["rss_mb"] = sc.vm_status().get("VmRSS", 0) / 1024
        sc.shutdown()
    return out


def ratio_row(label: str, p: dict[str, float], floor: float, p50_max: float, p99_max: float) -> dict[str, str]:
    ok = p["p50_ms"] <= p50_max * floor and p["p99_ms"] <= p99_max * floor
    return {"measurement": label, "p50 / p99 ms": f"{p['p50_ms']:.1f} / {p['p99_ms']:.1f}",
            "x floor": f"{p['p50_ms'] / floor:.1f}x / {p['p99_ms'] / floor:.1f}x",
            "target": f"<= {p50_max}x / {p99_max}x", "": "ok" if ok else "MISSED"}


def report(r: dict[str, Any]) -> list[dict[str, str]]:
    floor = r["floor_ms"]
    rows = [{"measurement": "floor: one short message", "p50 / p99 ms": f"{floor:.2f}", "x floor": "1x",
             "target": "", "": ""}]
    for state in ("a", "b"):
        s = r[state]
        for kind in ("store", *MODES):
            limits = (2.0, 6.0) if kind == "store" else (1.5, 4.0)
            rows.append(ratio_row(f"({state}) {kind}", s[kind], floor, *limits))
        rows.append({"measurement": f"({state}) peak RSS", "p50 / p99 ms": f"{s['peak_rss_mb']:.0f} MB",
                     "x floor": "", "target": "<= 250 MB at 100k", "": ""})
    cold = r["b"]["cold"]
    if cold:
        ratio = cold["cold"]["p50_ms"] / cold["warm"]["p50_ms"]
        rows.append({"measurement": f"cold vs warm query ({cold['cached_users']} users cached)",
                     "p50 / p99 ms": f"{cold['cold']['p50_ms']:.1f} vs {cold['warm']['p50_ms']:.1f}",
                     "x floor": f"{ratio:.1f}x warm", "target": "<= 2x warm", "": "ok" if ratio <= 2 else "MISSED"})
    else:
        rows.append({"measurement": "cold vs warm", "p50 / p99 ms": "every user fits the cache: no cold user",
                     "x floor": "", "target": "", "": ""})
    rows.append({"measurement": "ready: python -m sidecar (median), RSS at ready",
                 "p50 / p99 ms": f"{r['ready']['median_ms']:.0f} ms, {r['ready']['rss_mb']:.0f} MB",
                 "x floor": "", "target": "<= 1000 ms, <= 150 MB",
                 "": "ok" if r["ready"]["median_ms"] <= 1000 and r["ready"]["rss_mb"] <= 150 else "MISSED"})
    rows.append({"measurement": "(a) batch ingest", "p50 / p99 ms": f"{r['a']['ingest_per_s']:.0f} msg/s",
                 "x floor": "", "target": "", "": ""})
    return rows


def run(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-realuse-") as tmp_name:
        tmp = Path(tmp_name)
        results = {"floor_ms": floor_ms(), "ready": ready(args, tmp)}
        results["a"] = state_a(args, tmp, rng)
        results["b"] = state_b(args, tmp, rng)
        results["floor_ms_after"] = floor_ms()  # before and after: the machine may have got busier meanwhile
    results["floor_ms"] = statistics.median([results["floor_ms"], results.pop("floor_ms_after")])
    print_table(report(results), title=f"Real use (seed {args.seed}, {time.strftime('%Y-%m-%d')})")
    write_json(args.json, results)
    return 0
