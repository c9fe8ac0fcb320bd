"""Graph memory, the building side: what it costs the request path, ingest and memory, and how fast
consolidation runs. Every figure is measured twice in one run, graph on and `--graph false`, so the
ratios hold on a noisy machine.

  store      single-message `store` latency (one request at a time, --stores messages over 30 users per
             configuration), graph on vs off: the added p50 (target <= 1 ms). Both sidecars are open and
             timed in alternating blocks of STORE_BLOCK stores (which goes first alternates too), each
             block after the graph-on sidecar has built everything before it: a machine that speeds up or
             slows down during the run weighs on both configurations alike
  ingest     batch `store` of --ingest generated messages (batches of 200), graph on vs off: messages/s
             (target: graph on >= 0.85 x off), then RSS (VmRSS and VmHWM) with every message built into
             the graph, twice: at once (a snapshot, which may catch the builder's or a consolidation's
             working memory) and held (target: <= 50 MB added at 100k episodes; --ingest 100000 for that
             figure): with every message built and, graph on, consolidated (one `consolidate`, which
             the background schedule would run within minutes), the median of one sample a second over
             HELD_SECONDS (a malloc_trim tick falls in it); and the RSS by kind of mapping (--json;
             procfs.rss_by_kind_mib), LanceDB's library code resident and Python's object arenas (now and
             at their high-water mark, pyheap.py) for where the difference lies
  catch-up   the graph-off store reopened with the graph on, as after an import or an upgrade: its start-up
             catch-up builds every message; seconds from `ready` until the graph holds them all, CPU
             seconds, RSS then, and the episode rows written against the messages (no duplicates)
  locomo     the LoCoMo conversations (one user each) stored, then one `consolidate` of every user:
             seconds, CPU seconds, episodes, traces, links (target: the ten conversations, about 5,900
             turns, <= 60 s). The vector cache holds the users (new users are cached at their first
             store) and consolidation reads their rows from it; --locomo-uncached runs this sidecar with
             `--cache-mb 0`, so every read goes to the table (as all did before 2026-11-25)

    python scripts/bench.py graph-build                     # defaults: a few minutes
    python scripts/bench.py graph-build --ingest 100000     # the 100k RSS figure (about 15 minutes)
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import pyheap
from .client import Sidecar, add_sidecar_arguments
from .locomo import DEFAULT_DIR, load, turns
from .output import log, print_table, write_json
from .procfs import cpu_seconds, rss_by_kind_mib, rss_of_file_mib
from .timing import pct
from .workload import fill, make_message, user_id

HELD_SECONDS = 10
STORE_BLOCK = 50

SUMMARY = "graph memory: store cost, ingest, RSS, consolidation time (graph on vs off)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stores", type=int, default=300, help="single-message stores timed per configuration")
    parser.add_argument("--ingest", type=int, default=10_000, help="messages batch-stored per configuration")
    parser.add_argument("--locomo", type=Path, default=DEFAULT_DIR, help="LoCoMo conversation files or folder")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--locomo-uncached",
        action="store_true",
        help="consolidate LoCoMo with the vector cache off (every row read from the table)",
    )
    add_sidecar_arguments(parser, timeout=600.0)
    parser.add_argument("--json", type=Path, help="write all results here")


def _rss(sc: Sidecar) -> dict[str, Any]:
    st = sc.vm_status()
    return {
        "rss_mib": st.get("VmRSS", 0) / 1024,
        "hwm_mib": st.get("VmHWM", 0) / 1024,
        "rss_by_kind_mib": rss_by_kind_mib(sc.pid),
        "lancedb_code_mib": rss_of_file_mib(sc.pid, "_lancedb"),
    }


def held_rss(sc: Sidecar, seconds: int = HELD_SECONDS) -> dict[str, Any]:
    """What the process holds once quiet: of one sample a second over `seconds`, the median one (by VmRSS)."""
    samples = []
    for _ in range(seconds):
        time.sleep(1.0)
        samples.append(_rss(sc))
    return sorted(samples, key=lambda s: s["rss_mib"])[len(samples) // 2]


def wait_graph_settled(sc: Sidecar, graph: bool, limit_s: float = 3600.0, episodes: int = 0) -> None:
    """Wait until the graph has built everything stored: `health` says its queue is empty and it holds at
    least `episodes` episodes (a start-up catch-up may not have queued anything yet); progress logged every
    30 s (a graph command waits for the builder only up to 30 s)."""
    t0 = time.perf_counter()
    next_log = t0 + 30.0
    while graph:
        health = sc.request({"type": "health"}, "health")["graph"]
        if not health["queue"] and health["episodes"] >= episodes:
            return
        if time.perf_counter() - t0 > limit_s:
            raise sc.fail(f"the graph did not catch up within {limit_s:.0f} s ({health['episodes']} episodes built)")
        if time.perf_counter() >= next_log:
            log(f"graph: {health['episodes']} episodes built, {health['queue']} queued")
            next_log += 30.0
        time.sleep(0.5)


def _sidecar(args: argparse.Namespace, tmp: Path, graph: bool) -> Sidecar:
    """The configuration's sidecar over its own data dir (the same one each time it is opened)."""
    name = "on" if graph else "off"
    return Sidecar(
        tmp / f"data-{name}",
        [] if graph else ["--graph", "false"],
        python=args.python,
        stderr=tmp / f"{name}.log",
        timeout=args.timeout,
    )


def store_blocks(stores: int, block: int) -> list[tuple[bool, int, int]]:
    """(graph on, first, end) of each block of single stores: every configuration gets `stores`, in blocks
    of `block`, the two taking turns, and which goes first alternates from one pair of blocks to the next."""
    out = []
    for pair, first in enumerate(range(0, stores, block)):
        for graph in (True, False) if pair % 2 == 0 else (False, True):
            out.append((graph, first, min(stores, first + block)))
    return out


def bench_stores(args: argparse.Namespace, tmp: Path) -> dict[bool, dict[str, float]]:
    """--stores single stores into each configuration (graph on: True), in alternating blocks."""
    rngs = {True: random.Random(args.seed), False: random.Random(args.seed)}  # the same messages for both
    times: dict[bool, list[float]] = {True: [], False: []}
    with _sidecar(args, tmp, True) as on, _sidecar(args, tmp, False) as off:
        on.wait_ready()
        off.wait_ready()
        for graph, first, end in store_blocks(args.stores, STORE_BLOCK):
            sc = on if graph else off
            wait_graph_settled(on, True)
            for i in range(first, end):
                request = {"type": "store", "user_id": user_id(i % 30), "content": make_message(rngs[graph], False)}
                times[graph].append(sc.timed(request, "ok")[1])
        wait_graph_settled(on, True)
        on.shutdown()
        off.shutdown()
    for graph in (True, False):
        log(f"graph {'on' if graph else 'off'}: {args.stores} single stores, p50 {pct(times[graph])['p50_ms']:.2f} ms")
    return {graph: pct(t) for graph, t in times.items()}


def bench_config(args: argparse.Namespace, tmp: Path, graph: bool) -> dict[str, Any]:
    """The ingest into the configuration's store (reopened after its single stores), and its RSS."""
    rng = random.Random(args.seed + 1)
    name = "on" if graph else "off"
    with _sidecar(args, tmp, graph) as sc:
        sc.wait_ready()
        ingest = fill(sc, rng, args.ingest, 100, 200, quiet=True)
        t0 = time.perf_counter()
        wait_graph_settled(sc, graph)
        settle = time.perf_counter() - t0
        log(f"graph {name}: ingest {ingest['msgs_per_s']:.0f} msg/s; graph caught up {settle:.1f} s after")
        out = {"ingest": ingest, "settle_s": settle, **_rss(sc)}
        if graph:
            sc.request({"type": "consolidate"}, "consolidated")
            out["graph"] = sc.request({"type": "stats"}, "stats").get("graph")
        out["held"] = held_rss(sc)
        out["pyheap"] = pyheap.read(sc.pid)  # Python's object arenas then, and their high-water mark
        sc.shutdown()
    return out


def bench_catch_up(args: argparse.Namespace, tmp: Path, messages: int) -> dict[str, Any]:
    """The graph-off configuration's store reopened with the graph on: its start-up catch-up."""
    with Sidecar(tmp / "data-off", [], python=args.python, stderr=tmp / "catch-up.log", timeout=args.timeout) as sc:
        sc.wait_ready()
        t0, cpu = time.perf_counter(), cpu_seconds(sc.pid)
        wait_graph_settled(sc, True, episodes=messages)
        out = {
            "seconds": time.perf_counter() - t0,
            "cpu_s": cpu_seconds(sc.pid) - cpu,
            "messages": messages,
            "episode_rows": sc.request({"type": "health"}, "health")["graph"]["episodes"],
            **_rss(sc),
        }
        log(f"graph off -> on: caught up {out['seconds']:.1f} s after ready")
        sc.shutdown()
    return out


def bench_locomo(args: argparse.Namespace, tmp: Path, convs: list[tuple[str, Any]]) -> dict[str, Any]:
    # consolidation on demand only: the pass timed below is then the whole of it, not what the background
    # schedule left over
    flags = ["--graph-consolidate-every", "0", *(["--cache-mb", "0"] if args.locomo_uncached else [])]
    with Sidecar(tmp / "data-locomo", flags, python=args.python, stderr=tmp / "locomo.log", timeout=args.timeout) as sc:
        sc.wait_ready()
        n = 0
        for conv_name, conv in convs:
            msgs = [{"user_id": conv_name, **m} for m in turns(conv)]
            for start in range(0, len(msgs), 200):
                sc.request({"type": "store", "messages": msgs[start : start + 200]}, "ok")
            n += len(msgs)
        sc.request({"type": "entities", "user_id": convs[0][0], "limit": 1}, "entities")  # built
        cpu = cpu_seconds(sc.pid)
        r, t = sc.timed({"type": "consolidate"}, "consolidated")
        cpu = cpu_seconds(sc.pid) - cpu
        again, t2 = sc.timed({"type": "consolidate"}, "consolidated")
        out = {
            "conversations": len(convs),
            "turns": n,
            "uncached": args.locomo_uncached,
            "consolidate_s": t,
            "consolidate_cpu_s": cpu,
            "result": r,
            "again_s": t2,
            "again": again,
            **_rss(sc),
        }
        sc.shutdown()
    return out


def _arenas(on: dict[str, Any], off: dict[str, Any]) -> str:
    """Python's 1 MiB object arenas in use (high-water mark) and its live objects' MB, on / off."""

    def one(heap: dict[str, Any] | None) -> str:
        if not heap:
            return "?"
        return (
            f"{heap['arenas_allocated_current']} ({heap['arenas_highwater_mark']}; live "
            f"{heap['bytes_in_allocated_blocks'] / 1e6:.0f} MB)"
        )

    return f"{one(on.get('pyheap'))} / {one(off.get('pyheap'))}"


def run(args: argparse.Namespace) -> int:
    # read before the ingests: a wrong --locomo (the default is beside this source tree) fails now, not 15 minutes in
    convs = load([args.locomo]) if args.locomo.exists() else []
    if not convs:
        print(f"no LoCoMo conversation files at {args.locomo} (--locomo names a file or a folder)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-graph-") as tmp:
        pyheap.enable(tmp)
        stores = bench_stores(args, Path(tmp))
        on = {"store": stores[True], **bench_config(args, Path(tmp), True)}
        off = {"store": stores[False], **bench_config(args, Path(tmp), False)}
        cu = bench_catch_up(args, Path(tmp), args.stores + args.ingest)
        loc = bench_locomo(args, Path(tmp), convs)
    added = on["store"]["p50_ms"] - off["store"]["p50_ms"]
    on_held, off_held = on["held"], off["held"]
    ratio = on["ingest"]["msgs_per_s"] / off["ingest"]["msgs_per_s"]
    per_turn = loc["consolidate_s"] / max(1, loc["turns"])
    rows = [
        {
            "measurement": "single store p50 / p95 (ms), graph on",
            "value": f"{on['store']['p50_ms']:.2f} / {on['store']['p95_ms']:.2f}",
            "target": "",
        },
        {
            "measurement": "single store p50 / p95 (ms), graph off",
            "value": f"{off['store']['p50_ms']:.2f} / {off['store']['p95_ms']:.2f}",
            "target": "",
        },
        {"measurement": "store p50 added by the graph", "value": f"{added:+.2f} ms", "target": "<= 1 ms"},
        {
            "measurement": f"batch ingest of {args.ingest} (msg/s), on / off",
            "value": f"{on['ingest']['msgs_per_s']:.0f} / {off['ingest']['msgs_per_s']:.0f} = {ratio:.2f}x",
            "target": ">= 0.85x",
        },
        {"measurement": "graph caught up after the ingest", "value": f"{on['settle_s']:.1f} s", "target": ""},
        {
            "measurement": "RSS as the graph caught up (MiB), on / off",
            "value": f"{on['rss_mib']:.0f} / {off['rss_mib']:.0f} (+{on['rss_mib'] - off['rss_mib']:.0f})",
            "target": "",
        },
        {
            "measurement": f"RSS held, built and consolidated (MiB, median of {HELD_SECONDS} s), on / off",
            "value": f"{on_held['rss_mib']:.0f} / {off_held['rss_mib']:.0f} "
            f"(+{on_held['rss_mib'] - off_held['rss_mib']:.0f})",
            "target": "<= +50 at 100k",
        },
        {
            "measurement": "RSS held added, by kind of mapping (MiB)",
            "value": ", ".join(
                f"{k} {on_held['rss_by_kind_mib'][k] - off_held['rss_by_kind_mib'][k]:+.0f}"
                for k in on_held["rss_by_kind_mib"]
            ),
            "target": "",
        },
        {
            "measurement": "Python's object arenas held (MiB; high-water mark), on / off",
            "value": _arenas(on, off),
            "target": "",
        },
        {
            "measurement": "of the mapped files, LanceDB's library (MiB), on / off",
            "value": f"{on_held['lancedb_code_mib']:.0f} / {off_held['lancedb_code_mib']:.0f}",
            "target": "",
        },
        {
            "measurement": "peak RSS (MiB), on / off",
            "value": f"{on_held['hwm_mib']:.0f} / {off_held['hwm_mib']:.0f}",
            "target": "",
        },
        {
            "measurement": "graph-off store reopened with the graph on: caught up after ready",
            "value": f"{cu['seconds']:.1f} s, {cu['cpu_s']:.0f} s CPU, RSS {cu['rss_mib']:.0f} MiB "
            f"(peak {cu['hwm_mib']:.0f})",
            "target": "",
        },
        {
            "measurement": "episode rows written for its messages",
            "value": f"{cu['episode_rows']} for {cu['messages']}",
            "target": "one each",
        },
        {
            "measurement": f"consolidate {loc['conversations']} LoCoMo conversations ({loc['turns']} turns; "
            f"vector cache {'off' if loc['uncached'] else 'on'})",
            "value": f"{loc['consolidate_s']:.2f} s, {loc['consolidate_cpu_s']:.2f} s CPU "
            f"({per_turn * 5900:.1f} s per 5,900 turns)",
            "target": "<= 60 s per 5,900",
        },
        {
            "measurement": "traces / links made",
            "value": f"{loc['result']['traces_created']} / {loc['result']['links']}",
            "target": "",
        },
        {
            "measurement": "consolidate again (idempotent)",
            "value": f"{loc['again_s']:.2f} s, {loc['again']['episodes']} episodes",
            "target": "0 episodes",
        },
    ]
    print_table(rows, "graph memory, building side")
    if args.json:
        write_json(args.json, {"on": on, "off": off, "catch_up": cu, "locomo": loc})
    return 0
