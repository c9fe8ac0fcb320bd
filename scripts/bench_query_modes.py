"""`query` latency over the real pipe for every search mode, at a given size.

    python scripts/bench_query_modes.py                  # 100,000 memories over 100 users
    python scripts/bench_query_modes.py --rows 10000 --requests 200

Fills a fresh data dir with generated chat messages (batch `store`, as scripts/bench.py does),
compacts (a `cleanup`, which also folds the new rows into the full-text indexes), queries every user
once, then times `--requests` sequential queries per mode (random user, generated question, limit 5,
modes interleaved so load from other processes hits them alike), and `--requests` single stores.
Prints p50/p95/p99 per mode. CPU is shared on the project VM: quote medians of several runs.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import Sidecar, fill, make_message, make_question, pct, user_id  # noqa: E402

MODES = ("semantic", "keyword", "hybrid")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--requests", type=int, default=300, help="timed queries per mode (and stores)")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--data-dir", type=Path, help="keep the filled data dir here; reused (no fill) when it exists")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-modes-") as tmp:
        data = args.data_dir or Path(tmp) / "data"
        reuse = (data / "meta.json").exists()
        sc = Sidecar(args.python, data, Path(tmp) / "sidecar.log", args.timeout, [])
        try:
            _, ready = sc.wait_ready()
            if reuse:
                print(f"reusing {data} ({ready['memories']} memories)", file=sys.stderr, flush=True)
            else:
                f = fill(sc, args, rng)
                print(f"filled {args.rows} in {f['seconds']:.0f} s", file=sys.stderr, flush=True)
            sc.request({"type": "cleanup", "ttl_days": 36500}, "ok")  # compacts: rows folded into the indexes
            for u in range(args.users):
                sc.request({"type": "query", "user_id": user_id(u), "text": make_question(rng), "limit": 5}, "results")
            times: dict[str, list[float]] = {m: [] for m in MODES}
            for _ in range(args.requests):
                uid, text = user_id(rng.randrange(args.users)), make_question(rng)
                for mode in MODES:
                    t0 = time.perf_counter()
                    sc.request({"type": "query", "user_id": uid, "text": text, "limit": 5, "mode": mode}, "results")
                    times[mode].append(time.perf_counter() - t0)
            store_t = []
            for _ in range(args.requests):
                t0 = time.perf_counter()
                sc.request({"type": "store", "user_id": user_id(rng.randrange(args.users)),
                            "content": make_message(rng, False)}, "ok")
                store_t.append(time.perf_counter() - t0)
            # the same queries again with those rows not yet in the full-text index (flat-searched)
            fresh: dict[str, list[float]] = {m: [] for m in MODES}
            for _ in range(args.requests // 3):
                uid, text = user_id(rng.randrange(args.users)), make_question(rng)
                for mode in MODES:
                    t0 = time.perf_counter()
                    sc.request({"type": "query", "user_id": uid, "text": text, "limit": 5, "mode": mode}, "results")
                    fresh[mode].append(time.perf_counter() - t0)
            sc.shutdown()
        except BaseException:
            sc.kill()
            raise
    print(f"query latency over the pipe, {args.rows} memories over {args.users} users, limit 5")
    print("| request | n | p50 ms | p95 ms | p99 ms |\n|---|---|---|---|---|")
    for mode in MODES:
        p = pct(times[mode])
        print(f"| query mode={mode} | {p['n']} | {p['p50_ms']:.1f} | {p['p95_ms']:.1f} | {p['p99_ms']:.1f} |")
    p = pct(store_t)
    print(f"| store (single) | {p['n']} | {p['p50_ms']:.1f} | {p['p95_ms']:.1f} | {p['p99_ms']:.1f} |")
    for mode in MODES:
        p = pct(fresh[mode])
        print(f"| query mode={mode}, {args.requests} rows not yet compacted | {p['n']} | {p['p50_ms']:.1f} | "
              f"{p['p95_ms']:.1f} | {p['p99_ms']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
