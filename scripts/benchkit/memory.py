"""RSS of the store over a long chat-like run, in-process and in minutes: the soak's traffic without
the pipe or the model, to find what makes memory grow and to check a fix before a long soak.

    python scripts/bench.py memory --steps 100000                       # the shipped settings
    python scripts/bench.py memory --steps 100000 --lance-index-mb 32 --lance-metadata-mb 32

Each step is one query (5% hybrid, else semantic) and one store for a user in one of 16
conversations over 1,000 users (as `soak`), with random unit vectors instead of embeddings;
compaction runs when due, followed by `malloc_trim`, as in the server. The vector cache is small by
default (16 MB) so that it is full early and what grows after that is something else. Prints RSS
every --every steps. Linux only (/proc). `--tracemalloc` also prints how much of the Python heap is
traced (numpy buffers included), to tell Python growth from native growth.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from .procfs import rss_kib
from .timing import pct
from .workload import conversation_length, words_text

SUMMARY = "in-process RSS of the store under the soak's traffic"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--steps", type=int, default=100_000, help="query + store steps")
    parser.add_argument("--every", type=int, default=10_000, help="print RSS every this many steps")
    parser.add_argument("--cache-mb", type=int, default=16, help="the vector cache budget")
    parser.add_argument("--lance-index-mb", type=float, help="LanceDB's index cache (default: the sidecar's)")
    parser.add_argument("--lance-metadata-mb", type=float, help="LanceDB's metadata cache (default: the sidecar's)")
    parser.add_argument("--users", type=int, default=1_000, help="users the conversations are drawn from")
    parser.add_argument(
        "--trim-seconds",
        type=float,
        help="malloc_trim this often, as the server does (0: only after a compaction; "
        "default: the server's, sidecar.runtime.native_memory.TRIM_INTERVAL_SECONDS)",
    )
    parser.add_argument("--tracemalloc", action="store_true", help="also print the traced Python heap")
    parser.add_argument(
        "--retain",
        type=int,
        default=0,
        metavar="STEPS",
        help="keep the store bounded as a TTL does: every STEPS/4 steps, delete what was stored more than STEPS "
        "steps ago (as `cleanup` does; soak --retain); 0: the store only grows",
    )


def run(args: argparse.Namespace) -> int:
    from sidecar.messages.store import MessageStore
    from sidecar.runtime import native_memory
    from sidecar.storage import database

    if args.trim_seconds is None:
        args.trim_seconds = native_memory.TRIM_INTERVAL_SECONDS
    native_memory.configure()
    if args.lance_index_mb is not None:
        database.LANCE_INDEX_CACHE_BYTES = int(args.lance_index_mb * (1 << 20))
    if args.lance_metadata_mb is not None:
        database.LANCE_METADATA_CACHE_BYTES = int(args.lance_metadata_mb * (1 << 20))
    print(
        f"LanceDB caches: index {database.LANCE_INDEX_CACHE_BYTES >> 20} MB, metadata "
        f"{database.LANCE_METADATA_CACHE_BYTES >> 20} MB; vector cache {args.cache_mb} MB",
        flush=True,
    )
    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start()

    rng = random.Random(1)
    vectors = np.random.default_rng(1)
    model = {"name": "bench-memory", "dim": 384, "digest": "random"}
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        store = MessageStore(
            Path(tmp) / "data",
            model,
            compact_every_writes=200,
            compact_interval_seconds=60,
            cache_bytes=args.cache_mb << 20,
        )

        def conversation() -> list:
            return [f"user-{rng.randrange(args.users)}", conversation_length(rng, 20.0)]

        talking = [conversation() for _ in range(16)]
        t0 = time.perf_counter()
        next_trim = time.monotonic() + args.trim_seconds
        trims: list[float] = []
        for step in range(args.steps + 1):
            conv = rng.choice(talking)
            if conv[1] <= 0:
                conv[:] = conversation()
            conv[1] -= 1
            user = conv[0]
            text = words_text(rng)
            vector = vectors.standard_normal((1, 384)).astype(np.float32)
            vector /= np.linalg.norm(vector)
            store.search(vector[0], user, 5, text=text, mode="hybrid" if rng.random() < 0.05 else "semantic")
            store.add(
                [
                    {
                        "id": str(uuid.uuid4()),
                        "user_id": user,
                        "content": f"{text} #{step}",
                        "is_bot": False,
                        "timestamp": float(step),
                        "message_id": None,
                        "channel_id": None,
                        "reply_to": None,
                        "username": None,
                    }
                ],
                vector,
            )
            if args.retain and step and step % max(1, args.retain // 4) == 0 and step > args.retain:
                store.delete(f"timestamp < {step - args.retain}")
                native_memory.trim()
            if store.compact_due():
                store.compact(exclusive=False)
                native_memory.trim()
            elif args.trim_seconds and time.monotonic() >= next_trim:
                t = time.perf_counter()
                native_memory.trim()
                trims.append(time.perf_counter() - t)
                next_trim = time.monotonic() + args.trim_seconds
            if step % args.every == 0:
                line = (
                    f"{step:8d} steps  {time.perf_counter() - t0:6.0f} s  RSS {rss_kib() // 1024:5d} MiB  "
                    f"vector cache {store.cache_stats()['bytes'] >> 20} MiB  memories {store.count()}"
                )
                heap = native_memory.heap_bytes()
                if heap is not None:
                    line += (
                        "  malloc in use / free / mmapped "
                        + " / ".join(f"{heap[k] >> 20}" for k in ("in_use", "free", "mmapped"))
                        + " MiB"
                    )
                if trims:
                    line += f"  trim median {pct(trims, 'rank')['p50_ms']:.1f} ms"
                if args.tracemalloc:
                    line += f"  Python traced {tracemalloc.get_traced_memory()[0] >> 20} MiB"
                print(line, flush=True)
        store.close()
    return 0
