"""Measure cosine similarities of the labelled fact pairs in tests/fixtures/fact_pairs.jsonl with the
sidecar's real embedding model, and report precision/recall of the two consolidation thresholds:

- the duplicate rule (`sidecar.facts.is_duplicate`: similarity >= duplicate threshold and the same
  numbers in both -> "near-identical, nothing new stored"), judged against the `rewording` label;
- the candidate threshold (similarity >= candidate threshold -> the pair is shown for a decision),
  judged against every label but `unrelated`.

Usage: python scripts/measure_fact_thresholds.py [--duplicate 0.9] [--candidate 0.5] [--pairs]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sidecar.embedder import Embedder  # noqa: E402
from sidecar.facts import CANDIDATE_THRESHOLD, DUPLICATE_THRESHOLD, is_duplicate  # noqa: E402
from sidecar.model import resolve_model  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "fact_pairs.jsonl"


def pr(pred: np.ndarray, truth: np.ndarray) -> tuple[float, float, int, int, int]:
    tp = int((pred & truth).sum())
    fp = int((pred & ~truth).sum())
    fn = int((~pred & truth).sum())
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return precision, recall, tp, fp, fn


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duplicate", type=float, default=DUPLICATE_THRESHOLD)
    ap.add_argument("--candidate", type=float, default=CANDIDATE_THRESHOLD)
    ap.add_argument("--pairs", action="store_true", help="print every pair with its similarity")
    args = ap.parse_args()

    pairs = [orjson.loads(line) for line in FIXTURE.read_bytes().splitlines() if line.strip()]
    files = resolve_model(None, True, None)
    emb = Embedder(files, threads=2)
    a = np.stack([emb.embed_one(p["a"]) for p in pairs])
    b = np.stack([emb.embed_one(p["b"]) for p in pairs])
    sims = (a * b).sum(axis=1)
    labels = np.array([p["label"] for p in pairs])

    print(f"model {files.name} ({files.source}), {len(pairs)} pairs from {FIXTURE.relative_to(ROOT)}\n")
    print("| label | n | min | median | max |")
    print("|---|---|---|---|---|")
    for label in ("rewording", "contradiction", "mergeable", "unrelated"):
        s = sims[labels == label]
        print(f"| {label} | {len(s)} | {s.min():.3f} | {np.median(s):.3f} | {s.max():.3f} |")
    if args.pairs:
        print()
        for p, s in sorted(zip(pairs, sims), key=lambda x: -x[1]):
            print(f"{s:.3f}  {p['label']:<13} {p['a']!r} / {p['b']!r}")

    dup_truth = labels == "rewording"
    cand_truth = labels != "unrelated"
    print("\n| threshold | rule | precision | recall | tp | fp | fn |")
    print("|---|---|---|---|---|---|---|")
    for t in sorted({0.80, 0.85, 0.88, 0.90, 0.92, 0.95, args.duplicate}):
        p, r, tp, fp, fn = pr(sims >= t, dup_truth)
        mark = " (chosen)" if t == args.duplicate else ""
        print(f"| {t:.2f}{mark} | similarity only | {p:.3f} | {r:.3f} | {tp} | {fp} | {fn} |")
        rule = np.array([is_duplicate(q["b"], q["a"], float(s), t) for q, s in zip(pairs, sims)])
        p, r, tp, fp, fn = pr(rule, dup_truth)
        print(f"| {t:.2f}{mark} | duplicate rule (+ number guard) | {p:.3f} | {r:.3f} | {tp} | {fp} | {fn} |")
    for t in sorted({0.30, 0.35, 0.40, 0.45, 0.50, args.candidate}):
        p, r, tp, fp, fn = pr(sims >= t, cand_truth)
        mark = " (chosen)" if t == args.candidate else ""
        print(f"| {t:.2f}{mark} | candidate (similarity) | {p:.3f} | {r:.3f} | {tp} | {fp} | {fn} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
