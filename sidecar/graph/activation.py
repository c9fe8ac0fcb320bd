"""Spreading activation with lateral inhibition, pure (after the Synapse paper, arXiv 2601.02744, and
the Bud memory service). Nodes are strings (a trace, an episode, an entity id); the graph is an
function node -> {neighbour: weight}; seeds are node -> starting activation.

    for T iterations:   u_i <- min(1, RETAIN * a_i + sum_j SPREAD * w_ji * a_j / max(1, degree(j)))
                        seeds never fall below SEED_FLOOR
    lateral inhibition: the TOP_M most active keep their value; every other node loses
                        BETA * sum over winners above it of (winner - itself); <= 0 drops out
    firing:             a_i = 1 / (1 + exp(-GAMMA * (u_i - THETA)))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass


@dataclass(frozen=True)
class Params:
    iterations: int = 3
    spread: float = 0.8
    retain: float = 0.5
    seed_floor: float = 0.3
    top_m: int = 7
    beta: float = 0.15
    gamma: float = 5.0
    theta: float = 0.3


def spread(
    neighbours: Callable[[str], Mapping[str, float]], seeds: Mapping[str, float], p: Params = Params()
) -> dict[str, float]:
    """Fired activation (0..1) of every node reached from the seeds; `neighbours(node)` gives a node's
    {neighbour: weight} (asked once per node: a large graph is never built whole)."""
    memo: dict[str, Mapping[str, float]] = {}
    active = dict(seeds)
    for _ in range(p.iterations):
        nxt: dict[str, float] = {n: p.retain * a for n, a in active.items()}
        for node, a in active.items():
            if a <= 0:
                continue
            if node not in memo:
                memo[node] = neighbours(node)
            out = memo[node]
            if not out:
                continue
            share = p.spread * a / max(1, len(out))
            for other, w in out.items():
                nxt[other] = nxt.get(other, 0.0) + share * w
        for node in seeds:
            nxt[node] = max(nxt.get(node, 0.0), p.seed_floor)
        active = {n: min(1.0, a) for n, a in nxt.items()}  # a potential is at most 1: no node floods the rest
    return fire(inhibit(active, p, set(seeds)), p)


def inhibit(active: Mapping[str, float], p: Params, exempt: AbstractSet[str] = frozenset()) -> dict[str, float]:
    """The TOP_M most active keep their value; every other node loses BETA x the sum of (winner - itself)
    and drops out at or below 0. Seeds (`exempt`) are never inhibited: a memory that answers the
    question directly is not suppressed by a strongly connected one (the paper's "cognitive tunneling")."""
    ranked = sorted(active.items(), key=lambda kv: (-kv[1], kv[0]))
    winners = [a for _, a in ranked[: p.top_m]]
    out = dict(ranked[: p.top_m])
    for node, a in ranked[p.top_m :]:
        left = a if node in exempt else a - p.beta * sum(w - a for w in winners if w > a)
        if left > 0:
            out[node] = left
    return out


def fire(active: Mapping[str, float], p: Params) -> dict[str, float]:
    return {n: 1.0 / (1.0 + math.exp(-p.gamma * (u - p.theta))) for n, u in active.items()}
