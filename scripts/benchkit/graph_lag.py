"""Graph builder lag: how long one user's statement waits behind another user's long messages.

Each round, a talker stores --talker-messages messages of 32,000 characters of run-on chat (" and I live in
Berlin" repeated: the reading's worst shape found, docs/reliability.md "Text that costs time"), then another
user stores "Big news: I moved to <city> last month!". The figure is the seconds from that store's answer to
the answer of an `entity` command for the city that holds the new `lives_in` relation (a graph command waits
for its own user's queued messages only), and how many of the talker's messages the graph had not built yet at
that moment (`health`'s graph.pending). Then the talker's backlog is let drain before the next round.

    python scripts/bench.py graph-lag                       # 5 rounds of 12 x 32 KB
    python scripts/bench.py graph-lag --rounds 9 --json lag.json
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

from .client import Sidecar, add_sidecar_arguments
from .graph_build import wait_graph_settled
from .output import log, write_json

SUMMARY = "graph builder: another user's statement behind 32 KB messages, seconds until it is in their graph"
UNIT = " and I live in Berlin"
CITIES = ("Lisbon", "Porto", "Madrid", "Vienna", "Prague", "Dublin", "Krakow", "Seville", "Antwerp", "Bergen")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rounds", type=int, default=5, help="rounds (one statement each)")
    parser.add_argument("--talker-messages", type=int, default=12, help="32 KB messages stored before it")
    parser.add_argument("--chars", type=int, default=32_000, help="characters of each of the talker's messages")
    add_sidecar_arguments(parser, timeout=300.0)
    parser.add_argument("--json", type=Path, help="write the rounds here")


def _relations(answer: dict[str, Any]) -> set[tuple[str, str]]:
    return {(r.get("predicate"), r.get("object")) for r in answer.get("relations", [])}


def run(args: argparse.Namespace) -> int:
    rounds = []
    with tempfile.TemporaryDirectory(prefix="graph-lag-") as tmp:
        with Sidecar(Path(tmp) / "data", python=args.python, stderr=Path(tmp) / "log", timeout=args.timeout) as sc:
            sc.wait_ready()
            for r in range(args.rounds):
                city = CITIES[r % len(CITIES)]
                for k in range(args.talker_messages):
                    text = f"#{r}.{k}" + (UNIT * (args.chars // len(UNIT) + 1))
                    sc.request({"type": "store", "user_id": "talker", "content": text[: args.chars]}, "ok")
                sc.request(
                    {"type": "store", "user_id": "mover", "content": f"Big news: I moved to {city} last month!"}, "ok"
                )
                t0 = time.perf_counter()
                answer = sc.request({"type": "entity", "user_id": "mover", "name": city}, "entity")
                lag = time.perf_counter() - t0
                pending = sc.request({"type": "health"}, "health")["graph"]["pending"]
                found = ("lives_in", city) in _relations(answer)
                rounds.append({"city": city, "lag_s": round(lag, 3), "talker_pending": pending, "found": found})
                log(f"round {r + 1}: {city} in the mover's graph after {lag:.2f} s ({pending} messages pending)")
                wait_graph_settled(sc, True)
            sc.shutdown()
    lags = [x["lag_s"] for x in rounds]
    print(
        f"graph lag: another user's statement behind {args.talker_messages} x {args.chars:,} characters: "
        f"median {median(lags):.2f} s, highest {max(lags):.2f} s over {len(lags)} rounds; the talker's messages "
        f"still pending then: {', '.join(str(x['talker_pending']) for x in rounds)}; relation found in "
        f"{sum(x['found'] for x in rounds)}/{len(rounds)}"
    )
    if args.json:
        write_json(args.json, {"rounds": rounds, "talker_messages": args.talker_messages, "chars": args.chars})
    return 0 if all(x["found"] for x in rounds) else 1
