"""The core benchmark: the sidecar over its real pipe, measured against its own floor.

All in one run, so the ratios hold even on a noisy machine:

  floor      the same ONNX model and tokenizer called directly in this process (no pipe, no store):
             one short message; batches of chat messages (~25 tokens); batches of 256-token texts
  ready      spawn -> `ready` line for `python -m sidecar` (empty data dir), for a frozen binary when
             one is given or found in dist/, and `python -c "import lancedb"` timed the same way (the
             package's bytecode written first, as an installed package has it)
  sidecar    one sidecar filled by batch `store` to each size in --sizes (memories spread over
             --users users), then, per size: compaction (a `cleanup` request), sequential single
             round trips, in turn a `store`, a `query` in the default mode (hybrid) and one in
             `semantic` mode (p50/p95/p99 of each, embedding included)
  naive      for contrast, LanceDB used plainly in this process: one `add` per message, no
             compaction, no scalar index, filtered vector search (store cost only, no embedding)
  memory     the sidecar's peak RSS (VmHWM) over the whole run, 256-token texts included;
             bytes on disk per memory after compaction

Prints one table (with the issue's targets as ratios to the floor) and writes JSON. The issue's targets
are ratios to the floor's one short message; each request is also compared with the floor of the same
kind of text (like for like): `store` with one chat message (the generator the pipe benchmark
stores), `query` with one question (the generator it queries with).
Example: python scripts/bench.py core --sizes 10000,100000      (1M: --sizes 10000,100000,1000000)
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from . import ROOT
from .client import Sidecar, add_sidecar_arguments, compile_package
from .output import log, print_table, write_json
from .timing import pct
from .workload import fill, make_message, make_question, query_every_user, user_id

SUMMARY = "ready time, store/query latency vs the floor, RSS, disk"
LONG_TEXT = (
    "The committee reviewed the proposal in detail and asked for revised budget figures, a clearer "
    "timeline, and a risk assessment covering supply delays, staffing changes and regulatory review. "
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="10000,100000", help="memory counts to measure at, ascending")
    parser.add_argument("--users", type=int, default=100, help="users the memories are spread over")
    parser.add_argument("--requests", type=int, default=300, help="sequential store and query requests per size")
    parser.add_argument("--batch", type=int, default=1000, help="messages per batch store while filling")
    parser.add_argument("--ready-runs", type=int, default=5, help="spawns timed per command (their median)")
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime threads of the floor")
    parser.add_argument("--binary", type=Path, help="frozen sidecar binary to time as well (default: dist/)")
    add_sidecar_arguments(parser, timeout=600.0)
    parser.add_argument("--skip-naive", action="store_true", help="leave out the naive LanceDB contrast")
    parser.add_argument("--json", type=Path, default=Path("bench-results/bench.json"), help="results file")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated messages and questions")


# --------------------------------------------------------------------------- floor


def bench_floor(threads: int, rng: random.Random) -> dict[str, Any]:
    from sidecar.embedding.embedder import Embedder
    from sidecar.embedding.model import resolve_model

    # MEMORY_SIDECAR_MODEL (and the huggingface-hub cache's HF_HUB_CACHE) choose another model, for the floor
    # and for the sidecars spawned (they read the same variable): docs/models.md
    files = resolve_model(None, offline=True, model=os.environ.get("MEMORY_SIDECAR_MODEL") or None)
    emb = Embedder(files, threads=threads)
    short = "hey what's up, how was the hiking trip last weekend?"
    for _ in range(20):
        emb.embed_passages([short])

    def one_at_a_time(texts: list[str]) -> list[float]:
        """Seconds to embed each text alone."""
        times = []
        for t in texts:
            t0 = time.perf_counter()
            emb.embed_passages([t])
            times.append(time.perf_counter() - t0)
        return times

    def per_second(texts: list[str]) -> float:
        """Texts embedded per second, in batches of 32."""
        t0 = time.perf_counter()
        for i in range(0, len(texts), 32):
            emb.embed_passages(texts[i : i + 32])
        return len(texts) / (time.perf_counter() - t0)

    def median_ms(times: list[float]) -> float:
        return float(np.median(times) * 1000)

    single = one_at_a_time([short] * 300)
    # the same kinds of text the pipe benchmark sends, one at a time: the fair floor of each request
    chat_one = median_ms(one_at_a_time([make_message(rng, False) for _ in range(300)]))
    question_one = median_ms(one_at_a_time([make_question(rng) for _ in range(300)]))
    chats = [make_message(rng, rng.random() < 0.15) for _ in range(640)]
    tokens = statistics.mean(len(e.ids) for e in emb._tokenizer.encode_batch(chats))
    chat_rate = per_second(chats)
    long_rate = per_second([LONG_TEXT * 12 + str(i) for i in range(64)])  # truncated at 256 tokens
    return {
        "model": str(files.onnx),
        "digest": files.digest,
        "threads": threads,
        "single_ms": median_ms(single),
        "single": pct(single),
        "single_chat_ms": chat_one,
        "single_question_ms": question_one,
        "chat_tokens_mean": tokens,
        "chat_per_s": chat_rate,
        "long_per_s": long_rate,
    }


# --------------------------------------------------------------------------- ready


def median_wall(cmd: list[str], runs: int, ready_line: bool, tmp: Path) -> dict[str, Any]:
    """Spawn `cmd` `runs` times (on fresh data dirs); the median wall time to its ready line (or to exit)."""
    walls = []
    for _ in range(runs):
        data = tmp / f"ready-{time.monotonic_ns()}"
        if ready_line:
            # a 12-layer multilingual model (docs/models.md) took 12-52 s to ready on a loaded machine
            with Sidecar(data, command=cmd, stderr=subprocess.DEVNULL, timeout=300) as sc:
                walls.append(sc.wait_ready()[0])
                sc.shutdown()
        else:
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            walls.append(time.perf_counter() - t0)
        shutil.rmtree(data, ignore_errors=True)
    p = pct(walls)
    return {"median_ms": p["p50_ms"], "min_ms": p["min_ms"], "runs": runs}


def bench_ready(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    compile_package(args.python)
    out = {
        "python -m sidecar": median_wall([args.python, "-m", "sidecar"], args.ready_runs, True, tmp),
        'python -c "import lancedb"': median_wall([args.python, "-c", "import lancedb"], args.ready_runs, False, tmp),
    }
    binary = args.binary
    if binary is None:
        found = sorted((ROOT / "dist").glob("memory-sidecar-*/memory-sidecar*")) + sorted(
            p for p in (ROOT / "dist").glob("memory-sidecar-*") if p.is_file()
        )
        binary = found[0] if found else None
    if binary:
        out[f"frozen {Path(binary).name}"] = median_wall([str(binary)], args.ready_runs, True, tmp)
    return out


# --------------------------------------------------------------------------- sidecar over the pipe


def bench_pipe(args: argparse.Namespace, tmp: Path, rng: random.Random) -> dict[str, Any]:
    results: dict[str, Any] = {"sizes": {}}
    stored, ingest_s = 0, 0.0
    with Sidecar(tmp / "sidecar", python=args.python, stderr=tmp / "sidecar.log", timeout=args.timeout) as sc:
        sc.wait_ready()
        for size in args.sizes:
            log(f"sidecar: filling to {size} memories")
            f = fill(sc, rng, size - stored, args.users, args.batch, quiet=True)
            stored, ingest_s = size, ingest_s + f["seconds"]
            t0 = time.perf_counter()
            sc.compact()
            compact_ms = (time.perf_counter() - t0) * 1000
            compacted = sc.request({"type": "stats"}, "stats")  # disk measured right after compaction
            query_every_user(sc, args.users, rng)
            store_t, query_t, semantic_t = [], [], []
            for _ in range(args.requests):
                store_t.append(
                    sc.timed(
                        {
                            "type": "store",
                            "user_id": user_id(rng.randrange(args.users)),
                            "content": make_message(rng, False),
                            "timestamp": round(time.time(), 3),
                        },
                        "ok",
                    )[1]
                )
                req = {
                    "type": "query",
                    "user_id": user_id(rng.randrange(args.users)),
                    "text": make_question(rng),
                    "limit": 5,
                }
                query_t.append(sc.timed(req, "results")[1])
                semantic_t.append(sc.timed({**req, "text": make_question(rng), "mode": "semantic"}, "results")[1])
            results["sizes"][size] = {
                "store": pct(store_t),
                "query": pct(query_t),
                "query_semantic": pct(semantic_t),
                "compact_ms": compact_ms,
                "disk_bytes": compacted["disk_bytes"],
                "memories": compacted["memories"],
                "disk_per_memory": compacted["disk_bytes"] / compacted["memories"],
                "rss_mb": sc.vm_status().get("VmRSS", 0) / 1024,
            }
            log(
                f"  store p50 {results['sizes'][size]['store']['p50_ms']:.1f} ms, "
                f"query p50 {results['sizes'][size]['query']['p50_ms']:.1f} ms"
            )
        results["ingest_per_s"] = stored / ingest_s
        # 256-token texts through the sidecar, so the peak RSS includes them
        longs = [{"user_id": user_id(i % args.users), "content": LONG_TEXT * 12} for i in range(64)]
        sc.request({"type": "store", "messages": longs}, "ok")
        results["peak_rss_mb"] = sc.vm_status().get("VmHWM", 0) / 1024
        sc.shutdown()
    return results


# --------------------------------------------------------------------------- naive LanceDB


def bench_naive(args: argparse.Namespace, tmp: Path, size: int, rng: random.Random) -> dict[str, Any]:
    import lancedb
    import pyarrow as pa

    from sidecar.messages.schema import message_schema

    dim = 384
    db = lancedb.connect(str(tmp / f"naive-{size}"))
    schema = message_schema(dim)
    nprng = np.random.default_rng(1)

    def rows(n: int) -> pa.Table:
        vec = nprng.normal(size=(n, dim)).astype(np.float32)
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        cols = {
            "id": [f"id-{time.monotonic_ns()}-{i}" for i in range(n)],
            "user_id": [user_id(rng.randrange(args.users)) for _ in range(n)],
            "content": [make_message(rng, False) for _ in range(n)],
            "is_bot": [False] * n,
            "timestamp": [time.time()] * n,
            "message_id": [None] * n,
            "channel_id": [None] * n,
            "reply_to": [None] * n,
            "username": [None] * n,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), dim),
        }
        cols.update(search_text=cols["content"], prev_id=[None] * n, prev2_id=[None] * n)
        return pa.Table.from_pydict(cols, schema=schema)

    table = db.create_table("messages", data=rows(size), schema=schema)
    add_t, query_t = [], []
    for _ in range(args.requests):
        one = rows(1)
        t0 = time.perf_counter()
        table.add(one)
        add_t.append(time.perf_counter() - t0)
        q = nprng.normal(size=dim).astype(np.float32)
        t0 = time.perf_counter()
        (
            table.search(q)
            .distance_type("cosine")  # type: ignore[attr-defined]  # search(vector): a LanceVectorQueryBuilder
            .where(f"user_id = '{user_id(rng.randrange(args.users))}'", prefilter=True)
            .limit(5)
            .to_arrow()
        )
        query_t.append(time.perf_counter() - t0)
    return {"add": pct(add_t), "query": pct(query_t)}


# --------------------------------------------------------------------------- report


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def ratios(p: dict[str, float], single: float, same: float, kind: str) -> str:
    return (
        f"{p['p50_ms'] / single:.1f}x / {p['p99_ms'] / single:.1f}x the short-message floor, "
        f"{p['p50_ms'] / same:.1f}x / {p['p99_ms'] / same:.1f}x the {kind} floor"
    )


def verdicts(p: dict[str, float], single: float, same: float, p50_max: float, p99_max: float) -> str:
    """The issue's target (ratios to the one short message floor), then the like-for-like reading (same kind
    of text)."""

    def ok(floor: float) -> bool:
        return p["p50_ms"] <= p50_max * floor and p["p99_ms"] <= p99_max * floor

    return f"{verdict(ok(single))} (same text: {verdict(ok(same))})"


def p50_95_99(p: dict[str, float]) -> str:
    return f"{p['p50_ms']:.1f} / {p['p95_ms']:.1f} / {p['p99_ms']:.1f} ms"


def report(r: dict[str, Any]) -> tuple[str, list[dict[str, str]]]:
    """The heading line and the table rows (measurement, value, target, verdict)."""
    fl = r["floor"]
    single = fl["single_ms"]
    chat1, question1 = fl["single_chat_ms"], fl["single_question_ms"]
    heading = (
        f"machine: {r['host']}; sidecar {r['version']}; model {Path(fl['model']).name} "
        f"({fl['digest'][:12]}), {fl['threads']} threads; command: {r['command']}"
    )
    rows: list[dict[str, str]] = []

    def row(measurement: str, value: str, target: str = "", ok: str = "") -> None:
        rows.append({"measurement": measurement, "value": value, "target": target, "verdict": ok})

    row('floor: one short message ("hey what\'s up, how was the hiking trip last weekend?")', f"{single:.2f} ms")
    row("floor: one chat message like the `store` requests (median of 300)", f"{chat1:.2f} ms")
    row("floor: one question like the `query` requests (median of 300)", f"{question1:.2f} ms")
    row(f"floor: chat messages, batches of 32 (~{fl['chat_tokens_mean']:.0f} tokens)", f"{fl['chat_per_s']:.0f} msg/s")
    row("floor: 256-token texts, batches of 32", f"{fl['long_per_s']:.0f} texts/s")
    for name, v in r["ready"].items():
        row(f"spawn to ready: {name} (median of {v['runs']})", f"{v['median_ms']:.0f} ms")
    sc = r["ready"]["python -m sidecar"]["median_ms"]
    imp = r["ready"]['python -c "import lancedb"']["median_ms"]
    row(
        "ready target: python -m sidecar <= 1500 ms and < import lancedb",
        f"{sc:.0f} vs {imp:.0f} ms",
        f"<= 1500, < {imp:.0f}",
        verdict(sc <= 1500 and sc < imp),
    )
    pipe = r["sidecar"]
    for size, s in pipe["sizes"].items():
        st, q = s["store"], s["query"]
        at = f"sidecar {int(size):,}:"
        row(
            f"{at} store p50 / p95 / p99",
            f"{p50_95_99(st)} ({ratios(st, single, chat1, 'chat-message')})",
            "p50 <= 2x, p99 <= 6x",
            verdicts(st, single, chat1, 2, 6),
        )
        row(
            f"{at} query (default mode: hybrid) p50 / p95 / p99",
            f"{p50_95_99(q)} ({ratios(q, single, question1, 'question')})",
            "p50 <= 1.5x, p99 <= 4x; p50 <= 15 ms",
            f"{verdicts(q, single, question1, 1.5, 4)}; {verdict(q['p50_ms'] <= 15)}",
        )
        qs = s.get("query_semantic")
        if qs:
            row(
                f"{at} query, mode semantic, p50 / p95 / p99",
                f"{p50_95_99(qs)} ({ratios(qs, single, question1, 'question')})",
                "p50 <= 1.5x, p99 <= 4x",
                verdicts(qs, single, question1, 1.5, 4),
            )
        row(
            f"{at} disk per memory after compaction",
            f"{s['disk_per_memory']:.0f} B",
            "<= 2500 B",
            verdict(s["disk_per_memory"] <= 2500),
        )
        naive = r["naive"].get(str(size)) or r["naive"].get(size)
        if naive:
            row(
                f"naive LanceDB {int(size):,}: add p50 / p99, query p50 / p99 (no embedding)",
                f"{naive['add']['p50_ms']:.1f} / {naive['add']['p99_ms']:.1f}, "
                f"{naive['query']['p50_ms']:.1f} / {naive['query']['p99_ms']:.1f} ms",
            )
    ing = pipe["ingest_per_s"]
    row(
        "batch-store ingest",
        f"{ing:.0f} msg/s ({ing / fl['chat_per_s']:.2f}x floor)",
        ">= 0.85x",
        verdict(ing >= 0.85 * fl["chat_per_s"]),
    )
    row(
        "sidecar peak RSS (VmHWM, whole run, 256-token texts included)",
        f"{pipe['peak_rss_mb']:.0f} MB",
        "<= 300 MB",
        verdict(pipe["peak_rss_mb"] <= 300),
    )
    return heading, rows


def run(args: argparse.Namespace) -> int:
    args.sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(args.seed)
    from sidecar import __version__

    r: dict[str, Any] = {
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) or "bench.py core",
        "host": f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "version": __version__,
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    with tempfile.TemporaryDirectory(prefix="sidecar-bench-") as tmp_s:
        tmp = Path(tmp_s)
        log("floor")
        r["floor"] = bench_floor(args.threads, rng)
        log("spawn to ready")
        r["ready"] = bench_ready(args, tmp)
        r["sidecar"] = bench_pipe(args, tmp, rng)
        r["naive"] = {}
        if not args.skip_naive:
            for size in args.sizes:
                log(f"naive LanceDB at {size}")
                r["naive"][str(size)] = bench_naive(args, tmp, size, rng)
    heading, rows = report(r)
    print_table(rows, title=heading)
    write_json(args.json, r)
    log(f"JSON written to {args.json}")
    return 0
