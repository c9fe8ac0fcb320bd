"""Recall by validity: a labelled check that a question about the present finds what is true now and a
question about the past what was true before.

--histories generated users (seed --seed) each state a relation ("I live in Berlin.", "I work at Acme.",
"I'm studying law at Leeds University.", "My boyfriend is called Tom."), chat a little (some messages name
the old place or company again), state the change ("I moved to Paris.", "I joined Globex.", ...) about a
month later, and chat a little more. Each user is then asked two questions about the present ("where does
Sam live now?", "where do I work these days?", "where does Sam work?") and two about the past ("where did
I live before?", "where did Sam use to work?"), each labelled with the episode that answers it: the change
for the present, the first statement for the past.

Per mode (`graph_recall` with strengthen off: its first trace's first episode; `query` mode `graph`; the
default `query`, which does not read validity, for reference) it prints hit@1 (the labelled episode
first) and "right above wrong" (the labelled episode returned, and above the other statement when that
is returned too). Then `as_of` is checked against each user's timeline (`entity` "me" and `context` at five
times: before the first statement, between it and the change, at the change, after it, now): "as_of = timeline"
counts the answers whose relations are exactly those the unfiltered answer says were valid then (valid_from <=
as_of < valid_to), "labelled" those whose relation of the changed kind is the labelled one (none, the first, the
new), and "context then" the `context` answers whose "True Then" lines name the labelled place and not the
other. --tree runs another source tree's sidecar (its working directory), to compare;
--big-user N adds one user with N current relations and times `context` for them:

    python scripts/bench.py validity
    git archive main | tar -x -C /tmp/base && python scripts/bench.py validity --tree /tmp/base
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .client import Sidecar, add_sidecar_arguments
from .output import log, print_table, write_json

SUMMARY = "recall by validity: present and past questions over histories with a change (labelled)"
DAY = 86_400
NAMES = [
    "Sam",
    "Alex",
    "Jordan",
    "Priya",
    "Mateo",
    "Lena",
    "Kofi",
    "Yuki",
    "Omar",
    "Chloe",
    "Ivan",
    "Maya",
    "Noor",
    "Tariq",
    "Elena",
    "Ravi",
    "Sofia",
    "Jonas",
    "Aiko",
    "Luca",
]
CITIES = [
    "Berlin",
    "Paris",
    "Lisbon",
    "Porto",
    "Madrid",
    "Oslo",
    "Vienna",
    "Dublin",
    "Prague",
    "Rome",
    "Seoul",
    "Toronto",
    "Denver",
    "Austin",
    "Glasgow",
    "Krakow",
]
COMPANIES = [
    "Acme",
    "Globex",
    "Initech",
    "Umbrella Labs",
    "Hooli",
    "Stark Industries",
    "Wayne Enterprises",
    "Cyberdyne",
    "Soylent",
    "Vandelay Industries",
    "Wonka Foods",
    "Tyrell Systems",
]
SCHOOLS = [
    "Leeds University",
    "Trinity College",
    "Kyoto University",
    "McGill University",
    "the Sorbonne",
    "Delft University",
]
PARTNERS = ["Tom", "Mia", "Jonah", "Lena", "Marco", "Aisha", "Felix", "Nadia"]
# predicate -> (first statements, change statements, fillers naming the value, present questions, past questions)
KINDS: dict[str, dict[str, list[str]]] = {
    "lives_in": {
        "first": ["I live in {a}.", "I'm living in {a} at the moment.", "I've lived in {a} for three years."],
        "change": ["I moved to {b}.", "Big step: I just moved to {b} last week.", "I relocated to {b} for good."],
        "old": ["{a} is so grey in winter.", "The trams in {a} are always late.", "I know every cafe in {a}."],
        "new": [
            "Found a great bakery near the new flat.",
            "The new neighbourhood is quiet.",
            "Still unpacking boxes in {b}.",
        ],
        "now": [
            "where does {n} live now?",
            "Where do I live these days?",
            "Where does {n} live?",
            "What city am I living in currently?",
        ],
        "past": ["where did {n} live before?", "Where did I use to live?", "Where was I living previously?"],
    },
    "works_at": {
        "first": ["I work at {a}.", "I work for {a} as an engineer.", "I've worked at {a} since 2019."],
        "change": ["I joined {b}.", "I started working at {b} this month.", "I got a job at {b}!"],
        "old": ["Meetings at {a} take forever.", "My team at {a} had a party.", "{a} moved our office again."],
        "new": ["First week at the new job went well.", "My new manager is great.", "Onboarding at {b} is long."],
        "now": [
            "Where does {n} work now?",
            "where do I work these days?",
            "Where does {n} work?",
            "Who is my employer currently?",
        ],
        "past": ["where did {n} use to work?", "Where did I work before?", "Which company was I at previously?"],
    },
    "studies_at": {
        "first": ["I'm studying law at {a}.", "I study at {a}."],
        "change": ["I'm studying medicine at {b} now.", "I'm enrolled at {b} since September."],
        "old": ["The library at {a} closes too early.", "Exams at {a} were brutal."],
        "new": ["The new campus is huge.", "Lectures at {b} start at eight."],
        "now": ["Where does {n} study now?", "where am I studying these days?"],
        "past": ["Where did {n} study before?", "Where did I use to study?"],
    },
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--histories", type=int, default=30, help="users, each with one change")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument(
        "--tree", type=Path, help="the source tree whose sidecar runs (its working directory); default: this one"
    )
    add_sidecar_arguments(parser, timeout=300.0)
    parser.add_argument("--misses", action="store_true", help="print each question graph_recall missed (stderr)")
    parser.add_argument(
        "--big-user",
        type=int,
        default=0,
        metavar="N",
        help="also one user stating N likes (N current relations): context's latency and size",
    )
    parser.add_argument("--json", type=Path, help="write the results here too")


def history(rng: random.Random, k: int, t0: int) -> tuple[str, list[dict[str, Any]], list[tuple[str, int, str]]]:
    """One user: (user_id, messages, questions as (text, index of the labelled message, kind))."""
    name = NAMES[k % len(NAMES)]
    kind = ("lives_in", "works_at", "studies_at")[k % 3]
    pool = {"lives_in": CITIES, "works_at": COMPANIES, "studies_at": SCHOOLS}[kind]
    a, b = rng.sample(pool, 2)
    t = KINDS[kind]
    lines = [rng.choice(t["first"])]
    lines += rng.sample(t["old"], 2)
    first, change = 0, len(lines)
    lines += [rng.choice(t["change"])]
    lines += rng.sample(t["new"], 2)
    times = [t0, t0 + 3_600, t0 + 5 * DAY, t0 + 30 * DAY, t0 + 30 * DAY + 600, t0 + 33 * DAY]
    uid = f"v{k}"
    msgs = [
        {"user_id": uid, "username": name, "content": line.format(a=a, b=b), "timestamp": ts, "channel_id": uid}
        for line, ts in zip(lines, times)
    ]
    questions = [(q.format(n=name), change, "now") for q in rng.sample(t["now"], 2)]
    questions += [(q.format(n=name), first, "past") for q in rng.sample(t["past"], 2)]
    return uid, msgs, questions


def run(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    t0 = int(time.time()) - 90 * DAY
    data = [history(rng, k, t0 + k * 60) for k in range(args.histories)]
    counts: dict[tuple[str, str], list[int]] = {}  # (mode, kind) -> [hit@1, right above wrong, asked]
    with (
        tempfile.TemporaryDirectory(prefix="bench-validity-") as tmp,
        Sidecar(
            Path(tmp) / "data", python=args.python, stderr=Path(tmp) / "stderr.log", timeout=args.timeout, cwd=args.tree
        ) as sc,
    ):
        sc.wait_ready()
        ids: dict[str, list[str]] = {}
        for uid, msgs, _qs in data:
            ids[uid] = sc.request({"type": "store", "messages": msgs}, "ok")["ids"]
        log(f"stored {args.histories} histories; asking {sum(len(q) for *_, q in data)} questions x 3 modes")
        for uid, _msgs, qs in data:
            for text, answer, kind in qs:
                right = ids[uid][answer]
                wrong = ids[uid][3 if kind == "past" else 0]  # the other statement of the relation
                r = sc.request(
                    {"type": "graph_recall", "user_id": uid, "text": text, "strengthen": False}, "graph_recall"
                )
                ranked = {"graph_recall": [e["id"] for t in r["traces"] for e in t["episodes"]]}
                for mode in ("graph", "hybrid"):
                    q = sc.request(
                        {"type": "query", "user_id": uid, "text": text, "mode": mode, "limit": 10}, "results"
                    )
                    ranked["query " + ("graph" if mode == "graph" else "default")] = [m["id"] for m in q["messages"]]
                if args.misses and (not ranked["graph_recall"] or ranked["graph_recall"][0] != right):
                    content = {i: m["content"] for i, m in zip(ids[uid], _msgs)}
                    log(
                        f"missed ({kind}): {text!r} -> {content.get(right)!r}; first: "
                        f"{content.get(ranked['graph_recall'][0]) if ranked['graph_recall'] else None!r}"
                    )
                for mode, got in ranked.items():
                    c = counts.setdefault((mode, kind), [0, 0, 0])
                    c[0] += bool(got) and got[0] == right
                    c[1] += right in got and (wrong not in got or got.index(right) < got.index(wrong))
                    c[2] += 1
        as_of = as_of_checks(sc, data, t0)
        big = big_user(sc, args.big_user, t0) if args.big_user else None
        sc.shutdown()
    rows = [
        {
            "mode": mode,
            "asks": kind,
            "questions": n,
            "hit@1": round(hit / n, 3),
            "right above wrong": round(above / n, 3),
        }
        for (mode, kind), (hit, above, n) in sorted(counts.items())
    ]
    print_table(rows, floatfmt=".3f")
    print()
    print_table([as_of], floatfmt=".3f")
    print(
        f"\n{args.histories} histories (seed {args.seed}), tree {args.tree or Path(__file__).parents[2]}",
        file=sys.stdout,
    )
    if big:
        print()
        print_table([big], floatfmt=".1f")
    if args.json:
        write_json(args.json, {"rows": rows, "as_of": as_of, "big_user": big})
    return 0


def _then(r: dict[str, Any], t: float) -> bool:
    return r["valid_from"] <= t and (r["valid_to"] is None or r["valid_to"] > t)


def _entity(sc: Sidecar, uid: str, as_of: float | None) -> dict[str, Any]:
    """The user's "me" entity (as of a time), or {} when there was none then (not_found)."""
    req: dict[str, Any] = {"type": "entity", "user_id": uid, "name": "me"}
    if as_of is not None:
        req["as_of"] = as_of
    sc.send(req)
    r = sc.read()
    return r if r.get("type") == "entity" else {}


def as_of_checks(sc: Sidecar, data: list[Any], t0: int) -> dict[str, Any]:
    """`entity` "me" and `context` as of five times of each user's timeline (the first statement at their t0, the
    change 30 days later), against the unfiltered answer's validity and the labelled place."""
    counts = {"timeline": 0, "labelled": 0, "context": 0, "asked": 0, "contexts": 0}
    for k, (uid, msgs, _qs) in enumerate(data):
        first, change = msgs[0]["timestamp"], msgs[3]["timestamp"]
        kind = ("lives_in", "works_at", "studies_at")[k % 3]
        full = _entity(sc, uid, None)
        rels = full.get("relations", [])
        named = {r["valid_from"]: r["object"] for r in rels if r["predicate"] == kind}
        old, new = named.get(first), named.get(change)
        for t in (first - 1, first + 15 * DAY, change, change + 2 * DAY, int(time.time())):
            got = _entity(sc, uid, t).get("relations", [])
            key = lambda x: (x["predicate"], x["object"], x["valid_from"])  # noqa: E731
            want = sorted(key(x) for x in rels if _then(x, t))
            counts["timeline"] += sorted(key(x) for x in got) == want and all(x["valid_to"] is None for x in got)
            label = None if t < first else old if t < change else new
            objects = [x["object"] for x in got if x["predicate"] == kind]
            counts["labelled"] += objects == ([label] if label else [])
            counts["asked"] += 1
            if label and old and new and t > first:
                text = sc.request(
                    {"type": "context", "user_id": uid, "format": "markdown", "as_of": t, "text": "hi"}, "context"
                )
                section = (
                    text["text"].split("### True Then", 1)[1].split("###", 1)[0]
                    if "### True Then" in text["text"]
                    else ""
                )
                other = new if label == old else old
                counts["context"] += label in section and other not in section
                counts["contexts"] += 1
    return {
        "as_of answers": counts["asked"],
        "as_of = timeline": round(counts["timeline"] / max(1, counts["asked"]), 3),
        "labelled": round(counts["labelled"] / max(1, counts["asked"]), 3),
        "context then": round(counts["context"] / max(1, counts["contexts"]), 3),
        "contexts": counts["contexts"],
    }


def big_user(sc: Sidecar, n: int, t0: int, requests: int = 30) -> dict[str, Any]:
    """One user who stated n likes ("I love thing 17.") and where they live: `context` (default sections) for
    them, timed; the block's relations and words."""
    msgs = [{"user_id": "big", "content": f"I love thing {k}.", "timestamp": t0 + k} for k in range(n)]
    msgs.append({"user_id": "big", "content": "I live in Oslo.", "timestamp": t0 + n})
    for start in range(0, len(msgs), 1_000):
        sc.request({"type": "store", "messages": msgs[start : start + 1_000]}, "ok")
    deadline = time.monotonic() + 1_800
    while sc.request({"type": "health"}, "health")["graph"]["queue"] and time.monotonic() < deadline:
        time.sleep(1.0)  # the builder at work (each new relation looks through the user's others)
    built = sc.request({"type": "entity", "user_id": "big", "name": "me"}, "entity")
    log(f"big user: {len(built['relations'])} relations")
    times: list[float] = []
    last: dict[str, Any] = {}
    for k in range(requests):
        last, seconds = sc.timed({"type": "context", "user_id": "big", "text": f"what about thing {k * 7}?"}, "context")
        times.append(seconds * 1000)
    times.sort()
    return {
        "relations stated": len(built["relations"]),
        "context p50 ms": times[len(times) // 2],
        "context p95 ms": times[int(len(times) * 0.95)],
        "relations shown": last["relations"],
        "memories shown": last["memories"],
        "words in text": len(last["text"].split()),
    }
