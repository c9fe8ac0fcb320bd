"""Retrieval in every language, measured through the real sidecar process.

    python scripts/bench.py multilingual                        # the held-out half, every mode
    python scripts/bench.py multilingual --half tune            # the half the analysis was tuned on
    python scripts/bench.py multilingual --sidecar-arg=--model=intfloat/multilingual-e5-small

The sample (scripts/benchkit/data/multilingual.jsonl, written for this benchmark) holds 20 chat-style
memories in each of 15 languages (Chinese, Japanese, Korean, Thai, Arabic, Hindi, German, Russian,
Spanish, French, Portuguese, Turkish, Vietnamese, Indonesian, English), each with a word it contains as
written, an inflected form of that word where the language inflects (another case, number or particle),
and a paraphrase question. Memories alternate between the tuning half and the held-out half; both halves
are stored, only the chosen half's queries are asked.

Each language's memories are stored under a user of their own, and all 300 under one more user (a
store in every language at once: the "mixed" columns). Then each query is asked in every mode (keyword,
semantic, and hybrid, the default: no mode sent), limit 3. Prints, by language: exact-word recall@1 in
keyword mode and @3 in hybrid, inflected-word recall@1 and @3 (keyword) and @3 (hybrid), paraphrase
recall@3 (semantic, hybrid); the query p50 per mode against the floor (a question embedded alone, in this
process, with the default model); the language decided for each memory, right or wrong (and for LoCoMo's
English turns, when that research data is beside the repository: ../shared/bench/locomo); and the keyword
index's memory per 1,000 memories by script, and per MB of their text (built in this process from the same memories:
sidecar/messages/keywords.py).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path
from typing import Any

from . import ROOT
from .client import Sidecar, add_sidecar_arguments
from .output import log, print_table, write_json
from .timing import pct

SUMMARY = "recall by language and mode, query p50 vs the floor, keyword index memory by script"
DATA = Path(__file__).resolve().parent / "data" / "multilingual.jsonl"
MODES = ("keyword", "semantic", "hybrid")
STEMMED = {"en", "de", "fr", "es", "pt", "ru", "tr", "id", "ar", "hi"}  # Snowball stems these
SCRIPTS = {
    "Latin (en)": "en",
    "Latin (de)": "de",
    "Cyrillic (ru)": "ru",
    "Arabic (ar)": "ar",
    "Devanagari (hi)": "hi",
    "Han (zh)": "zh",
    "Han + Kana (ja)": "ja",
    "Hangul (ko)": "ko",
    "Thai (th)": "th",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, default=DATA, help="the labelled sample (JSON lines)")
    parser.add_argument(
        "--half",
        choices=("tune", "heldout", "all"),
        default="heldout",
        help="whose queries are asked (both halves are stored)",
    )
    parser.add_argument(
        "--sidecar-arg",
        action="append",
        default=[],
        metavar="FLAG",
        help="one more sidecar flag, e.g. --sidecar-arg=--model=REPO (repeatable)",
    )
    parser.add_argument("--no-mixed", action="store_true", help="skip the user holding every language")
    parser.add_argument(
        "--locomo",
        type=Path,
        default=ROOT.parent / "shared" / "bench" / "locomo",
        help="LoCoMo's folder: how many of its English turns are decided English (skipped when absent)",
    )
    add_sidecar_arguments(parser, timeout=600.0)
    parser.add_argument("--json", type=Path, help="write all results here")


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def queries(rows: list[dict[str, Any]], half: str) -> list[dict[str, Any]]:
    """(language, kind, text, the memory's index) for every query of the half."""
    out = []
    for i, r in enumerate(rows):
        if half != "all" and r["half"] != half:
            continue
        for kind, text in (("exact", r["word"]), ("inflected", r["inflected"]), ("paraphrase", r["question"])):
            if text:
                out.append({"lang": r["lang"], "kind": kind, "text": text, "answer": i})
    return out


def store_all(sc: Sidecar, rows: list[dict[str, Any]], mixed: bool) -> dict[str, str]:
    """Every memory under its language's user (and under the mixed user); memory index -> stored id, by user."""
    ids: dict[str, str] = {}
    users = sorted({r["lang"] for r in rows})
    for user in users + (["all"] if mixed else []):
        idx = [i for i, r in enumerate(rows) if user in ("all", r["lang"])]
        resp = sc.request(
            {
                "type": "store",
                "messages": [
                    {"user_id": f"ml-{user}", "content": rows[i]["memory"], "timestamp": 1_700_000_000 + i} for i in idx
                ],
            },
            "ok",
        )
        for i, mid in zip(idx, resp["ids"]):
            ids[f"{user}/{i}"] = mid
    return ids


def ask(sc: Sidecar, qs: list[dict[str, Any]], ids: dict[str, str], user: str) -> dict[str, list[float]]:
    """Each query in every mode: the rank (1-based, 0 when missed in the top 3) lands in q[f'{user}/{mode}'];
    returns the seconds of each answer by mode."""
    times: dict[str, list[float]] = {m: [] for m in MODES}
    for q in qs:
        want = ids[f"{user if user == 'all' else q['lang']}/{q['answer']}"]
        for mode in MODES:
            req = {
                "type": "query",
                "user_id": f"ml-{user if user == 'all' else q['lang']}",
                "text": q["text"],
                "limit": 3,
            }
            if mode != "hybrid":
                req["mode"] = mode
            resp, seconds = sc.timed(req, "results")
            times[mode].append(seconds)
            got = [m["id"] for m in resp["messages"]]
            q[f"{user}/{mode}"] = got.index(want) + 1 if want in got else 0
    return times


def recall(qs: list[dict[str, Any]], kind: str, key: str, k: int) -> float | str:
    hits = [1 <= q[key] <= k for q in qs if q["kind"] == kind and key in q]
    return round(sum(hits) / len(hits), 2) if hits else "-"


def recall_rows(qs: list[dict[str, Any]], langs: list[str], mixed: bool) -> list[dict[str, Any]]:
    rows = []
    for lang in [*langs, "all"]:
        sub = [q for q in qs if lang in ("all", q["lang"])]
        row = {
            "language": lang + ("" if lang == "all" or lang not in STEMMED else " (stemmed)"),
            "exact kw @1": recall(sub, "exact", "own/keyword", 1),
            "exact hybrid @3": recall(sub, "exact", "own/hybrid", 3),
            "inflected kw @1": recall(sub, "inflected", "own/keyword", 1),
            "inflected kw @3": recall(sub, "inflected", "own/keyword", 3),
            "inflected hybrid @3": recall(sub, "inflected", "own/hybrid", 3),
            "paraphrase sem @3": recall(sub, "paraphrase", "own/semantic", 3),
            "paraphrase hybrid @3": recall(sub, "paraphrase", "own/hybrid", 3),
        }
        if mixed:
            row["mixed: exact kw @1"] = recall(sub, "exact", "all/keyword", 1)
            row["mixed: exact hybrid @3"] = recall(sub, "exact", "all/hybrid", 3)
            row["mixed: inflected kw @3"] = recall(sub, "inflected", "all/keyword", 3)
        rows.append(row)
    return rows


def index_memory(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The keyword index built in this process from each script's memories: bytes per 1,000 memories and per
    MB of their UTF-8 text, and the ratio of the latter to English's."""
    from sidecar.messages.keywords import KeywordIndex

    out: list[dict[str, Any]] = []
    for name, lang in SCRIPTS.items():
        texts = [r["memory"] for r in rows if r["lang"] == lang]
        index = KeywordIndex()
        index.extend(texts, [-1] * len(texts), [-1] * len(texts))
        size = sum(len(t.encode()) for t in texts)
        out.append(
            {
                "script": name,
                "memories": len(texts),
                "text bytes": size,
                "index bytes per 1,000 memories": round(index.nbytes * 1000 / len(texts)),
                "index bytes per MB of text": round(index.nbytes * 1_000_000 / size),
            }
        )
    english = out[0]["index bytes per MB of text"]
    for row in out:
        row["vs English per MB"] = round(row["index bytes per MB of text"] / english, 2)
    return out


def decisions(rows: list[dict[str, Any]], locomo: Path | None) -> list[dict[str, Any]]:
    """The language decided for each memory of the sample (in this process: sidecar/text), right or wrong by
    language (Chinese, Japanese, Korean, Thai: none is right, they are never stemmed); and the share of LoCoMo's
    turns decided English, when its folder is given."""
    from sidecar.text import language_of

    out = []
    for lang in sorted({r["lang"] for r in rows}):
        want = None if lang in ("zh", "ja", "ko", "th") else lang
        got = [language_of(r["memory"]) for r in rows if r["lang"] == lang]
        out.append(
            {
                "memories of": lang,
                "n": len(got),
                "decided right": round(sum(g == want for g in got) / len(got), 2),
                "decided instead": ", ".join(sorted({str(g) for g in got if g != want})) or "-",
            }
        )
    if locomo is not None and locomo.is_dir():
        turns = [
            t["text"]
            for f in sorted(locomo.glob("*.json"))
            for k, v in json.loads(f.read_text()).items()
            if k.startswith("session_") and isinstance(v, list)
            for t in v
            if isinstance(t, dict) and "text" in t
        ]
        got = [language_of(t) for t in turns]
        out.append(
            {
                "memories of": "LoCoMo turns (en)",
                "n": len(got),
                "decided right": round(sum(g == "en" for g in got) / len(got), 3),
                "decided instead": ", ".join(sorted({str(g) for g in got if g != "en"})) or "-",
            }
        )
    return out


def run(args: argparse.Namespace) -> int:
    from .long_memories import model_floor

    rows = load(args.data)
    langs = sorted({r["lang"] for r in rows})
    qs = queries(rows, args.half)
    with tempfile.TemporaryDirectory(prefix="bench-ml-") as tmp:
        with Sidecar(
            Path(tmp) / "data",
            args.sidecar_arg,
            python=args.python,
            stderr=Path(tmp) / "sidecar.log",
            timeout=args.timeout,
        ) as sc:
            _, ready = sc.wait_ready()
            ids = store_all(sc, rows, not args.no_mixed)
            sc.compact()
            log(
                f"stored {len(rows)} memories in {len(langs)} languages; asking {len(qs)} queries "
                f"({args.half}) in {len(MODES)} modes"
            )
            times = ask(sc, qs, ids, "own")
            if not args.no_mixed:
                ask(sc, qs, ids, "all")
            sc.shutdown()
    floor = pct(model_floor(2, random.Random(5)))
    table = recall_rows(qs, langs, not args.no_mixed)
    print_table(
        table,
        title=f"recall by language ({args.half} half, {len(qs)} queries; model {ready.get('model')})",
        floatfmt=".2f",
    )
    lat = [
        {"mode": m, "n": len(t), "p50 ms": pct(t)["p50_ms"], "p50 / floor": pct(t)["p50_ms"] / floor["p50_ms"]}
        for m, t in times.items()
    ]
    lat.append(
        {"mode": "floor: a question embedded alone", "n": floor["n"], "p50 ms": floor["p50_ms"], "p50 / floor": 1.0}
    )
    print()
    print_table(lat, title="query latency over the pipe (limit 3)", floatfmt=".2f")
    decided = decisions(rows, args.locomo)
    print()
    print_table(decided, title="the language decision of each memory (sidecar/text, in process)", floatfmt=".3f")
    memory = index_memory(rows)
    print()
    print_table(
        memory, title="keyword index memory by script (built in process from the sample's memories)", floatfmt=".2f"
    )
    if args.json:
        write_json(
            args.json,
            {
                "half": args.half,
                "ready": ready,
                "recall": table,
                "latency": lat,
                "index_memory": memory,
                "decisions": decided,
                "queries": qs,
            },
        )
    return 0
