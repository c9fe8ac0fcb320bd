"""What a desktop's task manager shows: the sidecar's private memory beside its RSS, and the time from spawn
to the first `query` answered.

    python scripts/bench.py footprint                           # 5 spawns, then 10k memories, then 1 MB
    python scripts/bench.py footprint --rows 100000 --big-bytes 0
    python scripts/bench.py footprint --binary dist/memory-sidecar --rows 0 --big-bytes 0
    python scripts/bench.py footprint --model-dir DIR --model intfloat/multilingual-e5-small

Private memory is the resident anonymous memory of the process, `RssAnon` in /proc/PID/status (the
`Anonymous` of /proc/PID/smaps_rollup): the heaps, the model's tensors, the copied-on-write pages of the
libraries' data. It leaves out the clean pages of mapped files (the libraries' code, a model file mapped
read-only), which the system shares and can drop at will. That is what Windows' task manager counts as a
process's private working set and what macOS's Activity Monitor shows as its memory footprint (dirty and
compressed private pages); RSS, which adds the mapped files' resident pages, is shown beside it. Both are
sampled every `--interval` seconds (50 ms) on a thread, so a peak between two requests is seen.

1. `--runs` spawns on a fresh data dir each: a `query` is written at once, before `ready` (a host that does
   not wait), so the time to its answer is spawn to the first answer; then a `store` and two queries (the
   first answers). Private memory and RSS `--settle` seconds after them (idle: past the server's periodic
   malloc_trim), and the peaks until then; medians of the runs.
2. One more sidecar, filled by batch `store` to `--rows` memories over `--users` users, compacted, every
   user queried once: private memory and RSS then, and the peaks while filling.
3. The same sidecar stores one memory of `--big-bytes` bytes and embeds its chunks: the peaks meanwhile and
   the values when its chunks are all in.

Linux only (/proc). Results on stdout (a table; `--json FILE` writes everything), progress on stderr.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .client import BenchError, Sidecar, add_sidecar_arguments, compile_package
from .long_memories import long_turn
from .output import log, print_table, write_json
from .procfs import status_kib
from .workload import fill, make_question, user_id

SUMMARY = "private memory (what a desktop counts) beside RSS, and spawn to the first answer"
MIB = 1024.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=5, help="spawns for the first answers (medians of these)")
    parser.add_argument("--rows", type=int, default=10_000, help="memories for step 2 (0: skip steps 2 and 3)")
    parser.add_argument("--users", type=int, default=100, help="users the memories of step 2 are spread over")
    parser.add_argument("--batch", type=int, default=500, help="messages per batch store in step 2")
    parser.add_argument("--big-bytes", type=int, default=1_000_000, help="the long memory of step 3 (0: skip)")
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between two samples")
    parser.add_argument(
        "--settle",
        type=float,
        default=6.0,
        help="seconds idle before a state's figures are read: past the server's periodic malloc_trim (every 5 s), "
        "so they are what an idle sidecar holds; the peaks include everything before",
    )
    parser.add_argument("--binary", type=Path, help="a frozen binary (onefile or onedir executable) to spawn instead")
    parser.add_argument("--model", help="--model for the sidecar")
    parser.add_argument("--model-dir", type=Path, help="--model-dir for the sidecar")
    parser.add_argument("--arg", action="append", default=[], help="one more sidecar flag (repeat; --arg=--x)")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument("--seed", type=int, default=5, help="seed of the generated text")
    add_sidecar_arguments(parser, timeout=900.0)


class Sampler:
    """VmRSS and RssAnon of one process every `interval` seconds on a thread; `peaks()` since the last `reset`."""

    def __init__(self, pid: int, interval: float):
        self.pid, self.interval = pid, interval
        self._lock = threading.Lock()
        self._peak = {"rss": 0.0, "private": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="footprint", daemon=True)
        self._thread.start()

    def now(self) -> dict[str, float]:
        """MiB now: {"rss", "private"} of the process and its descendants (a onefile binary's launcher runs the
        sidecar as its child; a task manager shows both); zeros once they are gone."""
        out = {"rss": 0.0, "private": 0.0}
        for pid in tree(self.pid):
            try:
                s = status_kib(pid)
            except OSError:
                continue
            out["rss"] += s.get("VmRSS", 0) / MIB
            out["private"] += s.get("RssAnon", 0) / MIB
        return out

    def _poll(self) -> None:
        while not self._stop.is_set():
            m = self.now()
            with self._lock:
                for k, v in m.items():
                    self._peak[k] = max(self._peak[k], v)
            self._stop.wait(self.interval)

    def peaks(self, reset: bool = False) -> dict[str, float]:
        m = self.now()
        with self._lock:
            out = {k: max(v, m[k]) for k, v in self._peak.items()}
            if reset:
                self._peak = dict(m)
        return out

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def tree(pid: int) -> list[int]:
    """`pid` and its descendants (/proc/PID/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def sidecar_args(args: argparse.Namespace) -> list[str]:
    out = list(args.arg)
    if args.model:
        out += ["--model", args.model]
    if args.model_dir:
        out += ["--model-dir", str(args.model_dir)]
    return out


def spawn(args: argparse.Namespace, data: Path, log_path: Path) -> Sidecar:
    command = [str(args.binary)] if args.binary else None
    return Sidecar(data, sidecar_args(args), python=args.python, command=command, stderr=log_path, timeout=args.timeout)


def first_answers(args: argparse.Namespace, tmp: Path, run: int, rng: random.Random) -> dict[str, float]:
    """One spawn: a query written at once, spawn to `ready` and to its answer; then a store and two queries."""
    with spawn(args, tmp / f"first-{run}", tmp / f"first-{run}.log") as sc:
        sampler = Sampler(sc.pid, args.interval)
        try:
            sc.send({"type": "query", "user_id": "u0", "text": "what did I say about the trip?"})
            ready = answer = None
            while answer is None:
                line = sc.read()
                t = time.perf_counter() - sc.t_spawn
                if line.get("type") == "ready":
                    ready = t
                elif line.get("type") == "results":
                    answer = t
                else:
                    raise sc.fail(f"expected ready or results, got {line}")
            if ready is None:
                raise BenchError("the first query was answered before the ready line")
            sc.request({"type": "store", "user_id": "u0", "content": "we hiked up to the lake last weekend"}, "ok")
            for _ in range(2):
                sc.request({"type": "query", "user_id": "u0", "text": make_question(rng)}, "results")
            time.sleep(args.settle)  # what the first answers left behind, once idle
            now, peak = sampler.now(), sampler.peaks()
        finally:
            sampler.stop()
        sc.shutdown()
    return {
        "ready_s": ready,
        "first_answer_s": answer,
        "private": now["private"],
        "rss": now["rss"],
        "peak_private": peak["private"],
        "peak_rss": peak["rss"],
    }


def chunks_pending(sc: Sidecar) -> int:
    return int(sc.request({"type": "stats"}, "stats")["chunks"]["pending"])


def at_scale(args: argparse.Namespace, tmp: Path, rng: random.Random) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with spawn(args, tmp / "scale", tmp / "scale.log") as sc:
        sc.wait_ready()
        sampler = Sampler(sc.pid, args.interval)
        try:
            sampler.peaks(reset=True)
            log(f"footprint: filling to {args.rows} memories over {args.users} users")
            fill(sc, rng, args.rows, args.users, args.batch, quiet=True)
            sc.compact()
            for u in range(args.users):
                sc.request({"type": "query", "user_id": user_id(u), "text": make_question(rng)}, "results")
            time.sleep(args.settle)
            now, peak = sampler.now(), sampler.peaks(reset=True)
            rows.append(row(f"{args.rows:,} memories over {args.users} users, each queried", now, peak))
            if args.big_bytes:
                log(f"footprint: one memory of {args.big_bytes:,} bytes")
                text = long_turn(rng, args.big_bytes, args.big_bytes)
                sc.request({"type": "store", "user_id": "big", "content": text}, "ok")
                t0 = time.perf_counter()
                deadline = t0 + args.timeout
                while chunks_pending(sc):
                    if time.perf_counter() > deadline:
                        raise sc.fail(f"the long memory's chunks were not in within {args.timeout:g} s")
                    time.sleep(1.0)
                took = time.perf_counter() - t0
                time.sleep(args.settle)
                now, peak = sampler.now(), sampler.peaks(reset=True)
                rows.append(row(f"+ one {args.big_bytes:,}-byte memory, chunked in {took:.0f} s", now, peak))
        finally:
            sampler.stop()
        sc.shutdown()
    return rows


def row(what: str, now: dict[str, float], peak: dict[str, float]) -> dict[str, Any]:
    return {
        "state": what,
        "private MiB": now["private"],
        "peak private MiB": peak["private"],
        "RSS MiB": now["rss"],
        "peak RSS MiB": peak["rss"],
    }


def run(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    if not args.binary:
        compile_package(args.python)
    what = f"binary {args.binary}" if args.binary else "source"
    out: dict[str, Any] = {"what": what, "args": sidecar_args(args)}
    with tempfile.TemporaryDirectory(prefix="bench-footprint-") as tmp_s:
        tmp = Path(tmp_s)
        runs = []
        for i in range(args.runs):
            runs.append(first_answers(args, tmp, i, rng))
            log(f"footprint: run {i + 1}/{args.runs}: " + ", ".join(f"{k} {v:.2f}" for k, v in runs[-1].items()))
        out["runs"] = runs
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]} if runs else {}
        rows = []
        if med:
            rows.append(
                row(
                    f"after the first answers (median of {len(runs)} spawns)",
                    {"private": med["private"], "rss": med["rss"]},
                    {"private": med["peak_private"], "rss": med["peak_rss"]},
                )
            )
        if args.rows:
            rows += at_scale(args, tmp, rng)
        out["rows"] = rows
    print_table(rows, title=f"Footprint ({out['what']}), MiB; peaks sampled every {args.interval * 1000:.0f} ms")
    if med:
        print(
            f"\nspawn to ready {med['ready_s']:.2f} s, spawn to the first query answered {med['first_answer_s']:.2f} s "
            f"(medians of {len(runs)}; runs: " + ", ".join(f"{r['first_answer_s']:.2f}" for r in runs) + ")"
        )
    if args.json:
        write_json(args.json, out)
    return 0
