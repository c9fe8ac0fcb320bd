"""`query` latency over the real pipe for every search mode, at a given size.

    python scripts/bench.py query-modes                  # 100,000 memories over 100 users
    python scripts/bench.py query-modes --rows 10000 --requests 200

Fills a fresh data dir with generated chat messages (batch `store`, as `core` does), compacts (a
`cleanup`, which also folds the new rows into the full-text indexes), queries every user once, then
times `--requests` sequential queries per mode (random user, generated question, limit 5, modes
interleaved so load from other processes hits them alike), and `--requests` single stores, then a
third as many queries per mode again with those stores not yet compacted (flat-searched).
Prints p50/p95/p99 per mode. CPU is shared on the project VM: quote medians of several runs.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from .client import Sidecar, add_sidecar_arguments
from .output import latency_row, log, print_table
from .timing import pct
from .workload import fill, make_message, make_question, query_every_user, user_id

SUMMARY = "query latency per search mode, and single stores"
MODES = ("semantic", "keyword", "hybrid")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=100_000, help="memories stored before timing")
    parser.add_argument("--users", type=int, default=100, help="users the memories are spread over")
    parser.add_argument("--requests", type=int, default=300, help="timed queries per mode (and stores)")
    parser.add_argument("--batch", type=int, default=1000, help="messages per batch store while filling")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated messages and questions")
    add_sidecar_arguments(parser, timeout=600.0)
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--data-dir", type=Path, help="keep the filled data dir here; reused (no fill) when it exists")


def query_rounds(sc: Sidecar, rounds: int, users: int, rng: random.Random) -> dict[str, list[float]]:
    """`rounds` times one question for a random user, asked in every mode in turn: the seconds of each."""
    times: dict[str, list[float]] = {m: [] for m in MODES}
    for _ in range(rounds):
        uid, text = user_id(rng.randrange(users)), make_question(rng)
        for mode in MODES:
            times[mode].append(
                sc.timed({"type": "query", "user_id": uid, "text": text, "limit": 5, "mode": mode}, "results")[1]
            )
    return times


def run(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-modes-") as tmp:
        data = args.data_dir or Path(tmp) / "data"
        reuse = (data / "meta.json").exists()
        with Sidecar(data, python=args.python, stderr=Path(tmp) / "sidecar.log", timeout=args.timeout) as sc:
            _, ready = sc.wait_ready()
            if reuse:
                log(f"reusing {data} ({ready['memories']} memories)")
            else:
                f = fill(sc, rng, args.rows, args.users, args.batch, args.quiet)
                log(f"filled {args.rows} in {f['seconds']:.0f} s")
            sc.compact()  # rows folded into the indexes
            query_every_user(sc, args.users, rng)
            times = query_rounds(sc, args.requests, args.users, rng)
            store_t = [
                sc.timed(
                    {
                        "type": "store",
                        "user_id": user_id(rng.randrange(args.users)),
                        "content": make_message(rng, False),
                    },
                    "ok",
                )[1]
                for _ in range(args.requests)
            ]
            # the same queries again with those rows not yet in the full-text index (flat-searched)
            fresh = query_rounds(sc, args.requests // 3, args.users, rng)
            sc.shutdown()
    rows = [latency_row(f"query mode={mode}", pct(times[mode])) for mode in MODES]
    rows.append(latency_row("store (single)", pct(store_t)))
    rows += [
        latency_row(f"query mode={mode}, {args.requests} rows not yet compacted", pct(fresh[mode])) for mode in MODES
    ]
    print_table(rows, title=f"query latency over the pipe, {args.rows} memories over {args.users} users, limit 5")
    return 0
