#!/usr/bin/env python3
"""Latency of `channel_context` and `history` over the real stdin/stdout pipe.

One fresh sidecar (empty temp data dir, `--ttl-days 0`) is filled with --rows generated chat
messages spread over --channels channels and --users users (about a third of them reply to one of
the 20 previous messages of their channel), plus --big-rows messages in one busy channel. The
table is then compacted (a `cleanup` request), and each of these requests is sent --requests
times, one in flight at a time, on a random channel / user / anchor message:

- channel_context on a channel (default window of 100)
- channel_context on the busy channel
- channel_context on the busy channel with before_message_id and exclude_reply_chain_of
  (both need message_id look-ups in the store)
- history of a channel; history of a user (across channels)
- channel_context with 100 inline messages (stateless, no store read)

Prints a markdown table (p50 / p95 / p99 in ms) and writes JSON. Reuses the process driver and the
message generator of bench_core.py.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import Sidecar, log, make_message, pct  # noqa: E402

T0 = 1_704_067_200


def fill(sc: Sidecar, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    """Returns the message ids per channel and the time it took."""
    per_channel: dict[str, list[int]] = {}
    rows: list[tuple[str, int]] = [(f"chan-{rng.randrange(args.channels):03d}", n) for n in range(args.rows)]
    rows += [("busy", args.rows + n) for n in range(args.big_rows)]
    t0 = time.perf_counter()
    batch: list[dict[str, Any]] = []
    for channel, n in rows:
        ids = per_channel.setdefault(channel, [])
        uid = rng.randrange(args.users)
        msg: dict[str, Any] = {"user_id": f"user-{uid:03d}", "username": f"user{uid}", "channel_id": channel,
                               "message_id": str(10_000_000 + n), "timestamp": T0 + 30 * n,
                               "content": make_message(rng, bot=False)}
        if ids and rng.random() < 0.33:
            msg["reply_to"] = str(10_000_000 + rng.choice(ids[-20:]))
        ids.append(n)
        batch.append(msg)
        if len(batch) == args.batch:
            sc.request({"type": "store", "messages": batch}, "ok")
            batch = []
    if batch:
        sc.request({"type": "store", "messages": batch}, "ok")
    return {"ids": per_channel, "seconds": time.perf_counter() - t0}


def timed(sc: Sidecar, n: int, make: Callable[[], dict[str, Any]], expect: str) -> dict[str, float]:
    times = []
    for _ in range(n):
        req = make()
        t = time.perf_counter()
        sc.request(req, expect)
        times.append(time.perf_counter() - t)
    return pct(times)


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="bench-conversation-"))
    sc = Sidecar(args.python, tmp / "data", tmp / "sidecar.log", args.timeout, [])
    try:
        sc.wait_ready()
        log(f"filling {args.rows} + {args.big_rows} messages ...", args.quiet)
        filled = fill(sc, args, rng)
        sc.request({"type": "cleanup", "ttl_days": 36500}, "ok")  # compacts
        ids = filled["ids"]
        channels = [c for c in ids if c != "busy"]
        busy = ids["busy"]

        def mid(n: int) -> str:
            return str(10_000_000 + n)

        inline = [{"user_id": f"u{i % 7}", "content": make_message(rng, bot=False), "message_id": str(i),
                   "timestamp": T0 + i, **({"reply_to": str(i - 1 - rng.randrange(min(i, 5)))} if i and i % 3 == 0
                                           else {})} for i in range(100)]
        cases: list[tuple[str, Callable[[], dict[str, Any]], str]] = [
            ("channel_context, channel of ~%d msgs" % (args.rows // args.channels),
             lambda: {"type": "channel_context", "channel_id": rng.choice(channels)}, "channel_context"),
            ("channel_context, busy channel (%d msgs)" % len(busy),
             lambda: {"type": "channel_context", "channel_id": "busy"}, "channel_context"),
            ("channel_context, busy, before_message_id + exclude_reply_chain_of",
             lambda: (lambda n: {"type": "channel_context", "channel_id": "busy", "before_message_id": mid(n),
                                 "exclude_reply_chain_of": mid(n)})(rng.choice(busy[200:])), "channel_context"),
            ("history of a channel (30 msgs)",
             lambda: {"type": "history", "channel_id": rng.choice(channels)}, "history"),
            ("history of a user (30 msgs, all channels)",
             lambda: {"type": "history", "user_id": f"user-{rng.randrange(args.users):03d}"}, "history"),
            ("channel_context, 100 inline messages",
             lambda: {"type": "channel_context", "messages": inline}, "channel_context"),
        ]
        results = {}
        for name, make, expect in cases:
            for _ in range(3):  # warm-up
                sc.request(make(), expect)
            results[name] = timed(sc, args.requests, make, expect)
            log(f"{name}: p50 {results[name]['p50_ms']:.1f} ms", args.quiet)
        stats = sc.request({"type": "stats"}, "stats")
        sc.shutdown()
    except BaseException:
        sc.kill()
        raise
    finally:
        if not args.keep_data:
            shutil.rmtree(tmp, ignore_errors=True)
    return {"rows": stats["memories"], "fill_seconds": filled["seconds"], "requests": args.requests,
            "results": results, "python": platform.python_version(), "machine": platform.machine(),
            "versions": stats["versions"], "date": time.strftime("%Y-%m-%d")}


def table(r: dict[str, Any]) -> str:
    lines = [f"{r['rows']} stored messages, {r['requests']} sequential requests each", "",
             "| request | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|"]
    for name, p in r["results"].items():
        lines.append(f"| {name} | {p['p50_ms']:.1f} | {p['p95_ms']:.1f} | {p['p99_ms']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000, help="messages over the ordinary channels")
    p.add_argument("--channels", type=int, default=100)
    p.add_argument("--users", type=int, default=100)
    p.add_argument("--big-rows", type=int, default=10_000, help="messages in the one busy channel")
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--json", default="bench-results/conversation.json")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--keep-data", action="store_true")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    r = run(args)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(r, indent=2))
    print(table(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
