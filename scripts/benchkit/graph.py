"""Graph memory, the recall side, on LoCoMo and at scale:

recall     every question of categories 1-4 asked with `query` (top 20) in the default mode and in
           mode `graph`: recall@5 and @10 overall and per category (as `locomo` measures it)
gate       each conversation's questions asked with `graph_recall` (strengthen off) of its own user
           (share that pass the feeling-of-knowing gate: target >= 95%) and of the next conversation's
           user, whose names and events differ (share answered `known: false`: target >= 80%)
latency    `graph_recall` p50/p95 for one user holding --episodes generated messages, against the model
           floor (one short message embedded in this process, same run): target p50 <= 2x the floor

  python scripts/bench.py graph                   # the five shared conversations, 10k-episode user
  python scripts/bench.py graph --episodes 2000   # quicker
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from .client import Sidecar, add_sidecar_arguments
from .locomo import CATEGORIES, DEFAULT_DIR, load, questions, run_mode, store_all, summarize
from .output import log, print_table, write_json
from .timing import pct
from .workload import fill, make_question

SUMMARY = "graph recall: LoCoMo recall@k (default vs graph), the feeling-of-knowing gate, latency"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", type=Path, help=f"conversation files or folders (default {DEFAULT_DIR})")
    parser.add_argument("--episodes", type=int, default=10_000, help="messages of the one user of the latency run")
    parser.add_argument("--requests", type=int, default=100, help="graph_recall requests timed")
    parser.add_argument("--seed", type=int, default=11)
    add_sidecar_arguments(parser, timeout=900.0)
    parser.add_argument("--json", type=Path, help="write all results here")


def gate_rates(sc: Sidecar, convs: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    own = other = n = 0
    for k, (name, conv) in enumerate(convs):
        wrong = convs[(k + 1) % len(convs)][0]
        for q in questions(conv):
            ask = {"type": "graph_recall", "text": q["question"], "limit": 1, "strengthen": False}
            own += sc.request({**ask, "user_id": f"locomo-{name}"}, "graph_recall")["known"]
            other += not sc.request({**ask, "user_id": f"locomo-{wrong}"}, "graph_recall")["known"]
            n += 1
    return {"questions": n, "right_user_known": own / n, "wrong_user_unknown": other / n}


def floor_ms(threads: int = 2, text: str = "hey what's up, how was the hiking trip last weekend?") -> float:
    """Median ms to embed `text` alone, in-process (a long text: its first window)."""
    from sidecar.embedding.embedder import Embedder
    from sidecar.embedding.model import resolve_model

    emb = Embedder(resolve_model(None, True, None), threads=threads)
    for _ in range(5):
        emb.embed_queries([text])
    times = []
    for _ in range(50):
        t0 = time.perf_counter()
        emb.embed_queries([text])
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def latency(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    rng = random.Random(args.seed)
    with Sidecar(tmp / "data-big", [], python=args.python, stderr=tmp / "big.log", timeout=args.timeout) as sc:
        sc.wait_ready()
        fill(sc, rng, args.episodes, 1, 200, quiet=True)
        sc.request({"type": "consolidate"}, "consolidated")
        sc.request({"type": "graph_recall", "user_id": "user0000", "text": make_question(rng)}, "graph_recall")
        times = []
        for _ in range(args.requests):
            _, t = sc.timed(
                {"type": "graph_recall", "user_id": "user0000", "text": make_question(rng), "strengthen": False},
                "graph_recall",
            )
            times.append(t)
        st = sc.request({"type": "stats"}, "stats")
        sc.shutdown()
    return {"episodes": args.episodes, "graph": st.get("graph"), "recall": pct(times)}


def run(args: argparse.Namespace) -> int:
    convs = load(args.paths or [DEFAULT_DIR])
    with tempfile.TemporaryDirectory(prefix="bench-graph-") as tmp:
        with Sidecar(
            Path(tmp) / "data", [], python=args.python, stderr=Path(tmp) / "sidecar.log", timeout=args.timeout
        ) as sc:
            sc.wait_ready()
            store_all(sc, convs, 200)
            sc.compact()
            t0 = time.perf_counter()
            sc.request({"type": "consolidate"}, "consolidated")
            log(f"  consolidated in {time.perf_counter() - t0:.1f} s")
            modes = {m: run_mode(sc, convs, None if m == "default" else m, 20) for m in ("default", "graph")}
            gate = gate_rates(sc, convs)
            sc.shutdown()
        lat = latency(args, Path(tmp))
    floor = floor_ms()
    rows = []
    for mode, r in modes.items():
        s = summarize(r["questions"])
        rows.append({"mode": mode, "group": "all (cat 1-4)", "n": s["n"], "R@5": s["all"][5], "R@10": s["all"][10]})
        rows += [
            {"mode": mode, "group": f"{c} {CATEGORIES[c]}", "n": s[f"n{c}"], "R@5": s[c][5], "R@10": s[c][10]}
            for c in CATEGORIES
        ]
    print_table(rows, "LoCoMo evidence recall, query top 20, default mode vs graph mode", floatfmt=".3f")
    print()
    r = lat["recall"]
    print_table(
        [
            {
                "measurement": "gate: right user's questions that pass",
                "value": f"{gate['right_user_known']:.1%}",
                "target": ">= 95%",
            },
            {
                "measurement": "gate: wrong user's questions answered known: false",
                "value": f"{gate['wrong_user_unknown']:.1%}",
                "target": ">= 80%",
            },
            {"measurement": "model floor (one short message)", "value": f"{floor:.2f} ms", "target": ""},
            {
                "measurement": f"graph_recall p50 / p95 at {lat['episodes']} episodes",
                "value": f"{r['p50_ms']:.1f} / {r['p95_ms']:.1f} ms ({r['p50_ms'] / floor:.1f}x the floor)",
                "target": "p50 <= 2x",
            },
        ],
        "feeling of knowing and latency",
    )
    if args.json:
        write_json(
            args.json,
            {
                "modes": {m: summarize(x["questions"]) for m, x in modes.items()},
                "gate": gate,
                "latency": lat,
                "floor_ms": floor,
            },
        )
    return 0
