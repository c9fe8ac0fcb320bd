"""A/B the request path of two (or more) source trees at 100,000 memories, in a few minutes.

    git worktree add /tmp/base HEAD~1
    python scripts/bench.py ab /tmp/base . --repeats 3
    python scripts/bench.py ab . ".:--compact-every-writes 25"      # same tree, other flags

`core` fills its store through the sidecar (embedding every message, about 7 minutes for 100k on
2 cores). This builds its store once, directly with `MessageStore` and random unit vectors (no
embedding; about 15 s), so that a change can be measured against its base many times over. Random
vectors make the semantic ranking meaningless but cost the same to search, and the texts are the
generated chat messages `core` stores, so the full-text indexes are realistic.

Each run copies the built dir, starts `python -m sidecar` with the tree as its working directory
(so that tree's `sidecar` package is the one imported), compacts (`cleanup`), queries every user
once, then times --rounds rounds of one `store`, one default-mode (hybrid) `query` and one
`semantic` `query`, one request at a time over the pipe, as `core` does, and after every 100 rounds a
`cleanup` (an exclusive compaction of the table with the rows stored since: what one compaction costs
that tree). Trees are run in turn,
--repeats times, so that a noisy machine hurts all of them alike. Prints p50/p99 per run and the
median of the runs' p50s. A tree may carry extra sidecar flags after a colon: "PATH:--flag value".
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from .client import Sidecar
from .output import log, print_table
from .timing import pct
from .workload import make_message, make_question, query_every_user, user_id

SUMMARY = "compare source trees (or flags) on one built store"
KINDS = ("store", "hybrid", "semantic", "cleanup")
CLEANUP_EVERY = 100  # rounds between two timed cleanups


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trees", nargs="+", help="source trees to compare, each PATH or PATH:--sidecar-flags")
    parser.add_argument("--rows", type=int, default=100_000, help="memories in the built store")
    parser.add_argument("--users", type=int, default=100, help="users the memories are spread over")
    parser.add_argument("--rounds", type=int, default=300, help="timed rounds (store, hybrid, semantic) per run")
    parser.add_argument("--repeats", type=int, default=2, help="runs of every tree, in turn")
    parser.add_argument("--seed", type=int, default=5, help="seed of the built store and of the requests")
    parser.add_argument("--built", type=Path, help="reuse (or create) the built store here instead of a temporary one")


def build(data_dir: Path, rows: int, users: int, seed: int) -> None:
    """`rows` generated messages over `users` users, random unit vectors, compacted (every 100k rows and at
    the end) and indexed."""
    from sidecar.embedding.model import resolve_model
    from sidecar.messages.store import MessageStore

    files = resolve_model(None, True, None)
    store = MessageStore(data_dir, files.identity, compact_every_writes=10**9, compact_interval_seconds=0)
    rng, vrng = random.Random(seed), np.random.default_rng(seed)
    for start in range(0, rows, 1000):
        batch = []
        for _ in range(min(1000, rows - start)):
            bot = rng.random() < 0.5
            batch.append(
                {
                    "id": str(uuid.uuid4()),
                    "user_id": user_id(rng.randrange(users)),
                    "content": make_message(rng, bot),
                    "is_bot": bot,
                    "timestamp": 1.7e9 + start,
                    "message_id": None,
                    "channel_id": None,
                    "reply_to": None,
                    "username": None,
                }
            )
        vectors = vrng.standard_normal((len(batch), files.dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.add(batch, vectors)
        store.flush()
        if (start // 1000) % 100 == 99:  # as the sidecar's own schedule would: reads stay fast as it grows
            store.compact()
    store.compact()
    store.close()


def measure(spec: str, built: Path, work: Path, rounds: int, users: int, seed: int) -> dict[str, list[float]]:
    """One run of one tree: the seconds of each timed request, by kind."""
    tree, _, flags = spec.partition(":")
    data_dir = work / "data"
    shutil.rmtree(data_dir, ignore_errors=True)
    shutil.copytree(built, data_dir)
    with Sidecar(data_dir, flags.split(), stderr=work / "sidecar.log", cwd=tree) as sc:
        sc.wait_ready()
        rng = random.Random(seed)
        sc.compact()
        query_every_user(sc, users, rng)
        out: dict[str, list[float]] = {k: [] for k in KINDS}
        for done in range(1, rounds + 1):
            for kind, req, expect in (
                (
                    "store",
                    {"type": "store", "user_id": user_id(rng.randrange(users)), "content": make_message(rng, False)},
                    "ok",
                ),
                (
                    "hybrid",
                    {"type": "query", "user_id": user_id(rng.randrange(users)), "text": make_question(rng), "limit": 5},
                    "results",
                ),
                (
                    "semantic",
                    {
                        "type": "query",
                        "user_id": user_id(rng.randrange(users)),
                        "text": make_question(rng),
                        "limit": 5,
                        "mode": "semantic",
                    },
                    "results",
                ),
            ):
                out[kind].append(sc.timed(req, expect)[1])
            if done % CLEANUP_EVERY == 0:
                out["cleanup"].append(sc.timed({"type": "cleanup", "ttl_days": 36500}, "ok")[1])
        sc.finish(120)
    return out


def run(args: argparse.Namespace) -> int:
    runs: list[dict[str, Any]] = []
    medians: dict[str, dict[str, list[float]]] = {t: {k: [] for k in KINDS} for t in args.trees}
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        built = args.built or Path(tmp) / "built"
        if not (built / "meta.json").exists():
            t0 = time.perf_counter()
            build(built, args.rows, args.users, args.seed)
            log(f"built {args.rows} rows in {time.perf_counter() - t0:.0f} s")
        for repeat in range(args.repeats):
            for tree in args.trees:
                got = measure(tree, built, Path(tmp), args.rounds, args.users, args.seed + repeat)
                row = {"run": repeat + 1, "tree": tree}
                for kind, values in got.items():
                    if not values:  # fewer rounds than CLEANUP_EVERY: no cleanup timed
                        continue
                    p50, p99 = pct(values)["p50_ms"], pct(values, "rank")["p99_ms"]
                    medians[tree][kind].append(p50)
                    row.update({f"{kind} p50 ms": p50, f"{kind} p99 ms": p99})
                log(
                    f"run {repeat + 1} {tree}: "
                    + ", ".join(
                        f"{k} p50/p99 {row[f'{k} p50 ms']:.1f}/{row[f'{k} p99 ms']:.1f} ms"
                        for k in KINDS
                        if f"{k} p50 ms" in row
                    )
                )
                runs.append(row)
    print_table(runs)
    print()
    print_table(
        [
            {"tree": tree, **{f"{k} ms": statistics.median(v) for k, v in kinds.items() if v}}
            for tree, kinds in medians.items()
        ],
        title="median of the runs' p50s",
    )
    return 0
