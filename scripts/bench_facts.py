#!/usr/bin/env python3
"""Facts benchmark over the real pipe (no LLM): latency of remember, extract_inline, facts, recall and
context (xml and markdown) on a store of --users x --facts-per-user facts.

Usage: python scripts/bench_facts.py [--users 20] [--facts-per-user 25] [--requests 100] [--json out.json]
Reuses the process wrapper of scripts/bench_core.py. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import FOODS, HOBBIES, PLACES, THINGS, Sidecar, pct  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = [
    ("preference", "Likes {food}"), ("preference", "Enjoys {hobby} on weekends"),
    ("company", "Works at {place} Labs as a {thing} designer"), ("pattern", "Goes {hobby} every {n} days"),
    ("answer", "Their budget for a new {thing} is {n}00 euros"), ("answer", "Wants to move to {place}"),
]


def fact(rng: random.Random) -> tuple[str, str]:
    cat, t = rng.choice(TEMPLATES)
    return cat, t.format(food=rng.choice(FOODS), hobby=rng.choice(HOBBIES), place=rng.choice(PLACES),
                         thing=rng.choice(THINGS), n=rng.randint(2, 97))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--facts-per-user", type=int, default=25)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rng = random.Random(7)
    timings: dict[str, list[float]] = {}
    actions: dict[str, int] = {}

    def timed(name: str, req: dict, expect: str) -> dict:
        t0 = time.perf_counter()
        r = sc.request(req, expect)
        timings.setdefault(name, []).append(time.perf_counter() - t0)
        return r

    with tempfile.TemporaryDirectory(prefix="bench-facts-") as tmp:
        sc = Sidecar(sys.executable, Path(tmp) / "data", Path(tmp) / "stderr.log", 120.0, [])
        sc.wait_ready()
        for i in range(args.users * args.facts_per_user):
            cat, text = fact(rng)
            r = timed("remember", {"type": "remember", "user_id": f"u{i % args.users}", "text": text,
                                   "category": cat}, "remembered")
            actions[r["action"]] = actions.get(r["action"], 0) + 1
        sc.request({"type": "cleanup", "ttl_days": 36500}, "ok")  # compacts every table
        for _ in range(args.requests):
            u = f"u{rng.randrange(args.users)}"
            v = f"u{rng.randrange(args.users)}"
            q = f"any tips about {rng.choice(HOBBIES)} or a {rng.choice(THINGS)}?"
            cat, text = fact(rng)
            timed("extract_inline (1 tag)", {"type": "extract_inline", "user_id": u,
                                             "reply": f'Sure! <memory category="{cat}">{text}</memory> Here goes.'},
                  "extracted")
            timed("facts (by text, limit 10)", {"type": "facts", "user_id": u, "text": q, "limit": 10}, "facts")
            timed("recall (3 users, limit 5)", {"type": "recall", "users": {u: None, v: None, "u0": None},
                                               "text": q}, "recall")
            timed("context xml (2 users)", {"type": "context", "format": "xml", "users": {u: "A", v: "B"},
                                           "text": q}, "context")
            timed("context markdown (1 user)", {"type": "context", "format": "markdown", "user_id": u, "text": q},
                  "context")
        stats = sc.request({"type": "stats"}, "stats")
        sc.shutdown()
    rows = {name: pct(v) for name, v in timings.items()}
    print(f"{args.users} users x {args.facts_per_user} facts remembered (outcomes: {actions}); "
          f"{stats['facts']} active facts; {args.requests} requests of each kind, sequential\n")
    print("| request | n | p50 ms | p95 ms | p99 ms |")
    print("|---|---|---|---|---|")
    for name, p in rows.items():
        print(f"| {name} | {p['n']} | {p['p50_ms']:.1f} | {p['p95_ms']:.1f} | {p['p99_ms']:.1f} |")
    if args.json:
        args.json.write_text(json.dumps({"timings": rows, "actions": actions, "facts": stats["facts"]}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
