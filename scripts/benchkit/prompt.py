"""Recall a bot can put in its prompt: what is true now first, replaced memories marked, no small talk.

The labelled set is tests/fixtures/prompt_recall/ (tuning.jsonl and heldout.jsonl, split by user; the
format is in that folder's README.md): each user a chat history over months in which statements are later
replaced (moves, jobs, partners, pets, a chain of moves, a place left and come back to), among small talk
and backchannels ("lol", "haha nice", "gn", emoji), in English and in Chinese, Japanese, Korean, Russian
and Arabic; and questions labelled with the memory that should come first (`expect`), the memories it
replaced (`replaced`) and the user's small talk (`small_talk`).

Each user's history is stored through a real sidecar (`--ttl-days 0`, one data dir for all); once the
graph has caught up (`health` says its queue is empty) every question is asked by `query` (default mode,
limit 5) and by `context` (that user, default sections). Printed per split and per kind of question
(present: what is true now; past: what was true before; about: a thing the user said, no change
involved; other_script: questions in the user's own script), and per language for other_script:

  questions         how many were asked
  current-first     of the questions whose `expect` replaced something: the share where the expected
                    memory is in the top 5 and above every `replaced` memory returned (target >= 0.95);
                    "with replaced" counts those questions
  rank-1            the share where the expected memory comes first (other_script target >= 0.90)
  found@5           the share where the expected memory is in the top 5 at all
  replaced shown    memories returned that a later one replaced (a user's `replaced` keys, over all
                    their questions), counted once per question they come back in
  replaced marked   of those, the share carrying `superseded`: an object whose `id` is a memory that
                    replaced it (one later in the same chain) and an `at` (target 1.00)
  false marks       memories returned with a `superseded` that none of the labels say was replaced
  context outdated  `context` memory lines that show a replaced memory / how many of them say
                    "outdated" (target: all)
  padding           small-talk keys in the top 5, in all; "padded" is the share of questions with any
                    (target: 0)

    python scripts/bench.py prompt                      # both splits
    python scripts/bench.py prompt --split tuning --misses
    python scripts/bench.py prompt --users 2 --split tuning --json /tmp/p.json
    python scripts/bench.py prompt --split tuning --min-score 0.14   # another no-padding floor
"""

from __future__ import annotations

import argparse
import html
import json
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import ROOT
from .client import Sidecar, add_sidecar_arguments
from .graph_build import wait_graph_settled
from .output import log, print_table, write_json

SUMMARY = "recall for a prompt: current first, replaced marked, no small-talk padding (labelled users)"
DATA = ROOT / "tests" / "fixtures" / "prompt_recall"
SPLITS = ("tuning", "heldout")
KINDS = ("present", "past", "about", "other_script")
LIMIT = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, default=DATA, help="the folder holding tuning.jsonl and heldout.jsonl")
    parser.add_argument("--split", choices=("tuning", "heldout", "both"), default="both", help="which users")
    parser.add_argument("--users", type=int, default=0, help="only the first N users of each split (0: all)")
    parser.add_argument(
        "--tree", type=Path, help="the source tree whose sidecar runs (its working directory); default: this one"
    )
    add_sidecar_arguments(parser, timeout=300.0)
    parser.add_argument(
        "--min-score",
        type=float,
        help="the no-padding floor sent as `query`'s min_score and `context`'s memories_min_score "
        "(default: none sent, the sidecar's default; 0: no floor)",
    )
    parser.add_argument("--misses", action="store_true", help="print each question that fails a figure (stderr)")
    parser.add_argument("--json", type=Path, help="write the figures (and each question's outcome) here too")


# ----------------------------------------------------------------- the labelled set


def load(folder: Path, split: str) -> list[dict[str, Any]]:
    """The users of one split, each with `split` set, checked: keys unique, timestamps increasing, every
    label naming a message of that user."""
    users = []
    for n, line in enumerate((folder / f"{split}.jsonl").read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        user = json.loads(line)
        user["split"] = split
        keys = [m["key"] for m in user["messages"]]
        where = f"{split}.jsonl line {n} ({user.get('user')})"
        if len(set(keys)) != len(keys):
            raise ValueError(f"{where}: message keys repeat")
        stamps = [m["ts"] for m in user["messages"]]
        if stamps != sorted(stamps) or len(set(stamps)) != len(stamps):
            raise ValueError(f"{where}: timestamps do not increase")
        for q in user["questions"]:
            if q["kind"] not in KINDS:
                raise ValueError(f"{where}: kind {q['kind']!r} of {q['text']!r}")
            missing = {q["expect"], *q["replaced"], *q["small_talk"]} - set(keys)
            if missing:
                raise ValueError(f"{where}: {q['text']!r} names no message {sorted(missing)}")
        users.append(user)
    return users


def outdated(user: dict[str, Any]) -> dict[str, set[str]]:
    """The user's replaced memories (the `replaced` keys of all their questions), each with the keys that may
    be named as what replaced it: the later members of the chains it is labelled in."""
    when = {m["key"]: m["ts"] for m in user["messages"]}
    out: dict[str, set[str]] = {}
    for q in user["questions"]:
        chain = [q["expect"], *q["replaced"]]
        for old in q["replaced"]:
            out.setdefault(old, set()).update(k for k in chain if when[k] > when[old])
    return out


# ----------------------------------------------------------------- scoring (pure)


def _marked(result: dict[str, Any], replacers: set[str]) -> bool:
    sup = result.get("superseded")
    return isinstance(sup, dict) and sup.get("id") in replacers and sup.get("at") is not None


def judge(user: dict[str, Any], question: dict[str, Any], results: list[dict[str, Any]], context: str) -> dict:
    """One question's outcome. `results` are the query's answers, best first, each with `key` (the label
    of the memory it returned, None for one not in the set) and whatever else the answer carried
    (`superseded`, its `id` read as a key too); `context` is the `context` answer's text."""
    old = outdated(user)
    top = [r.get("key") for r in results[:LIMIT]]
    rank = top.index(question["expect"]) + 1 if question["expect"] in top else None
    above = rank is not None and all(r not in top or top.index(r) + 1 > rank for r in question["replaced"])
    shown_old = [r for r in results[:LIMIT] if r.get("key") in old]
    marked = [r for r in shown_old if _marked(r, old[r["key"]])]
    false_marks = [r for r in results[:LIMIT] if r.get("key") not in old and r.get("superseded") is not None]
    lines = html.unescape(context).splitlines()
    content = {m["key"]: m["text"] for m in user["messages"]}
    ctx_old = ctx_marked = 0
    for key in old:
        probe = " ".join(content[key].split())[:24]
        for line in lines:
            if probe in " ".join(line.split()):
                ctx_old += 1
                ctx_marked += "outdated" in line.lower()
    padding = [k for k in top if k in set(question["small_talk"])]
    return {
        "user": user["user"],
        "split": user["split"],
        "lang": user["lang"],
        "kind": question["kind"],
        "text": question["text"],
        "expect": question["expect"],
        "top": top,
        "rank": rank,
        "has_replaced": bool(question["replaced"]),
        "current_first": above,
        "replaced_shown": len(shown_old),
        "replaced_marked": len(marked),
        "false_marks": len(false_marks),
        "context_outdated_shown": ctx_old,
        "context_outdated_marked": ctx_marked,
        "padding": padding,
    }


def _share(n: int, d: int) -> float | None:
    return round(n / d, 3) if d else None


def figures(outcomes: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The figures of a group of judged questions (see the module's help)."""
    out = list(outcomes)
    changed = [o for o in out if o["has_replaced"]]
    shown = sum(o["replaced_shown"] for o in out)
    ctx = sum(o["context_outdated_shown"] for o in out)
    return {
        "questions": len(out),
        "current-first": _share(sum(o["current_first"] for o in changed), len(changed)),
        "with replaced": len(changed),
        "rank-1": _share(sum(o["rank"] == 1 for o in out), len(out)),
        "found@5": _share(sum(o["rank"] is not None for o in out), len(out)),
        "replaced shown": shown,
        "replaced marked": _share(sum(o["replaced_marked"] for o in out), shown),
        "false marks": sum(o["false_marks"] for o in out),
        "context outdated": f"{ctx} / {sum(o['context_outdated_marked'] for o in out)}",
        "padding": sum(len(o["padding"]) for o in out),
        "padded": _share(sum(bool(o["padding"]) for o in out), len(out)),
    }


def tables(outcomes: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows per split and kind, with an "all" row per split and overall; rows per split and language of
    the other_script questions: questions, rank-1, found@5, current-first)."""
    rows, langs = [], []
    splits = [s for s in SPLITS if any(o["split"] == s for o in outcomes)]
    for split in [*splits, "both"] if len(splits) > 1 else splits:
        mine = [o for o in outcomes if split in ("both", o["split"])]
        for kind in [*KINDS, "all"]:
            group = [o for o in mine if kind in ("all", o["kind"])]
            if group:
                rows.append({"split": split, "kind": kind, **figures(group)})
        other = [o for o in mine if o["kind"] == "other_script"]
        for lang in sorted({o["lang"] for o in other}):
            f = figures(o for o in other if o["lang"] == lang)
            langs.append(
                {"split": split, "lang": lang, **{k: f[k] for k in ("questions", "rank-1", "found@5", "current-first")}}
            )
    return rows, langs


# ----------------------------------------------------------------- the run


def run(args: argparse.Namespace) -> int:
    splits = SPLITS if args.split == "both" else (args.split,)
    users = [u for s in splits for u in (load(args.data, s)[: args.users] if args.users else load(args.data, s))]
    outcomes = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-prompt-") as tmp,
        Sidecar(
            Path(tmp) / "data", python=args.python, stderr=Path(tmp) / "stderr.log", timeout=args.timeout, cwd=args.tree
        ) as sc,
    ):
        sc.wait_ready()
        ids: dict[str, dict[str, str]] = {}  # user -> sidecar id -> key
        for u in users:
            uid = f"{u['split']}-{u['user']}"
            msgs = [
                {"user_id": uid, "username": u["name"], "content": m["text"], "timestamp": m["ts"], "channel_id": uid}
                for m in u["messages"]
            ]
            got = sc.request({"type": "store", "messages": msgs}, "ok")["ids"]
            ids[uid] = {i: m["key"] for i, m in zip(got, u["messages"])}
        log(f"stored {sum(len(u['messages']) for u in users)} messages of {len(users)} users; waiting for the graph")
        wait_graph_settled(sc, graph=True, limit_s=1800.0)
        log(f"asking {sum(len(u['questions']) for u in users)} questions (query and context each)")
        for u in users:
            uid = f"{u['split']}-{u['user']}"
            for q in u["questions"]:
                floor = {} if args.min_score is None else {"min_score": args.min_score}
                ans = sc.request(
                    {"type": "query", "user_id": uid, "text": q["text"], "limit": LIMIT, **floor}, "results"
                )
                results = [{**r, "key": ids[uid].get(r["id"])} for r in ans["messages"]]
                for r in results:  # `superseded.id` read as a key, as the scoring speaks keys
                    if isinstance(r.get("superseded"), dict):
                        r["superseded"] = {**r["superseded"], "id": ids[uid].get(r["superseded"].get("id"))}
                ctx = sc.request(
                    {"type": "context", "user_id": uid, "username": u["name"], "text": q["text"]}
                    | ({} if args.min_score is None else {"memories_min_score": args.min_score}),
                    "context",
                )
                o = judge(u, q, results, ctx["text"])
                outcomes.append(o)
                if args.misses and (o["rank"] != 1 or (o["has_replaced"] and not o["current_first"]) or o["padding"]):
                    text = {m["key"]: m["text"] for m in u["messages"]}
                    log(
                        f"[{o['split']} {o['user']} {o['kind']}] {q['text']!r} -> want {text[q['expect']]!r} "
                        f"(rank {o['rank']}); top: {[text.get(k, k) for k in o['top']]}"
                    )
        sc.shutdown()
    rows, langs = tables(outcomes)
    print_table(rows, title="Per split and kind of question (query: default mode, limit 5)", floatfmt=".3f")
    if langs:
        print()
        print_table(langs, title="Questions in the user's own script, per language", floatfmt=".3f")
    print(f"\n{len(users)} users ({', '.join(splits)}), {len(outcomes)} questions, data {args.data}")
    if args.json:
        write_json(args.json, {"rows": rows, "languages": langs, "questions": outcomes})
    return 0
