#!/usr/bin/env python3
"""memory-sidecar benchmark: the sidecar over its real pipe, measured against its own floor.

All in one run, so the ratios hold even on a noisy machine:

  floor      the same ONNX model and tokenizer called directly in this process (no pipe, no store):
             one short message; batches of chat messages (~25 tokens); batches of 256-token texts
  ready      spawn -> `ready` line for `python -m sidecar` (empty data dir), for a frozen binary when
             one is given or found in dist/, and `python -c "import lancedb"` timed the same way
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
Example: python scripts/bench.py --sizes 10000,100000      (1M: --sizes 10000,100000,1000000)
"""

from __future__ import annotations

import argparse
import json
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from bench_core import Sidecar, fill, make_message, make_question, pct, user_id  # noqa: E402

LONG_TEXT = ("The committee reviewed the proposal in detail and asked for revised budget figures, a clearer "
             "timeline, and a risk assessment covering supply delays, staffing changes and regulatory review. ")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- floor


def bench_floor(threads: int, rng: random.Random) -> dict[str, Any]:
    from sidecar.embedder import Embedder
    from sidecar.model import resolve_model

    files = resolve_model(None, offline=True)
    emb = Embedder(files, threads=threads)
    short = "hey what's up, how was the hiking trip last weekend?"
    for _ in range(20):
        emb.embed([short])
    single = []
    for _ in range(300):
        t0 = time.perf_counter()
        emb.embed([short])
        single.append(time.perf_counter() - t0)
    # the same kinds of text the pipe benchmark sends, one at a time: the fair floor of each request
    def one_at_a_time(texts: list[str]) -> float:
        times = []
        for t in texts:
            t0 = time.perf_counter()
            emb.embed([t])
            times.append(time.perf_counter() - t0)
        return float(np.median(times) * 1000)

    chat_one = one_at_a_time([make_message(rng, False) for _ in range(300)])
    question_one = one_at_a_time([make_question(rng) for _ in range(300)])
    chats = [make_message(rng, rng.random() < 0.15) for _ in range(640)]
    tokens = statistics.mean(len(e.ids) for e in emb._tokenizer.encode_batch(chats))
    t0 = time.perf_counter()
    for i in range(0, len(chats), 32):
        emb.embed(chats[i:i + 32])
    chat_rate = len(chats) / (time.perf_counter() - t0)
    longs = [LONG_TEXT * 12 + str(i) for i in range(64)]  # truncated at 256 tokens
    t0 = time.perf_counter()
    for i in range(0, len(longs), 32):
        emb.embed(longs[i:i + 32])
    long_rate = len(longs) / (time.perf_counter() - t0)
    return {"model": str(files.onnx), "digest": files.digest, "threads": threads,
            "single_ms": float(np.median(single) * 1000), "single": pct(single),
            "single_chat_ms": chat_one, "single_question_ms": question_one,
            "chat_tokens_mean": tokens, "chat_per_s": chat_rate, "long_per_s": long_rate}


# --------------------------------------------------------------------------- ready


def _median_wall(cmd: list[str], runs: int, ready_line: bool, tmp: Path) -> dict[str, Any]:
    walls = []
    for i in range(runs):
        data = tmp / f"ready-{time.monotonic_ns()}"
        t0 = time.perf_counter()
        if ready_line:
            proc = subprocess.Popen([*cmd, "--data-dir", str(data), "--ttl-days", "0"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            line = proc.stdout.readline()
            walls.append(time.perf_counter() - t0)
            if b'"ready"' not in line:
                raise RuntimeError(f"{cmd}: no ready line: {line[:300]!r}")
            proc.stdin.write(b'{"type":"shutdown"}\n')
            proc.stdin.close()
            proc.wait(60)
        else:
            subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            walls.append(time.perf_counter() - t0)
        shutil.rmtree(data, ignore_errors=True)
    return {"median_ms": statistics.median(walls) * 1000, "min_ms": min(walls) * 1000, "runs": runs}


def bench_ready(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    out = {"python -m sidecar": _median_wall([args.python, "-m", "sidecar"], args.ready_runs, True, tmp),
           'python -c "import lancedb"': _median_wall([args.python, "-c", "import lancedb"], args.ready_runs,
                                                       False, tmp)}
    binary = args.binary
    if binary is None:
        found = sorted((ROOT / "dist").glob("memory-sidecar-*/memory-sidecar*")) + sorted(
            p for p in (ROOT / "dist").glob("memory-sidecar-*") if p.is_file())
        binary = found[0] if found else None
    if binary:
        out[f"frozen {Path(binary).name}"] = _median_wall([str(binary)], args.ready_runs, True, tmp)
    return out


# --------------------------------------------------------------------------- sidecar over the pipe


def bench_pipe(args: argparse.Namespace, tmp: Path, rng: random.Random) -> dict[str, Any]:
    data = tmp / "sidecar"
    sc = Sidecar(args.python, data, tmp / "sidecar.log", args.timeout, ["--ttl-days", "0"])
    sc.wait_ready()
    results: dict[str, Any] = {"sizes": {}}
    stored, ingest_s = 0, 0.0
    try:
        for size in args.sizes:
            log(f"sidecar: filling to {size} memories")
            step = argparse.Namespace(rows=size - stored, users=args.users, batch=args.batch, quiet=True)
            f = fill(sc, step, rng)
            stored, ingest_s = size, ingest_s + f["seconds"]
            t0 = time.perf_counter()
            sc.request({"type": "cleanup", "ttl_days": 36500}, "ok")  # compacts
            compact_ms = (time.perf_counter() - t0) * 1000
            compacted = sc.request({"type": "stats"}, "stats")  # disk measured right after compaction
            for u in range(args.users):  # warm-up: every user queried once (as the start-up warm-up does)
                sc.request({"type": "query", "user_id": user_id(u), "text": make_question(rng), "limit": 5},
                           "results")
            store_t, query_t, semantic_t = [], [], []
            for i in range(args.requests):
                req = {"type": "store", "user_id": user_id(rng.randrange(args.users)),
                       "content": make_message(rng, False), "timestamp": round(time.time(), 3)}
                t0 = time.perf_counter()
                sc.request(req, "ok")
                store_t.append(time.perf_counter() - t0)
                req = {"type": "query", "user_id": user_id(rng.randrange(args.users)), "text": make_question(rng),
                       "limit": 5}
                t0 = time.perf_counter()
                sc.request(req, "results")
                query_t.append(time.perf_counter() - t0)
                req = {**req, "text": make_question(rng), "mode": "semantic"}
                t0 = time.perf_counter()
                sc.request(req, "results")
                semantic_t.append(time.perf_counter() - t0)
            results["sizes"][size] = {"store": pct(store_t), "query": pct(query_t), "query_semantic": pct(semantic_t),
                                      "compact_ms": compact_ms,
                                      "disk_bytes": compacted["disk_bytes"], "memories": compacted["memories"],
                                      "disk_per_memory": compacted["disk_bytes"] / compacted["memories"],
                                      "rss_mb": sc.vm_status().get("VmRSS", 0) / 1024}
            log(f"  store p50 {results['sizes'][size]['store']['p50_ms']:.1f} ms, "
                f"query p50 {results['sizes'][size]['query']['p50_ms']:.1f} ms")
        results["ingest_per_s"] = stored / ingest_s
        # 256-token texts through the sidecar, so the peak RSS includes them
        longs = [{"user_id": user_id(i % args.users), "content": LONG_TEXT * 12} for i in range(64)]
        sc.request({"type": "store", "messages": longs}, "ok")
        results["peak_rss_mb"] = sc.vm_status().get("VmHWM", 0) / 1024
        sc.shutdown()
    except BaseException:
        sc.kill()
        raise
    return results


# --------------------------------------------------------------------------- naive LanceDB


def bench_naive(args: argparse.Namespace, tmp: Path, size: int, rng: random.Random) -> dict[str, Any]:
    import lancedb
    import pyarrow as pa

    from sidecar.store import message_schema

    dim = 384
    db = lancedb.connect(str(tmp / f"naive-{size}"))
    schema = message_schema(dim)
    nprng = np.random.default_rng(1)

    def rows(n: int) -> pa.Table:
        vec = nprng.normal(size=(n, dim)).astype(np.float32)
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        cols = {"id": [f"id-{time.monotonic_ns()}-{i}" for i in range(n)],
                "user_id": [user_id(rng.randrange(args.users)) for _ in range(n)],
                "content": [make_message(rng, False) for _ in range(n)], "is_bot": [False] * n,
                "timestamp": [time.time()] * n, "message_id": [None] * n, "channel_id": [None] * n,
                "reply_to": [None] * n, "username": [None] * n,
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), dim)}
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
        (table.search(q).distance_type("cosine").where(f"user_id = '{user_id(rng.randrange(args.users))}'",
                                                       prefilter=True).limit(5).to_arrow())
        query_t.append(time.perf_counter() - t0)
    return {"add": pct(add_t), "query": pct(query_t)}


# --------------------------------------------------------------------------- report


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def ratios(p: dict[str, float], single: float, same: float, kind: str) -> str:
    return (f"{p['p50_ms'] / single:.1f}x / {p['p99_ms'] / single:.1f}x the short-message floor, "
            f"{p['p50_ms'] / same:.1f}x / {p['p99_ms'] / same:.1f}x the {kind} floor")


def verdicts(p: dict[str, float], single: float, same: float, p50_max: float, p99_max: float) -> str:
    """The issue's target (ratios to the one short message floor), then the like-for-like reading (same kind of text)."""
    def ok(floor: float) -> bool:
        return p["p50_ms"] <= p50_max * floor and p["p99_ms"] <= p99_max * floor
    return f"{verdict(ok(single))} (same text: {verdict(ok(same))})"


def report(r: dict[str, Any]) -> str:
    fl = r["floor"]
    single = fl["single_ms"]
    chat1, question1 = fl["single_chat_ms"], fl["single_question_ms"]
    lines = [f"machine: {r['host']}; sidecar {r['version']}; model {Path(fl['model']).name} "
             f"({fl['digest'][:12]}), {fl['threads']} threads; command: {r['command']}", "",
             "| measurement | value | target | |", "|---|---|---|---|",
             f"| floor: one short message (\"hey what's up, how was the hiking trip last weekend?\") | {single:.2f} ms | | |",
             f"| floor: one chat message like the `store` requests (median of 300) | {chat1:.2f} ms | | |",
             f"| floor: one question like the `query` requests (median of 300) | {question1:.2f} ms | | |",
             f"| floor: chat messages, batches of 32 (~{fl['chat_tokens_mean']:.0f} tokens) | "
             f"{fl['chat_per_s']:.0f} msg/s | | |",
             f"| floor: 256-token texts, batches of 32 | {fl['long_per_s']:.0f} texts/s | | |"]
    for name, v in r["ready"].items():
        lines.append(f"| spawn to ready: {name} (median of {v['runs']}) | {v['median_ms']:.0f} ms | | |")
    sc = r["ready"]["python -m sidecar"]["median_ms"]
    imp = r["ready"]['python -c "import lancedb"']["median_ms"]
    lines.append(f"| ready target: python -m sidecar <= 1500 ms and < import lancedb | {sc:.0f} vs {imp:.0f} ms | "
                 f"<= 1500, < {imp:.0f} | {verdict(sc <= 1500 and sc < imp)} |")
    pipe = r["sidecar"]
    for size, s in pipe["sizes"].items():
        st, q = s["store"], s["query"]
        lines += [
            f"| sidecar {int(size):,}: store p50 / p95 / p99 | {st['p50_ms']:.1f} / {st['p95_ms']:.1f} / "
            f"{st['p99_ms']:.1f} ms ({ratios(st, single, chat1, 'chat-message')}) | p50 <= 2x, p99 <= 6x | "
            f"{verdicts(st, single, chat1, 2, 6)} |",
            f"| sidecar {int(size):,}: query (default mode: hybrid) p50 / p95 / p99 | {q['p50_ms']:.1f} / "
            f"{q['p95_ms']:.1f} / {q['p99_ms']:.1f} ms ({ratios(q, single, question1, 'question')}) | "
            f"p50 <= 1.5x, p99 <= 4x; p50 <= 15 ms | {verdicts(q, single, question1, 1.5, 4)}; "
            f"{verdict(q['p50_ms'] <= 15)} |",
        ]
        qs = s.get("query_semantic")
        if qs:
            lines.append(
                f"| sidecar {int(size):,}: query, mode semantic, p50 / p95 / p99 | {qs['p50_ms']:.1f} / "
                f"{qs['p95_ms']:.1f} / {qs['p99_ms']:.1f} ms ({ratios(qs, single, question1, 'question')}) | "
                f"p50 <= 1.5x, p99 <= 4x | {verdicts(qs, single, question1, 1.5, 4)} |")
        lines += [
            f"| sidecar {int(size):,}: disk per memory after compaction | {s['disk_per_memory']:.0f} B | "
            f"<= 2500 B | {verdict(s['disk_per_memory'] <= 2500)} |",
        ]
        naive = r["naive"].get(str(size)) or r["naive"].get(size)
        if naive:
            lines.append(f"| naive LanceDB {int(size):,}: add p50 / p99, query p50 / p99 (no embedding) | "
                         f"{naive['add']['p50_ms']:.1f} / {naive['add']['p99_ms']:.1f}, "
                         f"{naive['query']['p50_ms']:.1f} / {naive['query']['p99_ms']:.1f} ms | | |")
    ing = pipe["ingest_per_s"]
    lines.append(f"| batch-store ingest | {ing:.0f} msg/s ({ing / fl['chat_per_s']:.2f}x floor) | >= 0.85x | "
                 f"{verdict(ing >= 0.85 * fl['chat_per_s'])} |")
    lines.append(f"| sidecar peak RSS (VmHWM, whole run, 256-token texts included) | {pipe['peak_rss_mb']:.0f} MB | "
                 f"<= 300 MB | {verdict(pipe['peak_rss_mb'] <= 300)} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="memory counts to measure at, ascending")
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--requests", type=int, default=300, help="sequential store and query requests per size")
    parser.add_argument("--batch", type=int, default=1000, help="messages per batch store while filling")
    parser.add_argument("--ready-runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime threads of the floor")
    parser.add_argument("--binary", type=Path, help="frozen sidecar binary to time as well (default: dist/)")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument("--json", type=Path, default=Path("bench-results/bench.json"))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(args.seed)
    from sidecar import __version__

    r: dict[str, Any] = {"command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) or "bench.py",
                         "host": f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
                         "version": __version__, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
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
    text = report(r)
    print(text)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(r, indent=2, default=str))
    log(f"JSON written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
