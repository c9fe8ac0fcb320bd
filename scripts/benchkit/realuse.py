"""Speed and footprint the way hosts use the sidecar, each figure beside the model floor measured in the
same run (issue 21's table):

  floor      one short message embedded directly (no pipe, no store), median of 50
  ready      spawn -> `ready` of `python -m sidecar` on an empty data dir (median), and its RSS then and
             a second later, once the warm-up has run (medians over as many spawns); the package's
             bytecode written first, as an installed package has it
  (a)        right after a batch import (--import-rows over --import-users, batch `store`), with no
             idle time and no compaction: --rounds rounds of one `store` and one `query` per mode
  (b)        steady state: a store of --steady-rows over --steady-users (built directly with random
             unit vectors, as `ab` builds its store: no embedding), its graph built by a sidecar left
             on it (--steady-graph), every user queried once, then --rounds rounds as in (a); its peak
             RSS read once the graph has built the rounds' stores too (up to 120 s)
  (c)        long memories: --long-users x --long-turns memories of 1,000-3,000 characters, chunked,
             compacted, then --rounds rounds as in (a), each `store` a long memory too
  cold/warm  the (b) store reopened: every user's first query (their rows read from the table), then a
             query for a user the memory cache evicted (back from the spill on disk, or from the table
             past --cache-disk-mb) against one for a user queried just before; with a cache that holds
             every user there is no cold user, and the run says so (give --cold-cache-mb to make room
             smaller than the store)
  soak       --soak-requests pipelined requests (the `soak` subcommand's chat traffic) through a fresh
             sidecar: throughput of the first and last tenth, steady RSS at the start and in the last
             third, the highest RSS against it; or the figures of an earlier `soak` run (--soak-json)
  rss        each sidecar's peak RSS (VmHWM)
  binaries   for each --binary (a frozen onefile executable, or the executable inside an onedir
             folder): its size on disk and its median spawn -> `ready`

The graph is on (the default) everywhere: its background build after an import is part of real use.

    python scripts/bench.py realuse                       # 10k import, 100k over 1,000 users
    python scripts/bench.py realuse --steady-rows 1000000 --steady-users 10000 --steady-graph building
    python scripts/bench.py realuse --soak-json soak.json --binary dist/onefile/memory-sidecar-x86_64-unknown-linux-gnu
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import ROOT, soak
from .ab import build
from .client import BenchError, Sidecar, add_sidecar_arguments, compile_package
from .graph import floor_ms
from .graph_build import wait_graph_settled
from .long_memories import fill as fill_long
from .long_memories import long_turn
from .output import log, print_table, write_json
from .timeline import rss_timeline
from .timing import pct
from .workload import fill, make_message, make_question, query_every_user, user_id

SUMMARY = "latency and RSS in real use: after an import, steady state, cold users (vs the floor)"
MODES = ("default", "semantic", "keyword")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--import-rows", type=int, default=10_000, help="(a): memories batch-imported (0: skip (a))")
    parser.add_argument("--import-users", type=int, default=100, help="(a): users they are spread over")
    parser.add_argument("--steady-rows", type=int, default=100_000, help="(b): memories in the built store")
    parser.add_argument("--steady-users", type=int, default=1_000, help="(b): users they are spread over")
    parser.add_argument(
        "--steady-graph",
        choices=("built", "building"),
        default="built",
        help="(b): 'built' has a sidecar build the store's graph before anything is timed, as a "
        "store written with the graph on holds it (100k: 10-20 minutes here); 'building' "
        "times (b) while the graph builds the whole store, as after an upgrade (the "
        "quicker choice at 1M)",
    )
    parser.add_argument(
        "--steady-store",
        type=Path,
        default=None,
        help="(b): keep the built store (with its graph, as --steady-graph left it) in this "
        "directory, and on a later run with the same sizes, seed and --steady-graph time "
        "a copy of it instead of building again (the kept store stays as built; one kept by an "
        "older version is migrated in each copy, so build it again after a schema change)",
    )
    parser.add_argument("--rounds", type=int, default=300, help="timed rounds (a store and a query per mode)")
    parser.add_argument(
        "--cold-cache-mb",
        type=int,
        default=None,
        help="cold/warm: run the (b) store again with this --cache-mb (default: the sidecar's)",
    )
    parser.add_argument("--long-users", type=int, default=2, help="(c): users with long memories (0: skip (c))")
    parser.add_argument("--long-turns", type=int, default=400, help="(c): memories per user, 1-3k characters each")
    parser.add_argument(
        "--soak-requests",
        type=int,
        default=20_000,
        help="soak: pipelined requests through a fresh sidecar (0: skip; the issue's figure is 1M, "
        "about 2-3 hours here: run `bench.py soak` apart and pass --soak-json)",
    )
    parser.add_argument("--soak-json", type=Path, help="soak: take the figures from an earlier `soak --out` file")
    parser.add_argument(
        "--binary",
        type=Path,
        action="append",
        default=[],
        help="a frozen executable to size and time to ready (repeatable; build_binary.py builds them)",
    )
    parser.add_argument("--ready-runs", type=int, default=5, help="spawns timed (their median)")
    parser.add_argument(
        "--rss-timeline",
        type=Path,
        default=None,
        help="(b): write its sidecar's RSS every 0.2 s, with its kinds at each new high and the "
        "phases marked, to this JSON file (benchkit/timeline.py)",
    )
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", default="bench-results/realuse.json", help="results file")
    add_sidecar_arguments(parser, timeout=600.0)


def rounds(sc: Sidecar, rng: random.Random, users: int, n: int, long: bool = False) -> dict[str, Any]:
    """n rounds, one request at a time: a `store` (a long memory if `long`), then a `query` in each mode,
    for random users."""
    times: dict[str, list[float]] = {"store": [], **{m: [] for m in MODES}}
    for _ in range(n):
        content = long_turn(rng) if long else make_message(rng, False)
        times["store"].append(
            sc.timed({"type": "store", "user_id": user_id(rng.randrange(users)), "content": content}, "ok")[1]
        )
        for mode in MODES:
            req = {"type": "query", "user_id": user_id(rng.randrange(users)), "text": make_question(rng), "limit": 5}
            if mode != "default":
                req["mode"] = mode
            times[mode].append(sc.timed(req, "results")[1])
    return {kind: pct(t) for kind, t in times.items()}


def state_a(args: argparse.Namespace, tmp: Path, rng: random.Random) -> dict[str, Any] | None:
    if args.import_rows <= 0:
        return None
    with Sidecar(tmp / "a", python=args.python, stderr=tmp / "a.log", timeout=args.timeout) as sc:
        sc.wait_ready()
        log(f"(a) importing {args.import_rows} memories over {args.import_users} users")
        ingest = fill(sc, rng, args.import_rows, args.import_users, 1000, quiet=True)
        out = rounds(sc, rng, args.import_users, args.rounds)
        out["ingest_per_s"] = args.import_rows / ingest["seconds"]
        out["peak_rss_mb"] = sc.vm_status().get("VmHWM", 0) / 1024
        sc.shutdown()
    return out


def kept_or_made(kept: Path | None, made_as: dict[str, Any], data: Path, make: Callable[[], None]) -> bool:
    """`data` copied from the store kept in `kept` when it was made as `made_as` (True), else made by `make`
    and, when `kept` is given, kept there (its description written last: a half-copied store is made again)."""
    described = kept / "built.json" if kept is not None else None
    if (
        kept is not None
        and described is not None
        and described.exists()
        and json.loads(described.read_text()) == made_as
    ):
        shutil.copytree(kept / "data", data)
        return True
    make()
    if kept is not None and described is not None:
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(data, kept / "data")
        described.write_text(json.dumps(made_as))
    return False


def state_b(args: argparse.Namespace, tmp: Path, rng: random.Random) -> dict[str, Any]:
    data = tmp / "b"

    def make() -> None:
        log(f"(b) building {args.steady_rows} memories over {args.steady_users} users (random vectors)")
        build(data, args.steady_rows, args.steady_users, args.seed)
        if args.steady_graph == "built":
            build_graph(args, data, tmp)

    made_as = {"rows": args.steady_rows, "users": args.steady_users, "seed": args.seed, "graph": args.steady_graph}
    if kept_or_made(args.steady_store, made_as, data, make):
        log(f"(b) a copy of the store kept in {args.steady_store}")
    with (
        Sidecar(data, python=args.python, stderr=tmp / "b.log", timeout=args.timeout) as sc,
        rss_timeline(args.rss_timeline, sc.pid) as timeline,
    ):
        sc.wait_ready()
        timeline.mark("ready")
        query_every_user(sc, args.steady_users, rng)
        timeline.mark("every user queried")
        out = rounds(sc, rng, args.steady_users, args.rounds)
        timeline.mark("rounds done")
        out["rounds_peak_rss_mb"] = sc.vm_status().get("VmHWM", 0) / 1024
        out["graph"], out["graph_wait_s"] = args.steady_graph, graph_quiet(sc, GRAPH_WAIT_S)
        timeline.mark("graph waited for")
        out["peak_rss_mb"] = sc.vm_status().get("VmHWM", 0) / 1024  # the graph's build of the rounds' stores too
        out["rows"] = args.steady_rows
        out["cache"] = sc.request({"type": "stats"}, "stats").get("cache")
        sc.shutdown()
    flags = ["--cache-mb", str(args.cold_cache_mb)] if args.cold_cache_mb is not None else []
    with Sidecar(data, flags, python=args.python, stderr=tmp / "cold.log", timeout=args.timeout) as sc:
        sc.wait_ready()
        first = []  # in order: the first users are the least recently used
        for u in range(args.steady_users):  # each user's first query reads their rows from the table
            first.append(
                sc.timed({"type": "query", "user_id": user_id(u), "text": make_question(rng), "limit": 5}, "results")[1]
            )
        cache = sc.request({"type": "stats"}, "stats")["cache"]
        cached = cache["users"]
        out["cold"] = None
        if cached < args.steady_users:
            n = min(args.rounds, args.steady_users - cached)
            cold, warm = [], []
            for i in range(n):  # each cold query evicts the next least recently used user, never a warm one
                q = {"type": "query", "user_id": user_id(i), "text": make_question(rng), "limit": 5}
                cold.append(sc.timed(q, "results")[1])
                w = {**q, "user_id": user_id(args.steady_users - 1 - i % max(1, cached // 4))}
                warm.append(sc.timed(w, "results")[1])
            out["cold"] = {
                "cold": pct(cold),
                "warm": pct(warm),
                "cached_users": cached,
                "first": pct(first),
                "spilled_users": cache.get("spilled_users", 0),
            }
        out["reopened_peak_rss_mb"] = sc.vm_status().get("VmHWM", 0) / 1024
        out["reopened_cache_mb"] = args.cold_cache_mb
        sc.shutdown()
    return out


GRAPH_WAIT_S = 120.0  # after (b)'s rounds: how long the graph may take to build their stores


def graph_quiet(sc: Sidecar, limit_s: float) -> float | None:
    """Wait (up to limit_s) for the graph builder's queue to empty, then 5 s more (a consolidation pass is
    due after 200 new episodes); the seconds it took, or None if the queue never emptied (a whole store
    still being built) or the graph is off."""
    t0 = time.perf_counter()
    if not sc.request({"type": "health"}, "health")["graph"]["enabled"]:
        return None
    try:
        wait_graph_settled(sc, True, limit_s)
    except BenchError:
        return None
    time.sleep(5.0)
    return time.perf_counter() - t0


def build_graph(args: argparse.Namespace, data: Path, tmp: Path) -> None:
    """A sidecar on the built store until its graph holds every memory (the start-up catch-up)."""
    t0 = time.perf_counter()
    with Sidecar(data, python=args.python, stderr=tmp / "b-graph.log", timeout=args.timeout) as sc:
        sc.wait_ready()
        enabled = sc.request({"type": "health"}, "health")["graph"]["enabled"]  # off: MEMORY_SIDECAR_GRAPH=0
        wait_graph_settled(sc, enabled, 6 * 3600.0, episodes=args.steady_rows)
        sc.shutdown()
    log(f"(b) the graph built in {time.perf_counter() - t0:.0f} s")


def state_c(args: argparse.Namespace, tmp: Path, rng: random.Random) -> dict[str, Any] | None:
    if args.long_users <= 0:
        return None
    with Sidecar(tmp / "c", python=args.python, stderr=tmp / "c.log", timeout=args.timeout) as sc:
        sc.wait_ready()
        log(f"(c) storing {args.long_turns} long memories for each of {args.long_users} users")
        fill_long(sc, rng, args.long_users, args.long_turns)
        sc.compact()
        out = rounds(sc, rng, args.long_users, args.rounds, long=True)
        out["peak_rss_mb"] = sc.vm_status().get("VmHWM", 0) / 1024
        sc.shutdown()
    return out


def soak_figures(args: argparse.Namespace, tmp: Path) -> dict[str, Any] | None:
    """The soak's deciles: from --soak-json, or from a short soak run here."""
    if args.soak_json is not None:
        import orjson

        return soak.deciles(orjson.loads(args.soak_json.read_bytes())["samples"])
    if args.soak_requests <= 0:
        return None
    log(f"soak: {args.soak_requests} pipelined requests")
    soak_parser = argparse.ArgumentParser()
    soak.add_arguments(soak_parser)  # the soak subcommand's traffic, with its own defaults
    opts = soak_parser.parse_args(
        [
            "--requests",
            str(args.soak_requests),
            "--interval",
            "2",
            "--seed",
            str(args.seed),
            "--out",
            str(tmp / "soak.json"),
        ]
    )
    with Sidecar(tmp / "soak", python=args.python, stderr=tmp / "soak.log", timeout=args.timeout) as sc:
        _, hello = sc.wait_ready()
        samples, failure = soak.stream(opts, sc, hello)
        sc.shutdown()
    if failure:
        raise RuntimeError(f"soak: {failure[0]}")
    return soak.deciles(samples)


def binaries(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Size on disk and median spawn -> ready of each frozen executable given."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from build_binary import spawn_to_ready, tree_bytes

    out = []
    for exe in args.binary:
        onedir = (exe.parent / "_internal").is_dir()
        times = spawn_to_ready([str(exe)], args.ready_runs)
        out.append(
            {
                "path": str(exe),
                "kind": "onedir" if onedir else "onefile",
                "bytes": tree_bytes(exe.parent if onedir else exe),
                "ready_ms": statistics.median(times) * 1000,
            }
        )
    return out


SETTLE_SECONDS = 1.0  # past the warm-up that maintenance starts with the ready line


def ready(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """Over --ready-runs spawns: the median spawn -> ready, and the medians of RSS read as the ready line
    arrives and SETTLE_SECONDS later (the first includes whatever the warm-up has read in by then)."""
    walls, at_line, settled = [], [], []
    compile_package(args.python)
    for i in range(max(1, args.ready_runs)):
        with Sidecar(tmp / f"ready-{i}", python=args.python, stderr=tmp / "ready.log", timeout=args.timeout) as sc:
            walls.append(sc.wait_ready()[0])
            at_line.append(sc.vm_status().get("VmRSS", 0) / 1024)
            time.sleep(SETTLE_SECONDS)
            settled.append(sc.vm_status().get("VmRSS", 0) / 1024)
            sc.shutdown()
    p = pct(walls)
    return {
        "median_ms": p["p50_ms"],
        "min_ms": p["min_ms"],
        "runs": len(walls),
        "rss_mb": statistics.median(at_line),
        "settled_rss_mb": statistics.median(settled),
    }


def ratio_row(label: str, p: dict[str, float], floor: float, p50_max: float, p99_max: float) -> dict[str, str]:
    ok = p["p50_ms"] <= p50_max * floor and p["p99_ms"] <= p99_max * floor
    return {
        "measurement": label,
        "p50 / p99 ms": f"{p['p50_ms']:.1f} / {p['p99_ms']:.1f}",
        "x floor": f"{p['p50_ms'] / floor:.1f}x / {p['p99_ms'] / floor:.1f}x",
        "target": f"<= {p50_max}x / {p99_max}x",
        "": "ok" if ok else "MISSED",
    }


def peak_row(label: str, mb: float, rows: int | None) -> dict[str, str]:
    """A peak RSS against the issue's budget for a store of `rows` (250 MB at 100k, 300 MB at 1M; None: shown
    beside the 100k budget, not judged)."""
    limit = 250 if rows is None or rows <= 100_000 else 300
    return {
        "measurement": label,
        "p50 / p99 ms": f"{mb:.0f} MB",
        "x floor": "",
        "target": f"<= {limit} MB at {'100k' if limit == 250 else '1M'}",
        "": "" if rows is None else ("ok" if mb <= limit else "MISSED"),
    }


def report(r: dict[str, Any]) -> list[dict[str, str]]:
    floor = r["floor_ms"]
    b_rows = r["b"].get("rows", 100_000)  # results written before the row count was recorded: the 100k default
    rows = [
        {
            "measurement": "floor: one short message",
            "p50 / p99 ms": f"{floor:.2f}",
            "x floor": "1x",
            "target": "",
            "": "",
        },
        {
            "measurement": "long floor: a 3,000-character memory (its first window)",
            "p50 / p99 ms": f"{r['floor_long_ms']:.2f}",
            "x floor": "",
            "target": "",
            "": "",
        },
    ]
    for state in ("a", "b", "c"):
        s = r.get(state)
        if s is None:
            continue
        for kind in ("store", *MODES):
            limits = (2.0, 6.0) if kind == "store" else (1.5, 4.0)
            long_store = (state, kind) == ("c", "store")  # a long memory's floor: its first 256-token window
            rows.append(
                ratio_row(
                    f"({state}) {kind}" + (", against the long floor" if long_store else ""),
                    s[kind],
                    r["floor_long_ms"] if long_store else floor,
                    *limits,
                )
            )
        rows.append(peak_row(f"({state}) peak RSS", s["peak_rss_mb"], b_rows if state == "b" else None))
    if "rounds_peak_rss_mb" in r["b"]:  # the peak above waited for the graph to build the rounds' stores
        wait = r["b"]["graph_wait_s"]
        after = (
            f"then {wait:.0f} s of the graph building their stores"
            if wait is not None
            else f"up to {GRAPH_WAIT_S:.0f} s more, the graph still building or off"
        )
        rows.append(
            peak_row(
                f"(b) peak RSS at the rounds' end (graph {r['b']['graph']} before them; the row above: {after})",
                r["b"]["rounds_peak_rss_mb"],
                None,
            )
        )
    if "reopened_peak_rss_mb" in r["b"]:  # every user's first query after a restart, then the cold/warm pairs
        forced = r["b"].get("reopened_cache_mb")
        rows.append(
            peak_row(
                "(b) reopened"
                + (f" with --cache-mb {forced}" if forced is not None else "")
                + ": peak RSS through every user's first query",
                r["b"]["reopened_peak_rss_mb"],
                b_rows,
            )
        )
    cold = r["b"]["cold"]
    if cold:
        ratio = cold["cold"]["p50_ms"] / cold["warm"]["p50_ms"]
        rows.append(
            {
                "measurement": f"cold vs warm query ({cold['cached_users']} users in memory, "
                f"{cold.get('spilled_users', 0)} on disk)",
                "p50 / p99 ms": f"{cold['cold']['p50_ms']:.1f} vs {cold['warm']['p50_ms']:.1f}",
                "x floor": f"{ratio:.1f}x warm",
                "target": "<= 2x warm",
                "": "ok" if ratio <= 2 else "MISSED",
            }
        )
        if "first" in cold:
            rows.append(
                {
                    "measurement": "a user's first query since start (read from the table)",
                    "p50 / p99 ms": f"{cold['first']['p50_ms']:.1f} / {cold['first']['p99_ms']:.1f}",
                    "x floor": f"{cold['first']['p50_ms'] / cold['warm']['p50_ms']:.1f}x warm",
                    "target": "",
                    "": "",
                }
            )
    else:
        rows.append(
            {
                "measurement": "cold vs warm",
                "p50 / p99 ms": "every user fits the cache: no cold user",
                "x floor": "",
                "target": "",
                "": "",
            }
        )
    rows.append(
        {
            "measurement": "ready: python -m sidecar (median), RSS at ready",
            "p50 / p99 ms": f"{r['ready']['median_ms']:.0f} ms, {r['ready']['rss_mb']:.0f} MB",
            "x floor": "",
            "target": "<= 1000 ms, <= 150 MB",
            "": "ok" if r["ready"]["median_ms"] <= 1000 and r["ready"]["rss_mb"] <= 150 else "MISSED",
        }
    )
    if "settled_rss_mb" in r["ready"]:
        rows.append(
            {
                "measurement": f"RSS {SETTLE_SECONDS:.0f} s after ready (warm-up done; median)",
                "p50 / p99 ms": f"{r['ready']['settled_rss_mb']:.0f} MB",
                "x floor": "",
                "target": "",
                "": "",
            }
        )
    if r.get("a"):
        rows.append(
            {
                "measurement": "(a) batch ingest",
                "p50 / p99 ms": f"{r['a']['ingest_per_s']:.0f} msg/s",
                "x floor": "",
                "target": "",
                "": "",
            }
        )
    rows += soak_rows(r.get("soak"))
    for b in r.get("binaries", []):
        size_max, ready_max = (150, None) if b["kind"] == "onedir" else (120, 1500)
        ok = b["bytes"] / 1e6 <= size_max and (ready_max is None or b["ready_ms"] <= ready_max)
        rows.append(
            {
                "measurement": f"frozen {b['kind']}: size, spawn to ready (median)",
                "p50 / p99 ms": f"{b['bytes'] / 1e6:.0f} MB, {b['ready_ms']:.0f} ms",
                "x floor": "",
                "target": f"<= {size_max} MB" + (f", <= {ready_max} ms" if ready_max else ""),
                "": "ok" if ok else "MISSED",
            }
        )
    return rows


def soak_rows(d: dict[str, Any] | None) -> list[dict[str, str]]:
    if not d or "tenth_rps" not in d:
        return (
            []
            if not d
            else [{"measurement": "soak", "p50 / p99 ms": d["message"], "x floor": "", "target": "", "": ""}]
        )
    rps = d["tenth_rps"]
    return [
        {
            "measurement": f"soak of {d['requests']} requests: req/s first vs last tenth",
            "p50 / p99 ms": f"{rps[0]:.0f} vs {rps[-1]:.0f}",
            "x floor": f"{-d['throughput_loss']:+.0%}",
            "target": ">= -10%",
            "": "ok" if d["throughput_loss"] <= 0.10 else "MISSED",
        },
        {
            "measurement": "soak: steady RSS, first tenth vs last third",
            "p50 / p99 ms": f"{d['rss_start_mib']:.0f} vs {d['rss_last_third_mib']:.0f} MiB",
            "x floor": f"{d['rss_growth']:+.0%}",
            "target": "within 10%",
            "": "ok" if abs(d["rss_growth"]) <= 0.10 else "MISSED",
        },
        {
            "measurement": "soak: highest RSS vs the last third's steady RSS",
            "p50 / p99 ms": f"{d['peak_mib']:.0f} MiB",
            "x floor": f"{d['peak_over_steady']:.2f}x",
            "target": "<= 1.3x",
            "": "ok" if d["peak_over_steady"] <= 1.3 else "MISSED",
        },
    ]


def run(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-realuse-") as tmp_name:
        tmp = Path(tmp_name)
        results: dict[str, Any] = {"floor_ms": floor_ms(), "ready": ready(args, tmp)}
        results["floor_long_ms"] = floor_ms(text=long_turn(random.Random(args.seed), 3000, 3000))
        results["a"] = state_a(args, tmp, rng)
        results["b"] = state_b(args, tmp, rng)
        results["c"] = state_c(args, tmp, rng)
        results["soak"] = soak_figures(args, tmp)
        results["binaries"] = binaries(args)
        results["floor_ms_after"] = floor_ms()  # before and after: the machine may have got busier meanwhile
    results["floor_ms"] = statistics.median([results["floor_ms"], results.pop("floor_ms_after")])
    print_table(report(results), title=f"Real use (seed {args.seed}, {time.strftime('%Y-%m-%d')})")
    write_json(args.json, results)
    return 0
