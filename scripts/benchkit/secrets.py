"""Secrets never stored (docs/privacy.md): recall per kind, false positives, and what redaction costs a store.

    python scripts/bench.py secrets                 # the sample, the clean lines, the cost in this process
    python scripts/bench.py secrets --process       # also store p50 through a real sidecar, --redact on vs off

The sample (scripts/benchkit/data/secrets.jsonl, written for this benchmark) holds lines with one secret each, in
every kind's shape and 25 languages, at the start, middle and end of a sentence, in code, JSON, URLs and quotes
(the keys are made up in each provider's published shape; the card numbers pass Luhn, the IBANs mod-97), and hard
negatives: lines that talk about passwords, keys and numbers without holding one. Two halves: `tune`, which the
detector was adjusted on, and `heldout`, written with other sentences and run once before any change it prompted
(docs/privacy.md says which). A secret counts as found when its text is gone and the right kind's placeholder is
there.

The clean lines hold no secret: the multilingual sample's 300 memories (scripts/benchkit/data/multilingual.jsonl)
and every LoCoMo turn (read where they are, ../shared/bench/locomo, never copied into this repository; `--clean N`:
N lines in all, the turns spread evenly over the conversations). A false positive is a clean line that redaction
changes.

The cost: `Redaction.clean` (private spans, then every kind) on each clean line, in this process: the time a store
pays per message (p50, p99). Linearity: adversarial inputs (1 MB of key-like text) against four times as much
(smaller inputs fit in the CPU caches and say less). `--process`: LoCoMo turns stored one at a time through two
real sidecars at once, `--redact on` and `off`, each turn in both one after the other; the difference of the two
store p50s.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from sidecar.text import SECRET_KINDS, parse_redact

from .client import Sidecar, add_sidecar_arguments
from .locomo import DEFAULT_DIR, load, turns
from .output import log, print_table, write_json
from .timing import pct

SUMMARY = "secrets: recall per kind, false positives on clean lines, the time redaction adds to a store"
DATA = Path(__file__).resolve().parent / "data"
SHAPED = [k for k in SECRET_KINDS if k != "password"]
ADVERSARIAL = {
    "sk- repeated": "sk-",
    "eyJ. repeated": "eyJ.",
    "digits and spaces": "1 ",
    "card-like groups": "4111-",
    "AKIA repeated": "AKIA",
    "IBAN-like groups": "DE89 ",
    "'password is' repeated": "password is ",
    "'pw: ' repeated": "pw: ",
    "BEGIN PRIVATE KEY repeated": "-----BEGIN PRIVATE KEY-----",
    "<private> repeated": "<private>",
    "密码是 repeated": "密码是",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--locomo", type=Path, default=DEFAULT_DIR, help="the LoCoMo conversations' folder")
    parser.add_argument(
        "--clean",
        type=int,
        default=0,
        help="clean lines: the multilingual sample's 300, then LoCoMo turns; 0: every turn",
    )
    parser.add_argument("--process", action="store_true", help="also time stores through a real sidecar, on vs off")
    parser.add_argument("--stores", type=int, default=300, help="--process: stores per round")
    parser.add_argument("--rounds", type=int, default=4, help="--process: rounds of each setting, alternating")
    add_sidecar_arguments(parser, timeout=300.0)
    parser.add_argument("--json", type=Path, help="write all results here")


def clean_lines(locomo: Path, n: int) -> list[str]:
    multilingual = [json.loads(line)["memory"] for line in (DATA / "multilingual.jsonl").read_text().splitlines()]
    every = [m["content"] for _name, conv in load([locomo]) for m in turns(conv)] if locomo.exists() else []
    if not every:
        log(f"no LoCoMo turns in {locomo} (--locomo): the clean lines are the multilingual sample's alone")
    want = len(every) if n <= 0 else min(len(every), max(0, n - len(multilingual)))
    step = len(every) / want if want else 1
    return multilingual + [every[int(i * step)] for i in range(want)]


def found(row: dict[str, Any], out: str) -> bool:
    return row["secret"] not in out and f"[redacted: {row['kind']}]" in out


def recall(sample: list[dict[str, Any]]) -> list[dict[str, Any]]:
    clean = parse_redact("on").clean
    by: dict[tuple[str, str], list[bool]] = defaultdict(list)
    misses = []
    for row in sample:
        if row["kind"] is None:
            continue
        hit = found(row, clean(row["text"])[0])
        by[(row["kind"], row["half"])].append(hit)
        if not hit:
            misses.append(row)
    rows = []
    for kind in [*SHAPED, "password"]:
        tune, held = by.get((kind, "tune"), []), by.get((kind, "heldout"), [])
        both = tune + held
        rows.append(
            {
                "kind": kind,
                "lines": len(both),
                "recall": sum(both) / len(both) if both else None,
                "tune": f"{sum(tune)}/{len(tune)}",
                "heldout": f"{sum(held)}/{len(held)}",
            }
        )
    for half in ("tune", "heldout"):
        shaped = [h for (k, hh), v in by.items() if k != "password" and hh == half for h in v]
        pw = by.get(("password", half), [])
        rows.append(
            {
                "kind": f"all shaped kinds ({half})",
                "lines": len(shaped),
                "recall": sum(shaped) / len(shaped) if shaped else None,
                "tune": "",
                "heldout": "",
            }
        )
        rows.append(
            {
                "kind": f"passwords ({half})",
                "lines": len(pw),
                "recall": sum(pw) / len(pw) if pw else None,
                "tune": "",
                "heldout": "",
            }
        )
    for row in misses:
        log(f"missed ({row['half']}, {row['kind']}): {row['text'][:100]!r}")
    return rows


def false_positives(lines: list[str], what: str) -> dict[str, Any]:
    clean = parse_redact("on").clean
    changed = [(line, out) for line in lines if (out := clean(line)[0]) != line]
    for line, out in changed[:20]:
        log(f"false positive ({what}): {line[:100]!r} -> {out[:100]!r}")
    return {"lines": what, "n": len(lines), "changed": len(changed)}


def cost(lines: list[str]) -> dict[str, Any]:
    clean = parse_redact("on").clean
    for line in lines[:50]:
        clean(line)  # warm the patterns
    times = []
    for _ in range(5):
        for line in lines:
            t0 = time.perf_counter()
            clean(line)
            times.append(time.perf_counter() - t0)
    p = pct(times)
    return {"lines": len(lines), "chars p50": sorted(len(x) for x in lines)[len(lines) // 2], **p}


def linearity() -> list[dict[str, Any]]:
    clean = parse_redact("on").clean
    rows = []
    for name, unit in ADVERSARIAL.items():
        small, big = unit * (1_000_000 // len(unit)), unit * (4_000_000 // len(unit))
        t = []
        for text in (small, big):
            best = float("inf")
            for _ in range(3):  # the best of three: the machine's noise is one-sided
                t0 = time.perf_counter()
                clean(text)
                best = min(best, time.perf_counter() - t0)
            t.append(best)
        rows.append({"input": name, "1 MB s": t[0], "4 MB s": t[1], "ratio": t[1] / t[0] if t[0] else None})
    return rows


def process(args: argparse.Namespace, lines: list[str]) -> list[dict[str, Any]]:
    """Two sidecars side by side, `--redact on` and `off`, each line stored in both one after the other (which
    first alternates): the two p50s are paired in time, so the machine's load weighs on both alike."""
    times: dict[str, list[float]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory(prefix="secrets-") as tmp:
        for r in range(args.rounds):
            sidecars = {
                s: Sidecar(Path(tmp) / f"{s}-{r}", ["--redact", s], python=args.python, timeout=args.timeout)
                for s in ("on", "off")
            }
            try:
                for sc in sidecars.values():
                    sc.wait_ready()
                for i, line in enumerate(lines[: args.stores]):
                    for setting in ("on", "off") if i % 2 == 0 else ("off", "on"):
                        req = {"type": "store", "user_id": f"u{i % 5}", "content": line}
                        times[setting].append(sidecars[setting].timed(req, "ok")[1])
                for sc in sidecars.values():
                    sc.shutdown()
            finally:
                for sc in sidecars.values():
                    sc.kill()
            log(f"round {r + 1}/{args.rounds}")
    on, off = pct(times["on"]), pct(times["off"])
    return [
        {"--redact": "on", "stores": on["n"], "p50 ms": on["p50_ms"], "p99 ms": on["p99_ms"]},
        {"--redact": "off", "stores": off["n"], "p50 ms": off["p50_ms"], "p99 ms": off["p99_ms"]},
        {"--redact": "on - off", "stores": "", "p50 ms": on["p50_ms"] - off["p50_ms"], "p99 ms": ""},
    ]


def run(args: argparse.Namespace) -> int:
    sample = [json.loads(line) for line in (DATA / "secrets.jsonl").read_text().splitlines()]
    lines = clean_lines(args.locomo, args.clean)
    results: dict[str, Any] = {"recall": recall(sample)}
    print_table(
        results["recall"], "Recall per kind (the sample; found: the secret gone, its kind's placeholder there)", ".3f"
    )
    negatives = [r["text"] for r in sample if r["kind"] is None]
    results["false_positives"] = [
        false_positives(lines, "clean: multilingual sample + LoCoMo turns"),
        false_positives(
            [r["text"] for r in sample if r["kind"] is None and r["half"] == "tune"], "hard negatives (tune)"
        ),
        false_positives(
            [r["text"] for r in sample if r["kind"] is None and r["half"] == "heldout"], "hard negatives (heldout)"
        ),
    ]
    assert sum(r["n"] for r in results["false_positives"][1:]) == len(negatives)
    print()
    print_table(results["false_positives"], "False positives (lines changed by redaction)")
    c = cost(lines)
    results["cost"] = c
    print()
    print_table(
        [
            {
                "lines": c["lines"],
                "chars p50": c["chars p50"],
                "p50 µs": c["p50_ms"] * 1000,
                "p99 µs": c["p99_ms"] * 1000,
            }
        ],
        "What redaction adds to a store, per message (Redaction.clean on the clean lines, 5 passes, this process)",
    )
    results["linearity"] = linearity()
    print()
    print_table(
        results["linearity"],
        "Adversarial inputs: seconds for 1 MB and 4 MB, best of 3 (linear: a ratio near 4)",
        ".3f",
    )
    if args.process:
        results["process"] = process(args, lines[300:] or lines)  # LoCoMo turns
        print()
        print_table(
            results["process"], "Store p50 through a real sidecar, one store at a time, --redact on vs off", ".3f"
        )
    if args.json:
        write_json(args.json, results)
    return 0
