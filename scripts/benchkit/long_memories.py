"""Long memories (past the model's 256-token window, embedded in chunks in the background): query
latency over the real pipe with long turns, and the cost of storing a 1 MB memory.

    python scripts/bench.py long-memories                      # 5 users x 400 turns of 1-3k characters
    python scripts/bench.py long-memories --users 2 --turns 200 --requests 100

1. Fills a fresh data dir with `--users` x `--turns` memories of 1,000-3,000 characters (generated chat
   messages run together; batch `store`), waits until every chunk is embedded (`stats` chunks.pending 0),
   compacts, then times `--requests` queries per mode (random user, generated question, limit 5, modes
   interleaved). Beside them, the model floor: the same kind of question embedded alone, in-process.
2. Stores one memory of exactly `--big-bytes` bytes (default 1 MB) for a new user and, while it is being
   chunked, asks another user a query every `--interval` seconds, semantic and hybrid in turn: the
   store's acknowledgement time, the time until its chunks are all in, and the latency of the other
   user's queries meanwhile (the first one waits behind the store: shown apart).
Prints tables; progress on stderr. CPU is shared on the project VM: quote medians of several runs.
"""

from __future__ import annotations

import argparse
import itertools
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from .client import Sidecar, add_sidecar_arguments, dumps
from .output import latency_row, log, print_table
from .timing import pct
from .workload import make_message, make_question, user_id

SUMMARY = "long memories: query latency per mode with 1-3k character turns, and storing 1 MB"
MODES = ("semantic", "keyword", "hybrid")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--users", type=int, default=5, help="users with long turns")
    parser.add_argument("--turns", type=int, default=400, help="memories per user, each of 1,000-3,000 characters")
    parser.add_argument("--requests", type=int, default=200, help="timed queries per mode")
    parser.add_argument("--batch", type=int, default=50, help="memories per batch store while filling")
    parser.add_argument("--big-bytes", type=int, default=1_000_000, help="size of the big memory, in bytes")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between the other user's queries")
    parser.add_argument("--seed", type=int, default=11, help="seed of the generated text")
    add_sidecar_arguments(parser, timeout=600.0)
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def long_turn(rng: random.Random, low: int = 1000, high: int = 3000) -> str:
    """A memory of low..high characters: generated chat messages run together."""
    target = rng.randint(low, high)
    parts: list[str] = []
    size = 0
    while size < target:
        parts.append(make_message(rng, False, 15, 40))
        size += len(parts[-1]) + 1
    return " ".join(parts)[:target]


def chunks(sc: Sidecar) -> dict[str, int]:
    return sc.request({"type": "stats"}, "stats")["chunks"]


def wait_chunked(sc: Sidecar, quiet: bool) -> float:
    t0 = time.perf_counter()
    while (c := chunks(sc))["pending"]:
        log(f"  chunking: {c['pending']} memories pending, {c['vectors']} chunk vectors", quiet)
        time.sleep(2.0)
    return time.perf_counter() - t0


def fill(
    sc: Sidecar, rng: random.Random, users: int, turns: int, batch: int = 50, quiet: bool = False
) -> dict[str, Any]:
    """users x turns long memories, batch-stored, then waited for until every chunk is embedded."""
    now, t0, chars = time.time(), time.perf_counter(), 0
    for u in range(users):
        for start in range(0, turns, batch):
            msgs = []
            for k in range(start, min(turns, start + batch)):
                content = long_turn(rng)
                chars += len(content)
                msgs.append({"user_id": user_id(u), "content": content, "timestamp": now - (turns - k) * 60})
            sc.request({"type": "store", "messages": msgs}, "ok")
        log(f"  stored {turns} long turns of {user_id(u)}", quiet)
    stored = time.perf_counter() - t0
    chunking = wait_chunked(sc, quiet)
    return {"stored_s": stored, "chunking_s": chunking, "chars": chars, "vectors": chunks(sc)["vectors"]}


def model_floor(threads: int, rng: random.Random, n: int = 200) -> list[float]:
    """Seconds to embed each of n generated questions alone, in-process (what a query cannot go below)."""
    from sidecar.embedding.embedder import Embedder
    from sidecar.embedding.model import resolve_model

    emb = Embedder(resolve_model(None, offline=True), threads=threads)
    for _ in range(20):
        emb.embed_query("warm up")
    times = []
    for _ in range(n):
        text = make_question(rng)
        t0 = time.perf_counter()
        emb.embed_query(text)
        times.append(time.perf_counter() - t0)
    return times


def big_store(sc: Sidecar, rng: random.Random, args: argparse.Namespace) -> dict[str, Any]:
    """The big memory stored for a new user while another user queries every `interval` seconds."""
    raw = long_turn(rng, args.big_bytes, args.big_bytes).encode()[: args.big_bytes].decode("utf-8", "ignore")
    text = raw + " " * (args.big_bytes - len(raw.encode()))  # exactly big_bytes of UTF-8
    other, question = user_id(0), make_question(rng)
    t0 = time.perf_counter()
    sc.send_raw(dumps({"type": "store", "user_id": "big-user", "content": text}) + b"\n")
    first_t = time.perf_counter()
    sc.send({"type": "query", "user_id": other, "text": question, "limit": 5})
    ack = sc.read()
    ack_s = time.perf_counter() - t0
    if ack.get("type") != "ok":
        raise sc.fail(f"1 MB store: {dumps(ack)[:300]!r}")
    sc.check(sc.read(), "query", "results")
    first = time.perf_counter() - first_t
    during: dict[str, list[float]] = {"semantic": [], "hybrid": []}
    for n in itertools.count(1):
        time.sleep(args.interval)
        mode = "semantic" if n % 2 else "hybrid"
        during[mode].append(
            sc.timed({"type": "query", "user_id": other, "text": question, "limit": 5, "mode": mode}, "results")[1]
        )
        if n % 20 == 0 and not chunks(sc)["pending"]:
            break
    return {
        "ack_s": ack_s,
        "chunked_s": time.perf_counter() - t0,
        "first": first,
        "during": during,
        "vectors": chunks(sc)["vectors"],
    }


def run(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-long-") as tmp:
        with Sidecar(
            Path(tmp) / "data", python=args.python, stderr=Path(tmp) / "sidecar.log", timeout=args.timeout
        ) as sc:
            sc.wait_ready()
            f = fill(sc, rng, args.users, args.turns, args.batch, args.quiet)
            log(f"stored in {f['stored_s']:.0f} s, chunked {f['chunking_s']:.0f} s later", args.quiet)
            sc.compact()
            for u in range(args.users):  # warm-up
                sc.request({"type": "query", "user_id": user_id(u), "text": make_question(rng)}, "results")
            times: dict[str, list[float]] = {m: [] for m in MODES}
            for _ in range(args.requests):
                uid, text = user_id(rng.randrange(args.users)), make_question(rng)
                for mode in MODES:
                    times[mode].append(
                        sc.timed({"type": "query", "user_id": uid, "text": text, "limit": 5, "mode": mode}, "results")[
                            1
                        ]
                    )
            big = big_store(sc, rng, args)
            sc.shutdown()
    floor = model_floor(2, rng)
    rows = [latency_row(f"query mode={mode}", pct(times[mode])) for mode in MODES]
    rows.append(latency_row("model floor (question embedded alone, in-process)", pct(floor)))
    memories = args.users * args.turns
    print_table(
        rows,
        title=f"query latency over the pipe, {args.users} users x {args.turns} turns of 1-3k "
        f"characters ({memories} memories, {f['vectors']} chunk vectors), limit 5",
    )
    print()
    rows = [
        {"measure": f"store of {args.big_bytes} bytes: acknowledged", "ms": big["ack_s"] * 1000},
        {"measure": "  ... all its chunks embedded", "ms": big["chunked_s"] * 1000},
        {"measure": "another user's first query (sent right behind the store)", "ms": big["first"] * 1000},
        *(
            {
                "measure": f"another user's {mode} queries meanwhile (n={len(t)}): p50 / p99 / worst",
                "ms": " / ".join(f"{pct(t)[k]:.0f}" for k in ("p50_ms", "p99_ms", "max_ms")),
            }
            for mode, t in big["during"].items()
        ),
        {"measure": f"fill: {memories} long turns stored", "ms": f["stored_s"] * 1000},
        {"measure": "  ... then chunked", "ms": f["chunking_s"] * 1000},
    ]
    print_table(
        rows,
        title=f"storing {args.big_bytes} bytes as one memory ({big['vectors'] - f['vectors']} chunks)",
        floatfmt=".0f",
    )
    return 0
