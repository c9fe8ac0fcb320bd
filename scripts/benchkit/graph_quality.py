"""Graph memory, what the offline tier reads: measured in process on labelled samples (no sidecar, no model).

relations     tests/fixtures/relations.jsonl: statements a reader sees at once in chat (written lines and
              LoCoMo turns; a third about other people; questions, negations, hypotheticals, wishes and
              reported speech that must make nothing), each with the relations it states. Precision and recall
              of `graph.relations.find_relations` per predicate, on the tuning half and the held-out half
              (the split is fixed in the file; the tier is tuned on the tuning half only; targets on the
              held-out half: precision >= 0.90, recall >= 0.75). A found relation counts when its subject,
              predicate, object and "ended" all match (names case- and accent-folded, a leading
              the/a/an/my dropped).
languages     tests/fixtures/relations_multilingual.jsonl: the same, in German, Spanish, French, Portuguese,
              Italian, Chinese and Japanese (42 statements each, written for it; the held-out half written before
              the language's lexicon, never tuned on), the memory's language decided as the graph decides it
              (graph/lang/); targets on the held-out half: P >= 0.95, R >= 0.80 in every language
entities      tests/fixtures/entities_de.jsonl, entities_es.jsonl: typed F1 of the graph builder's mentions in
              German and Spanish (nouns are no entities), tuning and held-out halves; and
              tests/fixtures/entities_locomo.jsonl (the sample the fast tier was written against) and
              entities_locomo_heldout.jsonl: span precision, recall and F1 of `graph.mentions.find_mentions`,
              typed F1 (a span counts only with its type), ms per turn
backchannel   tests/fixtures/backchannel.jsonl: precision and recall of `sidecar.text.is_backchannel`

  python scripts/bench.py graph-quality
  python scripts/bench.py graph-quality --errors tune     # what the tier misses or gets wrong, one half
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
import unicodedata
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .output import print_table, write_json

SUMMARY = "graph memory: relations, entity types and backchannels of the offline tier on labelled samples"
FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"
TARGET_PRECISION, TARGET_RECALL = 0.90, 0.75
LANGUAGE_PRECISION, LANGUAGE_RECALL = 0.95, 0.80


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--errors",
        choices=("tune", "heldout", "entities", "languages"),
        help="also print each wrong or missed relation of this half (or each entity error of the "
        "tuning entity sample; default: none)",
    )
    parser.add_argument("--json", type=Path, help="write all results here")


def records(name: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if "_comment" not in r]


def _norm(name: str) -> str:
    text = unicodedata.normalize("NFKD", name.casefold())
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = re.sub(r"^(?:the|a|an|my|our)\s+", "", re.sub(r"\s+", " ", text).strip(" .,;:!?\"'’"))
    return text


def relation_key(subject: str | None, predicate: str, obj: str, ended: bool) -> tuple[str, str, str, bool]:
    return (_norm(subject or "me"), predicate, _norm(obj), bool(ended))


def gold_relations(record: dict[str, Any]) -> set[tuple[str, str, str, bool]]:
    return {relation_key(r[0], r[1], r[2], len(r) > 3 and r[3] == "ended") for r in record["relations"]}


def found_relations(record: dict[str, Any], find: Callable[..., list[Any]]) -> set[tuple[str, str, str, bool]]:
    known = {_norm(k): v for k, v in record.get("known", {}).items()}
    return {
        relation_key(getattr(r, "subject", None), r.predicate, r.object, getattr(r, "ended", False))
        for r in find(record["text"], known)
    }


def relation_scores(rows: list[dict[str, Any]], find: Callable[..., list[Any]]) -> dict[str, Any]:
    """Per predicate and overall: tp, fp, fn, precision, recall; and the errors, record by record."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    errors = []
    for r in rows:
        gold, got = gold_relations(r), found_relations(r, find)
        for k in gold & got:
            counts[k[1]][0] += 1
        for k in got - gold:
            counts[k[1]][1] += 1
        for k in gold - got:
            counts[k[1]][2] += 1
        if gold != got:
            errors.append({"text": r["text"], "wrong": sorted(got - gold), "missed": sorted(gold - got)})
    out = {}
    for pred, (tp, fp, fn) in sorted(counts.items()):
        out[pred] = _prf(tp, fp, fn)
    tp, fp, fn = (sum(c[i] for c in counts.values()) for i in range(3))
    return {
        "predicates": out,
        "all": _prf(tp, fp, fn),
        "errors": errors,
        "statements": len(rows),
        "empty": sum(1 for r in rows if not r["relations"]),
    }


def _prf(tp: int, fp: int, fn: int) -> dict[str, Any]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return {"tp": tp, "fp": fp, "fn": fn, "precision": p, "recall": r}


def entity_scores(name: str) -> dict[str, Any]:
    from sidecar.graph.mentions import find_mentions

    rows = records(name)
    tp = fp = fn = typed = 0
    errors = []
    t0 = time.perf_counter()
    found = [find_mentions(r["text"]) for r in rows]
    elapsed = time.perf_counter() - t0
    for r, mentions in zip(rows, found):
        gold = {(e["start"], e["end"]): e["type"] for e in r["entities"]}
        got = {(m.start, m.end): m.type for m in mentions}
        tp += len(gold.keys() & got.keys())
        fp += len(got.keys() - gold.keys())
        fn += len(gold.keys() - got.keys())
        typed += sum(1 for k in gold.keys() & got.keys() if gold[k] == got[k])
        for k in sorted(gold.keys() | got.keys()):
            if gold.get(k) != got.get(k):
                errors.append(
                    {
                        "gold": gold.get(k),
                        "got": got.get(k),
                        "span": r["text"][k[0] : k[1]],
                        "context": r["text"][max(0, k[0] - 40) : k[1] + 25],
                    }
                )
    p, rc = tp / (tp + fp), tp / (tp + fn)
    return {
        "turns": len(rows),
        "entities": tp + fn,
        "precision": p,
        "recall": rc,
        "f1": 2 * p * rc / (p + rc),
        "typed_f1": 2 * typed / (2 * tp + fp + fn),
        "ms_per_turn": elapsed * 1000 / len(rows),
        "errors": errors,
    }


def language_entity_scores(name: str, split: str) -> dict[str, Any]:
    """Typed F1 of the graph builder's mentions (the lexicon's typing in a cue language; dates left out, as the
    builder leaves them out of the graph) on one half of a language's entity sample."""
    from sidecar.graph.builder import typed_mentions

    rows = [r for r in records(name) if r["split"] == split]
    tp = fp = fn = typed = 0
    for r in rows:
        gold = {(e["start"], e["end"]): e["type"] for e in r["entities"]}
        got = {(m.start, m.end): m.type for m in typed_mentions(r["text"]) if m.type != "date"}
        tp += len(gold.keys() & got.keys())
        fp += len(got.keys() - gold.keys())
        fn += len(gold.keys() - got.keys())
        typed += sum(1 for k in gold.keys() & got.keys() if gold[k] == got[k])
    p = tp / (tp + fp) if tp + fp else 1.0
    rc = tp / (tp + fn) if tp + fn else 1.0
    return {
        "lines": len(rows),
        "entities": tp + fn,
        "precision": p,
        "recall": rc,
        "typed_f1": 2 * typed / (2 * tp + fp + fn) if tp + fp + fn else 1.0,
    }


def backchannel_scores() -> dict[str, Any]:
    from sidecar.text import is_backchannel

    rows = records("backchannel.jsonl")
    got = [is_backchannel(r["text"]) for r in rows]
    tp = sum(1 for r, g in zip(rows, got) if r["backchannel"] and g)
    fp = sum(1 for r, g in zip(rows, got) if not r["backchannel"] and g)
    fn = sum(1 for r, g in zip(rows, got) if r["backchannel"] and not g)
    return {"messages": len(rows), "backchannels": tp + fn, **_prf(tp, fp, fn)}


def _relation_rows(scores: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    preds = sorted({p for s in scores.values() for p in s["predicates"]})
    rows = []
    for pred in [*preds, "all"]:
        row: dict[str, Any] = {"predicate": pred}
        for half, s in scores.items():
            v = s["all"] if pred == "all" else s["predicates"].get(pred)
            if v is None:
                row |= {f"{half} n": 0, f"{half} P": None, f"{half} R": None}
                continue
            row |= {f"{half} n": v["tp"] + v["fn"], f"{half} P": v["precision"], f"{half} R": v["recall"]}
        held = scores["heldout"]["all"] if pred == "all" else scores["heldout"]["predicates"].get(pred)
        row["held-out targets"] = (
            ""
            if held is None
            else ("met" if held["precision"] >= TARGET_PRECISION and held["recall"] >= TARGET_RECALL else "missed")
        )
        rows.append(row)
    return rows


def _language_rows(find: Callable[..., list[Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows = records("relations_multilingual.jsonl")
    out, scores = [], {}
    for lang in dict.fromkeys(r["lang"] for r in rows):
        row: dict[str, Any] = {"language": lang}
        for half in ("tune", "heldout"):
            s = relation_scores([r for r in rows if r["lang"] == lang and r["split"] == half], find)
            scores[f"{lang} {half}"] = s
            a = s["all"]
            row |= {f"{half} n": a["tp"] + a["fn"], f"{half} P": a["precision"], f"{half} R": a["recall"]}
        held = scores[f"{lang} heldout"]["all"]
        met = held["precision"] >= LANGUAGE_PRECISION and held["recall"] >= LANGUAGE_RECALL
        row["read ms"] = reading_ms([r["text"] for r in rows if r["lang"] == lang])
        out.append(row | {"held-out targets": "met" if met else "missed"})
    return out, scores


def reading_ms(texts: list[str]) -> float:
    """What the graph builder's reading adds per stored message in this language, in process: the median over the
    statements of the lower of three timings of its mentions and relations (`typed_mentions`, `find_relations`).
    The builder runs in the background, so a `store` answers without waiting for it."""
    from sidecar.graph.builder import typed_mentions
    from sidecar.graph.relations import find_relations

    times = []
    for text in texts:
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            typed_mentions(text)
            find_relations(text)
            best = min(best, time.perf_counter() - t)
        times.append(best * 1000)
    return statistics.median(times) if times else 0.0


def run(args: argparse.Namespace) -> int:
    from sidecar.graph.relations import find_relations

    rel = records("relations.jsonl")
    halves = {half: [r for r in rel if r["split"] == half] for half in ("tune", "heldout")}
    scores = {half: relation_scores(rows, find_relations) for half, rows in halves.items()}
    title = (
        f"relations (tests/fixtures/relations.jsonl: {len(rel)} statements, tune {len(halves['tune'])} / "
        f"held-out {len(halves['heldout'])}; n = relations labelled; targets on the held-out half: "
        f"P >= {TARGET_PRECISION:.2f}, R >= {TARGET_RECALL:.2f})"
    )
    print_table(_relation_rows(scores), title, floatfmt=".3f")
    print()
    lang_rows, lang_scores = _language_rows(find_relations)
    lang_rows.insert(0, {"language": "en (relations.jsonl)", "read ms": reading_ms([r["text"] for r in rel])})
    n = len(records("relations_multilingual.jsonl"))
    print_table(
        lang_rows,
        f"relations by language (tests/fixtures/relations_multilingual.jsonl: {n} statements; n = relations "
        f"labelled; targets on the held-out half: P >= {LANGUAGE_PRECISION:.2f}, R >= {LANGUAGE_RECALL:.2f}; read ms: "
        "the builder's reading of one statement, median, in process)",
        floatfmt=".3f",
    )
    print()
    ents = {name: entity_scores(name) for name in ("entities_locomo.jsonl", "entities_locomo_heldout.jsonl")}
    print_table(
        [
            {
                "sample": name,
                "turns": e["turns"],
                "entities": e["entities"],
                "span P": e["precision"],
                "span R": e["recall"],
                "span F1": e["f1"],
                "typed F1": e["typed_f1"],
                "ms/turn": round(e["ms_per_turn"], 3),
            }
            for name, e in ents.items()
        ],
        "entities (fast tier alone, no gazetteer)",
        floatfmt=".3f",
    )
    print()
    lang_ents = {
        f"{name} {split}": language_entity_scores(name, split)
        for name in ("entities_de.jsonl", "entities_es.jsonl")
        for split in ("tune", "heldout")
    }
    print_table(
        [
            {
                "sample": key,
                "lines": e["lines"],
                "entities": e["entities"],
                "span P": e["precision"],
                "span R": e["recall"],
                "typed F1": e["typed_f1"],
            }
            for key, e in lang_ents.items()
        ],
        "entities past English (the graph builder's mentions: the lexicon's typing; target typed F1 >= 0.90)",
        floatfmt=".3f",
    )
    print()
    bc = backchannel_scores()
    print_table(
        [
            {
                "sample": "backchannel.jsonl",
                "messages": bc["messages"],
                "backchannels": bc["backchannels"],
                "precision": bc["precision"],
                "recall": bc["recall"],
            }
        ],
        "backchannels",
        floatfmt=".3f",
    )
    if args.errors in ("tune", "heldout"):
        print(f"\nrelation errors, {args.errors} half:")
        for e in scores[args.errors]["errors"]:
            print(f"  {e['text']!r}\n    wrong:  {e['wrong']}\n    missed: {e['missed']}")
    elif args.errors == "languages":  # the tuning halves only: the held-out ones are not looked into
        print("\nrelation errors by language, tuning halves:")
        for key, s in lang_scores.items():
            for e in s["errors"] if key.endswith("tune") else []:
                print(f"  {key[:2]} {e['text']!r}\n    wrong:  {e['wrong']}\n    missed: {e['missed']}")
    elif args.errors == "entities":
        print("\nentity errors, entities_locomo.jsonl:")
        for e in ents["entities_locomo.jsonl"]["errors"]:
            print(f"  gold {e['gold']!s:12} got {e['got']!s:12} {e['span']!r:28} | {e['context']!r}")
    if args.json:
        write_json(
            args.json,
            {
                "relations": scores,
                "languages": lang_scores,
                "entities": ents,
                "entities_by_language": lang_ents,
                "backchannel": bc,
            },
        )
    return 0
