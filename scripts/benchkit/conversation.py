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

Prints a table (p50 / p95 / p99 in ms) and writes JSON.
"""

from __future__ import annotations

import argparse
import platform
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .client import Sidecar, add_sidecar_arguments
from .output import latency_row, log, print_table, write_json
from .timing import pct
from .workload import make_message

SUMMARY = "latency of channel_context and history"
T0 = 1_704_067_200


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=10_000, help="messages over the ordinary channels")
    parser.add_argument("--channels", type=int, default=100, help="ordinary channels")
    parser.add_argument("--users", type=int, default=100, help="users the messages are spread over")
    parser.add_argument("--big-rows", type=int, default=10_000, help="messages in the one busy channel")
    parser.add_argument("--batch", type=int, default=500, help="messages per batch store while filling")
    parser.add_argument("--requests", type=int, default=200, help="timed requests of each kind")
    parser.add_argument("--seed", type=int, default=1234, help="seed of the generated messages and requests")
    parser.add_argument("--json", default="bench-results/conversation.json", help="results file")
    add_sidecar_arguments(parser, timeout=300.0)
    parser.add_argument("--keep-data", action="store_true", help="keep the temporary data dir")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def fill_channels(sc: Sidecar, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    """Returns the message ids per channel and the time it took."""
    per_channel: dict[str, list[int]] = {}
    rows: list[tuple[str, int]] = [(f"chan-{rng.randrange(args.channels):03d}", n) for n in range(args.rows)]
    rows += [("busy", args.rows + n) for n in range(args.big_rows)]
    t0 = time.perf_counter()
    batch: list[dict[str, Any]] = []
    for channel, n in rows:
        ids = per_channel.setdefault(channel, [])
        uid = rng.randrange(args.users)
        msg: dict[str, Any] = {
            "user_id": f"user-{uid:03d}",
            "username": f"user{uid}",
            "channel_id": channel,
            "message_id": str(10_000_000 + n),
            "timestamp": T0 + 30 * n,
            "content": make_message(rng, bot=False),
        }
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


def measure(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="bench-conversation-"))
    try:
        with Sidecar(tmp / "data", python=args.python, stderr=tmp / "sidecar.log", timeout=args.timeout) as sc:
            sc.wait_ready()
            log(f"filling {args.rows} + {args.big_rows} messages ...", args.quiet)
            filled = fill_channels(sc, args, rng)
            sc.compact()
            ids = filled["ids"]
            channels = [c for c in ids if c != "busy"]
            busy = ids["busy"]

            def mid(n: int) -> str:
                return str(10_000_000 + n)

            inline = [
                {
                    "user_id": f"u{i % 7}",
                    "content": make_message(rng, bot=False),
                    "message_id": str(i),
                    "timestamp": T0 + i,
                    **({"reply_to": str(i - 1 - rng.randrange(min(i, 5)))} if i and i % 3 == 0 else {}),
                }
                for i in range(100)
            ]
            cases: list[tuple[str, Callable[[], dict[str, Any]], str]] = [
                (
                    f"channel_context, channel of ~{args.rows // args.channels} msgs",
                    lambda: {"type": "channel_context", "channel_id": rng.choice(channels)},
                    "channel_context",
                ),
                (
                    f"channel_context, busy channel ({len(busy)} msgs)",
                    lambda: {"type": "channel_context", "channel_id": "busy"},
                    "channel_context",
                ),
                (
                    "channel_context, busy, before_message_id + exclude_reply_chain_of",
                    lambda: (
                        lambda n: {
                            "type": "channel_context",
                            "channel_id": "busy",
                            "before_message_id": mid(n),
                            "exclude_reply_chain_of": mid(n),
                        }
                    )(rng.choice(busy[200:])),
                    "channel_context",
                ),
                (
                    "history of a channel (30 msgs)",
                    lambda: {"type": "history", "channel_id": rng.choice(channels)},
                    "history",
                ),
                (
                    "history of a user (30 msgs, all channels)",
                    lambda: {"type": "history", "user_id": f"user-{rng.randrange(args.users):03d}"},
                    "history",
                ),
                (
                    "channel_context, 100 inline messages",
                    lambda: {"type": "channel_context", "messages": inline},
                    "channel_context",
                ),
            ]
            results = {}
            for name, make, expect in cases:
                for _ in range(3):  # warm-up
                    sc.request(make(), expect)
                results[name] = pct([sc.timed(make(), expect)[1] for _ in range(args.requests)])
                log(f"{name}: p50 {results[name]['p50_ms']:.1f} ms", args.quiet)
            stats = sc.request({"type": "stats"}, "stats")
            sc.shutdown()
    finally:
        if not args.keep_data:
            shutil.rmtree(tmp, ignore_errors=True)
    return {
        "rows": stats["memories"],
        "fill_seconds": filled["seconds"],
        "requests": args.requests,
        "results": results,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "versions": stats["versions"],
        "date": time.strftime("%Y-%m-%d"),
    }


def run(args: argparse.Namespace) -> int:
    r = measure(args)
    write_json(args.json, r)
    print_table(
        [latency_row(name, p) for name, p in r["results"].items()],
        title=f"{r['rows']} stored messages, {r['requests']} sequential requests each",
    )
    return 0
