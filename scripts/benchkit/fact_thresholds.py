"""Cosine similarities of the labelled fact pairs in tests/fixtures/fact_pairs.jsonl, with the sidecar's
real embedding model, and precision/recall of the two consolidation thresholds:

- the duplicate rule (`sidecar.facts.rules.is_duplicate`: similarity >= duplicate threshold and the same
  numbers in both -> "near-identical, nothing new stored"), judged against the `rewording` label;
- the candidate threshold (similarity >= candidate threshold -> the pair is shown for a decision),
  judged against every label but `unrelated`.

With --relations, the rule by which `context` shows a fact and a current relation that say the same thing
once, on tests/fixtures/relation_fact_pairs.jsonl (a relation read as a fact, "Lives in Paris", against a
fact a host or an LLM wrote, labelled same or not): the sentences equal, the fact naming the relation's
object, their similarity, and the rule context uses (sidecar.facts.rules.same_as_fact).

Example: python scripts/bench.py fact-thresholds --pairs
         python scripts/bench.py fact-thresholds --relations
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from . import ROOT
from .output import print_table

SUMMARY = "precision/recall of the fact similarity thresholds"
FIXTURE = ROOT / "tests" / "fixtures" / "fact_pairs.jsonl"
RELATION_PAIRS = ROOT / "tests" / "fixtures" / "relation_fact_pairs.jsonl"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--duplicate",
        type=float,
        help="the duplicate threshold to mark (default: sidecar.facts.rules.DUPLICATE_THRESHOLD)",
    )
    parser.add_argument(
        "--candidate",
        type=float,
        help="the candidate threshold to mark (default: sidecar.facts.rules.CANDIDATE_THRESHOLD)",
    )
    parser.add_argument("--pairs", action="store_true", help="print every pair with its similarity")
    parser.add_argument(
        "--relations",
        action="store_true",
        help="also measure the rule that shows a fact and a relation saying the same thing once",
    )


def pr(pred: np.ndarray, truth: np.ndarray) -> dict[str, float | int]:
    tp = int((pred & truth).sum())
    fp = int((pred & ~truth).sum())
    fn = int((~pred & truth).sum())
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return {"precision": precision, "recall": recall, "tp": tp, "fp": fp, "fn": fn}


def run(args: argparse.Namespace) -> int:
    from sidecar.embedding.embedder import Embedder
    from sidecar.embedding.model import resolve_model
    from sidecar.facts.rules import CANDIDATE_THRESHOLD, DUPLICATE_THRESHOLD, is_duplicate

    duplicate = DUPLICATE_THRESHOLD if args.duplicate is None else args.duplicate
    candidate = CANDIDATE_THRESHOLD if args.candidate is None else args.candidate
    pairs = [json.loads(line) for line in FIXTURE.read_bytes().splitlines() if line.strip()]
    files = resolve_model(None, True, None)
    emb = Embedder(files, threads=2)
    a = np.stack([emb.embed_passage(p["a"]) for p in pairs])
    b = np.stack([emb.embed_passage(p["b"]) for p in pairs])
    sims = (a * b).sum(axis=1)
    labels = np.array([p["label"] for p in pairs])

    rows = []
    for label in ("rewording", "contradiction", "mergeable", "unrelated"):
        s = sims[labels == label]
        rows.append(
            {"label": label, "n": len(s), "min": float(s.min()), "median": float(np.median(s)), "max": float(s.max())}
        )
    print_table(
        rows,
        floatfmt=".3f",
        title=f"model {files.name} ({files.source}), {len(pairs)} pairs from {FIXTURE.relative_to(ROOT)}",
    )
    if args.pairs:
        print()
        for p, s in sorted(zip(pairs, sims), key=lambda x: -x[1]):
            print(f"{s:.3f}  {p['label']:<13} {p['a']!r} / {p['b']!r}")

    dup_truth = labels == "rewording"
    cand_truth = labels != "unrelated"
    rows = []
    for t in sorted({0.80, 0.85, 0.88, 0.90, 0.92, 0.95, duplicate}):
        threshold = f"{t:.2f}" + (" (chosen)" if t == duplicate else "")
        rows.append({"threshold": threshold, "rule": "similarity only", **pr(sims >= t, dup_truth)})
        rule = np.array([is_duplicate(q["b"], q["a"], float(s), t) for q, s in zip(pairs, sims)])
        rows.append({"threshold": threshold, "rule": "duplicate rule (+ number guard)", **pr(rule, dup_truth)})
    for t in sorted({0.30, 0.35, 0.40, 0.45, 0.50, candidate}):
        rows.append(
            {
                "threshold": f"{t:.2f}" + (" (chosen)" if t == candidate else ""),
                "rule": "candidate (similarity)",
                **pr(sims >= t, cand_truth),
            }
        )
    print()
    print_table(rows, floatfmt=".3f")
    if args.relations:
        print()
        relations(emb, args.pairs)
    return 0


def relations(emb, show: bool) -> None:
    from sidecar.facts.rules import DUPLICATE_THRESHOLD, mentions_object, same_as_fact
    from sidecar.graph.relations import AS_FACT

    pairs = [json.loads(line) for line in RELATION_PAIRS.read_bytes().splitlines() if line.strip()]
    sentences = [AS_FACT[p["predicate"]].format(p["object"]) for p in pairs]
    a = np.stack([emb.embed_passage(t) for t in sentences])
    b = np.stack([emb.embed_passage(p["fact"]) for p in pairs])
    sims = (a * b).sum(axis=1)
    truth = np.array([p["same"] for p in pairs])
    named = np.array([mentions_object(p["fact"], p["object"]) for p in pairs])
    equal = np.array([s.casefold() == p["fact"].casefold() for s, p in zip(sentences, pairs)])
    rows = [
        {"rule": "sentence equal to the fact", **pr(equal, truth)},
        {"rule": "the fact names the object", **pr(named, truth)},
    ]
    for t in sorted({0.6, 0.7, 0.8, DUPLICATE_THRESHOLD, 0.92}):
        rows.append({"rule": f"similarity >= {t:.2f}", **pr(sims >= t, truth)})
    for t in sorted({0.6, 0.7, 0.8, DUPLICATE_THRESHOLD, 0.92}):
        chosen = " (chosen)" if t == DUPLICATE_THRESHOLD else ""
        rule = np.array(
            [same_as_fact(s, p["object"], p["fact"], float(x), t) for s, p, x in zip(sentences, pairs, sims)]
        )
        rows.append({"rule": f"same_as_fact at {t:.2f}{chosen}", **pr(rule, truth)})
    print_table(
        rows,
        floatfmt=".3f",
        title=f"{len(pairs)} relation/fact pairs ({int(truth.sum())} the same) from {RELATION_PAIRS.relative_to(ROOT)}",
    )
    if show:
        print()
        for p, sentence, x in sorted(zip(pairs, sentences, sims), key=lambda z: -z[2]):
            print(f"{x:.3f}  {'same' if p['same'] else 'diff'}  {sentence!r} / {p['fact']!r}")
