"""Retrieval quality on LoCoMo conversations, measured through the real sidecar process.

    python scripts/bench.py locomo                       # the five shared conversations, every mode
    python scripts/bench.py locomo path/to/conv-x.json   # any other file(s) of the same format
    python scripts/bench.py locomo --modes semantic --holdout conv-42,conv-43

Each conversation is stored (batch `store`, one memory per turn: `"<speaker>: <text>"` plus
`" [shares a photo of: <caption>]"`, the session date as its timestamp, the speaker as `username`,
the turn's dia_id as `message_id`) under its own user id in a fresh data dir, with expiry off, and
compacted (a `cleanup` request, so every row is in the full-text index; `--no-compact` skips it). Then
every question of categories 1-4 is asked with `query` (top 20) in each mode, and recall@k is the
fraction of the question's evidence turns among the top k, averaged over questions (the measurement
defined in the data folder's README). Prints recall@1/5/10/20 overall and per category, recall@10 per
conversation, and the query latency over the pipe, for every mode; `--holdout` names conversations
to report separately (and the rest as the tuning group). `--json` writes everything to a file.

Research data: the files are read from where they are (default `../shared/bench/locomo/` next to the
repository); nothing of them is copied into the repository or the package.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import ROOT
from .client import Sidecar, add_sidecar_arguments
from .output import log, print_table, write_json
from .timing import pct

SUMMARY = "retrieval quality (recall@k) on LoCoMo conversations"
DEFAULT_DIR = ROOT.parent / "shared" / "bench" / "locomo"
KS = (1, 5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ALL_MODES = ("semantic", "keyword", "hybrid")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", type=Path, help=f"conversation files or folders (default {DEFAULT_DIR})")
    parser.add_argument(
        "--modes",
        default=",".join(ALL_MODES),
        help="comma-separated query modes; 'default' sends no mode (the sidecar's default)",
    )
    parser.add_argument(
        "--no-compact",
        action="store_true",
        help="ask the questions right after storing, without compacting first (results then "
        "depend on when the background compaction runs)",
    )
    parser.add_argument("--holdout", default="", help="comma-separated conversation names reported separately")
    parser.add_argument("--limit", type=int, default=max(KS), help="results asked for per question")
    parser.add_argument("--batch", type=int, default=200, help="turns per batch store")
    add_sidecar_arguments(parser, timeout=600.0)
    parser.add_argument("--json", type=Path, help="write all results here")
    parser.add_argument("--sidecar-args", default="", help="extra sidecar flags, space-separated")
    parser.add_argument(
        "--memory-floor",
        action="store_true",
        help="also measure the cosine floor of context's relevant memories: each question asked "
        "of its own user and of the next conversation's, the top 3 of the default query",
    )


def session_time(text: str) -> float:
    """'1:56 pm on 8 May, 2023' -> unix seconds (read as UTC)."""
    dt = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return dt.replace(tzinfo=UTC).timestamp()


def turns(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation's turns in order, as store messages (without user_id)."""
    out = []
    n = 1
    while f"session_{n}" in conv:
        base = session_time(conv[f"session_{n}_date_time"])
        for i, t in enumerate(conv[f"session_{n}"]):
            content = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                content += f" [shares a photo of: {t['blip_caption']}]"
            # turns of one session share its date; a second apart keeps their order
            out.append({"content": content, "username": t["speaker"], "message_id": t["dia_id"], "timestamp": base + i})
        n += 1
    return out


def questions(conv: dict[str, Any]) -> list[dict[str, Any]]:
    return [q for q in conv["qa"] if q.get("category") in CATEGORIES and q.get("evidence")]


def load(paths: list[Path]) -> list[tuple[str, dict[str, Any]]]:
    convs = []
    for p in paths:
        if p.is_dir():
            convs += [(f.stem, json.loads(f.read_text())) for f in sorted(p.glob("*.json"))]
        else:
            convs.append((p.stem, json.loads(p.read_text())))
    return convs


def store_all(sc: Sidecar, convs: list[tuple[str, dict[str, Any]]], batch: int) -> None:
    for name, conv in convs:
        msgs = turns(conv)
        for start in range(0, len(msgs), batch):
            chunk = [
                {"user_id": f"locomo-{name}", "channel_id": f"locomo-{name}", **m} for m in msgs[start : start + batch]
            ]
            resp = sc.request({"type": "store", "messages": chunk}, "ok")
            if len(resp.get("ids", [])) != len(chunk):
                raise sc.fail(f"batch store answered {resp}")
        log(f"  stored {name}: {len(msgs)} turns")


def run_mode(sc: Sidecar, convs: list[tuple[str, dict[str, Any]]], mode: str | None, limit: int) -> dict[str, Any]:
    """Per-question results: (conversation, category, {k: recall}), plus per-query latencies."""
    per_q: list[dict[str, Any]] = []
    lat: list[float] = []
    for name, conv in convs:
        for q in questions(conv):
            req: dict[str, Any] = {"type": "query", "user_id": f"locomo-{name}", "text": q["question"], "limit": limit}
            if mode is not None:
                req["mode"] = mode
            resp, seconds = sc.timed(req, "results")
            lat.append(seconds)
            got = [m.get("message_id") for m in resp["messages"]]
            ev = set(q["evidence"])
            per_q.append(
                {"conv": name, "cat": q["category"], "recall": {k: len(ev & set(got[:k])) / len(ev) for k in KS}}
            )
    return {"questions": per_q, "latency": pct(lat)}


def summarize(per_q: list[dict[str, Any]]) -> dict[Any, Any]:  # "all", "n", and by category (an int)
    def avg(qs: list[dict[str, Any]]) -> dict[int, float]:
        return {k: (sum(q["recall"][k] for q in qs) / len(qs) if qs else float("nan")) for k in KS}

    out: dict[Any, Any] = {"all": avg(per_q), "n": len(per_q)}
    for c in CATEGORIES:
        qs = [q for q in per_q if q["cat"] == c]
        out[c] = avg(qs)
        out[f"n{c}"] = len(qs)
    return out


def recall_rows(results: dict[str, dict[str, Any]], select=lambda q: True) -> list[dict[str, Any]]:
    """Recall@k per mode, overall and per category, of the questions `select` keeps."""
    rows = []
    for mode, r in results.items():
        s = summarize([q for q in r["questions"] if select(q)])
        groups = [("all (cat 1-4)", s["all"], s["n"])] + [
            (f"{c} {CATEGORIES[c]}", s[c], s[f"n{c}"]) for c in CATEGORIES
        ]
        rows += [{"mode": mode, "group": label, "n": n, **{f"R@{k}": vals[k] for k in KS}} for label, vals, n in groups]
    return rows


def run(args: argparse.Namespace) -> int:
    convs = load(args.paths or [DEFAULT_DIR])
    if not convs:
        print("no conversation files found", file=sys.stderr)
        return 2
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    holdout = {h.strip() for h in args.holdout.split(",") if h.strip()}
    results: dict[str, dict[str, Any]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="locomo-") as tmp,
        Sidecar(
            Path(tmp) / "data",
            args.sidecar_args.split(),
            python=args.python,
            stderr=Path(tmp) / "sidecar.log",
            timeout=args.timeout,
        ) as sc,
    ):
        sc.wait_ready()
        t0 = time.perf_counter()
        store_all(sc, convs, args.batch)
        log(f"  stored in {time.perf_counter() - t0:.1f} s")
        if not args.no_compact:
            # every row indexed before the first question: without this, which rows the background
            # compaction has folded into the full-text index when a question runs depends on timing,
            # and rows still unindexed are scored by a flat scan, so recall varied a little from run to run
            sc.compact()
        for mode in modes:
            results[mode] = run_mode(sc, convs, None if mode == "default" else mode, args.limit)
            s = summarize(results[mode]["questions"])
            log(f"  {mode}: R@10 {s['all'][10]:.3f}, query p50 {results[mode]['latency']['p50_ms']:.1f} ms")
        floors = memory_floor(sc, convs) if args.memory_floor else []
        sc.shutdown()
    names = [n for n, _ in convs]
    print(f"LoCoMo turn-level recall@k, categories 1-4: {', '.join(names)}\n")
    print_table(recall_rows(results), title="All conversations", floatfmt=".3f")
    if holdout:
        print()
        print_table(
            recall_rows(results, lambda q: q["conv"] not in holdout),
            floatfmt=".3f",
            title=f"Tuning group ({', '.join(n for n in names if n not in holdout)})",
        )
        print()
        print_table(
            recall_rows(results, lambda q: q["conv"] in holdout),
            floatfmt=".3f",
            title=f"Held out ({', '.join(sorted(holdout))})",
        )
    print()
    per_conversation = []
    for mode, r in results.items():
        lat = r["latency"]
        per_conversation.append(
            {
                "mode": f"{mode} R@10",
                **{n: summarize([q for q in r["questions"] if q["conv"] == n])["all"][10] for n in names},
                "query p50 / p95 ms": f"{lat['p50_ms']:.1f} / {lat['p95_ms']:.1f}",
            }
        )
    print_table(per_conversation, floatfmt=".3f")
    if floors:
        print()
        print_table(
            floors,
            floatfmt=".3f",
            title="context's relevant memories: the top 3 of the default query at "
            "or above a cosine floor (context's memories_min_similarity)",
        )
    if args.json:
        write_json(
            args.json,
            {
                **{m: {"summary": summarize(r["questions"]), "latency": r["latency"]} for m, r in results.items()},
                "memory_floor": floors,
            },
        )
    return 0


FLOORS = (0.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)


def memory_floor(sc: Sidecar, convs: list[tuple[str, dict[str, Any]]], top: int = 3) -> list[dict[str, Any]]:
    """Per floor: of the questions asked of their own user, the share whose memories (the top `top` of the
    default query at or above the floor) hold an evidence turn, and the memories shown on average; of the same
    questions asked of the next conversation's user (who holds none of it), the share shown any memory."""
    from sidecar.wire.conversation import MEMORY_FLOOR

    right: list[tuple[list[float], list[bool]]] = []
    wrong: list[list[float]] = []
    for k, (name, conv) in enumerate(convs):
        other = convs[(k + 1) % len(convs)][0]
        for q in questions(conv):
            for user, into in ((name, "right"), (other, "wrong")):
                if user == name and into == "wrong":
                    continue
                got = sc.request(
                    {"type": "query", "user_id": f"locomo-{user}", "text": q["question"], "limit": top}, "results"
                )["messages"]
                sims = [m["similarity"] for m in got]
                if into == "right":
                    right.append((sims, [m.get("message_id") in set(q["evidence"]) for m in got]))
                else:
                    wrong.append(sims)
    rows = []
    for f in sorted({*FLOORS, MEMORY_FLOOR}):
        hit = sum(any(e for s, e in zip(sims, ev) if s >= f) for sims, ev in right) / len(right)
        shown = sum(sum(s >= f for s in sims) for sims, _ in right) / len(right)
        junk = sum(any(s >= f for s in sims) for sims in wrong) / len(wrong) if wrong else float("nan")
        theirs = sum(sum(s >= f for s in sims) for sims in wrong) / max(1, len(wrong))
        rows.append(
            {
                "floor": f"{f:.2f}" + (" (chosen)" if f == MEMORY_FLOOR else ""),
                "own user: evidence shown": hit,
                "memories shown": shown,
                "another user: any shown": junk,
                "its memories shown": theirs,
            }
        )
    log(f"  memory floor: {len(right)} questions of their own user, {len(wrong)} of another")
    return rows
