"""Facts over the real pipe (no LLM): latency of remember, extract_inline, facts, recall and context
(xml and markdown) on a store of --users x --facts-per-user facts.

One fresh sidecar remembers users x facts-per-user generated facts (seed 7; every `remember` timed,
its outcome counted), stores --messages-per-user generated chat messages per user (some state where they
live and work, so the graph holds current relations, and `context` has memories to find), compacts (a
`cleanup`), then sends each of the other requests --requests times, one at a time, for random users.
`context` is timed as sent by default (facts, what is true now, relevant memories) and with
`"include":["facts"]` (facts only). --tree runs another source tree's sidecar, to compare. Prints a table
(p50 / p95 / p99 in ms) and, with --json, writes it.
Example: python scripts/bench.py facts --users 20 --facts-per-user 25 --requests 100
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from .client import Sidecar
from .output import latency_row, print_table, write_json
from .timing import pct
from .validity import CITIES, COMPANIES
from .workload import FOODS, HOBBIES, PLACES, THINGS, make_message

SUMMARY = "latency of remember, extract_inline, facts, recall, context"
TEMPLATES = [
    ("preference", "Likes {food}"),
    ("preference", "Enjoys {hobby} on weekends"),
    ("company", "Works at {place} Labs as a {thing} designer"),
    ("pattern", "Goes {hobby} every {n} days"),
    ("answer", "Their budget for a new {thing} is {n}00 euros"),
    ("answer", "Wants to move to {place}"),
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--users", type=int, default=20, help="users the facts are remembered for")
    parser.add_argument("--facts-per-user", type=int, default=25, help="facts remembered per user")
    parser.add_argument("--requests", type=int, default=100, help="timed requests of each other kind")
    parser.add_argument("--messages-per-user", type=int, default=25, help="chat messages stored per user")
    parser.add_argument("--tree", type=Path, help="the source tree whose sidecar runs (its working directory)")
    parser.add_argument("--json", type=Path, help="write the results here too")


def fact(rng: random.Random) -> tuple[str, str]:
    cat, t = rng.choice(TEMPLATES)
    return cat, t.format(
        food=rng.choice(FOODS),
        hobby=rng.choice(HOBBIES),
        place=rng.choice(PLACES),
        thing=rng.choice(THINGS),
        n=rng.randint(2, 97),
    )


def messages(rng: random.Random, n: int) -> list[str]:
    """n chat messages: where the user lives and works (and a move), then generated chat."""
    first = [
        f"I live in {rng.choice(CITIES)}.",
        f"I work at {rng.choice(COMPANIES)}.",
        f"I moved to {rng.choice(CITIES)}.",
    ]
    return (first + [make_message(rng, False) for _ in range(max(0, n - len(first)))])[:n]


def run(args: argparse.Namespace) -> int:
    rng = random.Random(7)
    timings: dict[str, list[float]] = {}
    actions: dict[str, int] = {}

    def timed(name: str, req: dict, expect: str) -> dict:
        r, seconds = sc.timed(req, expect)
        timings.setdefault(name, []).append(seconds)
        return r

    with (
        tempfile.TemporaryDirectory(prefix="bench-facts-") as tmp,
        Sidecar(
            Path(tmp) / "data", python=sys.executable, stderr=Path(tmp) / "stderr.log", timeout=120.0, cwd=args.tree
        ) as sc,
    ):
        sc.wait_ready()
        for i in range(args.users * args.facts_per_user):
            cat, text = fact(rng)
            r = timed(
                "remember",
                {"type": "remember", "user_id": f"u{i % args.users}", "text": text, "category": cat},
                "remembered",
            )
            actions[r["action"]] = actions.get(r["action"], 0) + 1
        t0 = time.time() - 30 * 86_400
        for n in range(args.users):
            msgs = [
                {"user_id": f"u{n}", "username": f"user{n}", "content": text, "timestamp": t0 + 3_600 * k}
                for k, text in enumerate(messages(rng, args.messages_per_user))
            ]
            if msgs:
                sc.request({"type": "store", "messages": msgs}, "ok")
        sc.compact()
        for _ in range(args.requests):
            u = f"u{rng.randrange(args.users)}"
            v = f"u{rng.randrange(args.users)}"
            q = f"any tips about {rng.choice(HOBBIES)} or a {rng.choice(THINGS)}?"
            cat, text = fact(rng)
            timed(
                "extract_inline (1 tag)",
                {
                    "type": "extract_inline",
                    "user_id": u,
                    "reply": f'Sure! <memory category="{cat}">{text}</memory> Here goes.',
                },
                "extracted",
            )
            timed("facts (by text, limit 10)", {"type": "facts", "user_id": u, "text": q, "limit": 10}, "facts")
            timed(
                "recall (3 users, limit 5)",
                {"type": "recall", "users": {u: None, v: None, "u0": None}, "text": q},
                "recall",
            )
            timed(
                "context xml (2 users)",
                {"type": "context", "format": "xml", "users": {u: "A", v: "B"}, "text": q},
                "context",
            )
            timed(
                "context markdown (1 user)",
                {"type": "context", "format": "markdown", "user_id": u, "text": q},
                "context",
            )
            timed(
                "context xml (2 users), facts only",
                {"type": "context", "format": "xml", "users": {u: "A", v: "B"}, "text": q, "include": ["facts"]},
                "context",
            )
        stats = sc.request({"type": "stats"}, "stats")
        sc.shutdown()
    rows = {name: pct(v) for name, v in timings.items()}
    print_table(
        [latency_row(name, p) for name, p in rows.items()],
        title=f"{args.users} users x {args.facts_per_user} facts remembered (outcomes: {actions}); "
        f"{stats['facts']} active facts; {args.requests} requests of each kind, sequential",
    )
    if args.json:
        write_json(args.json, {"timings": rows, "actions": actions, "facts": stats["facts"]})
    return 0
