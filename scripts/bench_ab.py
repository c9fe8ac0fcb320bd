"""A/B the request path of two (or more) source trees at 100,000 memories, in a few minutes.

    git worktree add /tmp/base HEAD~1
    python scripts/bench_ab.py /tmp/base . --repeats 3
    python scripts/bench_ab.py . ".:--compact-every-writes 25"      # same tree, other flags

`scripts/bench.py` fills its store through the sidecar (embedding every message, about 7 minutes
for 100k on 2 cores). This script builds its store once, directly with `MessageStore` and random
unit vectors (no embedding; about 15 s), so that a change can be measured against its base many
times over. Random vectors make the semantic ranking meaningless but cost the same to search, and
the texts are the generated chat messages `bench.py` stores, so the full-text indexes are
realistic.

Each run copies the built dir, starts `python -m sidecar` with the tree as its working directory
(so that tree's `sidecar` package is the one imported), compacts (`cleanup`), queries every user
once, then times --rounds rounds of one `store`, one default-mode (hybrid) `query` and one
`semantic` `query`, one request at a time over the pipe, as `bench.py` does. Trees are run in turn,
--repeats times, so that a noisy machine hurts all of them alike. Prints p50/p99 per run.
A tree may carry extra sidecar flags after a colon: "PATH:--flag value".
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

from bench_core import make_message, make_question, user_id  # noqa: E402


def build(data_dir: Path, rows: int, users: int, seed: int) -> None:
    """`rows` generated messages over `users` users, random unit vectors, compacted and indexed."""
    from sidecar.model import resolve_model
    from sidecar.store import MessageStore

    files = resolve_model(None, True, None)
    store = MessageStore(data_dir, {"name": files.name, "dim": files.dim, "digest": files.digest},
                         compact_every_writes=10**9, compact_interval_seconds=0)
    rng, vrng = random.Random(seed), np.random.default_rng(seed)
    for start in range(0, rows, 1000):
        batch = []
        for _ in range(min(1000, rows - start)):
            bot = rng.random() < 0.5
            batch.append({"id": str(uuid.uuid4()), "user_id": user_id(rng.randrange(users)),
                          "content": make_message(rng, bot), "is_bot": bot, "timestamp": 1.7e9 + start,
                          "message_id": None, "channel_id": None, "reply_to": None, "username": None})
        vectors = vrng.standard_normal((len(batch), files.dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.add(batch, vectors)
        store.flush()
    store.compact()
    store.close()


def run(spec: str, built: Path, work: Path, rounds: int, users: int, seed: int) -> dict[str, list[float]]:
    tree, _, flags = spec.partition(":")
    data_dir = work / "data"
    shutil.rmtree(data_dir, ignore_errors=True)
    shutil.copytree(built, data_dir)
    proc = subprocess.Popen([sys.executable, "-m", "sidecar", "--data-dir", str(data_dir), "--ttl-days", "0",
                             *flags.split()], cwd=tree, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout

    def request(obj: dict) -> dict:
        proc.stdin.write(orjson.dumps(obj) + b"\n")
        proc.stdin.flush()
        answer = orjson.loads(proc.stdout.readline() or b"{}")
        if answer.get("type") not in ("ok", "results"):
            raise SystemExit(f"{spec}: unexpected answer {answer} to {obj['type']}")
        return answer

    try:
        if orjson.loads(proc.stdout.readline() or b"{}").get("type") != "ready":
            raise SystemExit(f"{spec}: the sidecar did not start")
        rng = random.Random(seed)
        request({"type": "cleanup", "ttl_days": 36500})
        for u in range(users):
            request({"type": "query", "user_id": user_id(u), "text": make_question(rng), "limit": 5})
        out: dict[str, list[float]] = {"store": [], "hybrid": [], "semantic": []}
        for _ in range(rounds):
            for kind, req in (
                    ("store", {"type": "store", "user_id": user_id(rng.randrange(users)),
                               "content": make_message(rng, False)}),
                    ("hybrid", {"type": "query", "user_id": user_id(rng.randrange(users)),
                                "text": make_question(rng), "limit": 5}),
                    ("semantic", {"type": "query", "user_id": user_id(rng.randrange(users)),
                                  "text": make_question(rng), "limit": 5, "mode": "semantic"})):
                t0 = time.perf_counter()
                request(req)
                out[kind].append((time.perf_counter() - t0) * 1000)
        return out
    finally:
        proc.stdin.close()
        proc.wait(120)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", nargs="+", help="source trees to compare, each PATH or PATH:--sidecar-flags")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--built", type=Path, help="reuse (or create) the built store here instead of a temporary one")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        built = args.built or Path(tmp) / "built"
        if not (built / "meta.json").exists():
            t0 = time.perf_counter()
            build(built, args.rows, args.users, args.seed)
            print(f"built {args.rows} rows in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        medians: dict[str, dict[str, list[float]]] = {t: {} for t in args.trees}
        for repeat in range(args.repeats):
            for tree in args.trees:
                got = run(tree, built, Path(tmp), args.rounds, args.users, args.seed + repeat)
                cells = []
                for kind, values in got.items():
                    values.sort()
                    medians[tree].setdefault(kind, []).append(statistics.median(values))
                    cells.append(f"{kind} p50/p99 {statistics.median(values):.1f}/"
                                 f"{values[int(0.99 * len(values))]:.1f} ms")
                print(f"run {repeat + 1} {tree}: " + ", ".join(cells), flush=True)
        print("median of the runs' p50s:")
        for tree, kinds in medians.items():
            print(f"  {tree}: " + ", ".join(f"{k} {statistics.median(v):.1f} ms" for k, v in kinds.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
