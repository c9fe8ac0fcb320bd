"""Retrieval quality on LoCoMo conversations, measured through the real sidecar process.

    python scripts/bench_locomo.py                       # the five shared conversations, every mode
    python scripts/bench_locomo.py path/to/conv-x.json   # any other file(s) of the same format
    python scripts/bench_locomo.py --modes semantic --holdout conv-42,conv-43

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
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import Sidecar, pct  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DIR = REPO.parent / "shared" / "bench" / "locomo"
KS = (1, 5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ALL_MODES = ("semantic", "keyword", "hybrid")


def session_time(text: str) -> float:
    """'1:56 pm on 8 May, 2023' -> unix seconds (read as UTC)."""
    from datetime import timezone

    dt = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return dt.replace(tzinfo=timezone.utc).timestamp()


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
            out.append({"content": content, "username": t["speaker"], "message_id": t["dia_id"],
                        "timestamp": base + i})
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
            chunk = [{"user_id": f"locomo-{name}", "channel_id": f"locomo-{name}", **m}
                     for m in msgs[start:start + batch]]
            resp = sc.request({"type": "store", "messages": chunk}, "ok")
            if len(resp.get("ids", [])) != len(chunk):
                raise sc._fail(f"batch store answered {resp}")
        print(f"  stored {name}: {len(msgs)} turns", file=sys.stderr, flush=True)


def run_mode(sc: Sidecar, convs: list[tuple[str, dict[str, Any]]], mode: str | None,
             limit: int) -> dict[str, Any]:
    """Per-question results: (conversation, category, {k: recall}), plus per-query latencies."""
    per_q: list[dict[str, Any]] = []
    lat: list[float] = []
    for name, conv in convs:
        for q in questions(conv):
            req: dict[str, Any] = {"type": "query", "user_id": f"locomo-{name}", "text": q["question"],
                                   "limit": limit}
            if mode is not None:
                req["mode"] = mode
            t0 = time.perf_counter()
            resp = sc.request(req, "results")
            lat.append(time.perf_counter() - t0)
            got = [m.get("message_id") for m in resp["messages"]]
            ev = set(q["evidence"])
            per_q.append({"conv": name, "cat": q["category"],
                          "recall": {k: len(ev & set(got[:k])) / len(ev) for k in KS}})
    return {"questions": per_q, "latency": pct(lat)}


def summarize(per_q: list[dict[str, Any]]) -> dict[str, Any]:
    def avg(qs: list[dict[str, Any]]) -> dict[int, float]:
        return {k: (sum(q["recall"][k] for q in qs) / len(qs) if qs else float("nan")) for k in KS}

    out: dict[str, Any] = {"all": avg(per_q), "n": len(per_q)}
    for c in CATEGORIES:
        qs = [q for q in per_q if q["cat"] == c]
        out[c] = avg(qs)
        out[f"n{c}"] = len(qs)
    return out


def table(title: str, results: dict[str, dict[str, Any]], select=lambda q: True) -> str:
    lines = [f"\n{title}", "| mode | group | n | R@1 | R@5 | R@10 | R@20 |", "|---|---|---|---|---|---|---|"]
    for mode, r in results.items():
        s = summarize([q for q in r["questions"] if select(q)])
        rows = [("all (cat 1-4)", s["all"], s["n"])] + [(f"{c} {CATEGORIES[c]}", s[c], s[f"n{c}"]) for c in CATEGORIES]
        for label, vals, n in rows:
            lines.append(f"| {mode} | {label} | {n} | " + " | ".join(f"{vals[k]:.3f}" for k in KS) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", type=Path, help=f"conversation files or folders (default {DEFAULT_DIR})")
    ap.add_argument("--modes", default=",".join(ALL_MODES),
                    help="comma-separated query modes; 'default' sends no mode (the sidecar's default)")
    ap.add_argument("--no-compact", action="store_true",
                    help="ask the questions right after storing, without compacting first (results then depend "
                         "on when the background compaction runs)")
    ap.add_argument("--holdout", default="", help="comma-separated conversation names reported separately")
    ap.add_argument("--limit", type=int, default=max(KS))
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--json", type=Path, help="write all results here")
    ap.add_argument("--sidecar-args", default="", help="extra sidecar flags, space-separated")
    args = ap.parse_args()

    convs = load(args.paths or [DEFAULT_DIR])
    if not convs:
        print("no conversation files found", file=sys.stderr)
        return 2
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    holdout = {h.strip() for h in args.holdout.split(",") if h.strip()}
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        sc = Sidecar(args.python, Path(tmp) / "data", Path(tmp) / "sidecar.log", args.timeout,
                     args.sidecar_args.split())
        try:
            sc.wait_ready()
            t0 = time.perf_counter()
            store_all(sc, convs, args.batch)
            print(f"  stored in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            if not args.no_compact:
                # every row indexed before the first question: without this, which rows the background
                # compaction has folded into the full-text index when a question runs depends on timing,
                # and rows still unindexed are scored by a flat scan, so recall varied a little from run to run
                sc.request({"type": "cleanup", "ttl_days": 36500}, "ok")
            for mode in modes:
                results[mode] = run_mode(sc, convs, None if mode == "default" else mode, args.limit)
                s = summarize(results[mode]["questions"])
                print(f"  {mode}: R@10 {s['all'][10]:.3f}, query p50 {results[mode]['latency']['p50_ms']:.1f} ms",
                      file=sys.stderr, flush=True)
            sc.shutdown()
        except BaseException:
            sc.kill()
            raise
    names = [n for n, _ in convs]
    print(f"LoCoMo turn-level recall@k, categories 1-4: {', '.join(names)}")
    print(table("All conversations", results))
    if holdout:
        print(table(f"Tuning group ({', '.join(n for n in names if n not in holdout)})", results,
                    lambda q: q["conv"] not in holdout))
        print(table(f"Held out ({', '.join(sorted(holdout))})", results, lambda q: q["conv"] in holdout))
    print("\n| mode | " + " | ".join(names) + " | query p50 / p95 ms |")
    print("|---|" + "---|" * len(names) + "---|")
    for mode, r in results.items():
        per = [summarize([q for q in r["questions"] if q["conv"] == n])["all"][10] for n in names]
        lat = r["latency"]
        print(f"| {mode} R@10 | " + " | ".join(f"{v:.3f}" for v in per) + f" | {lat['p50_ms']:.1f} / {lat['p95_ms']:.1f} |")
    if args.json:
        args.json.write_text(json.dumps({m: {"summary": summarize(r["questions"]), "latency": r["latency"]}
                                         for m, r in results.items()}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
