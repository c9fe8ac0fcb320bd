"""Associative recall over one user's graph, pure given the seeds: nodes are traces (`t:`), episodes
(`e:`) and entities (`n:`); edges join an episode to its trace (1.0), to the entities it mentions (0.5)
and to the previous and next episode of its channel within a session (0.5), and a trace to the
traces it is linked to (their cosine). Activation spreads from the seeds (activation.py); traces are
ranked by their fired activation, each with its episodes ranked the same way.

Seeds (the dual trigger plus names):
- semantic: episodes and traces with cosine >= MIN_SIMILARITY to the query, ranked by
  0.7 x similarity + 0.3 x activation, the best SEMANTIC_SEEDS of each; a seed starts at its
  similarity (so a closer memory starts higher; Bud's flat 0.5 let ties decide);
- lexical: the episodes keyword search ranks first (the store's BM25), and traces whose summary
  shares the query's words, LEXICAL_SEEDS each, starting at LEXICAL_START;
- entities named in the query (the fast tier with the user's gazetteer): at most NAMED_ENTITIES, each
  with its NAMED_TRACES latest traces, starting at ENTITY_START.
The feeling of knowing: the query names someone or something the user's graph has never seen, or the
best fired activation is below the gate: `known: false`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import activation as act
from . import recall_validity as validity
from .consolidation import HUB_SHARE, SESSION_GAP
from .mentions import find_mentions
from .model import UserGraph
from .recall_validity import Order
from .records import fold

MIN_SIMILARITY = 0.3
SEMANTIC_SEEDS = 20
LEXICAL_SEEDS = 20
LEXICAL_START = 0.4
NAMED_ENTITIES = 5
NAMED_TRACES = 5
ENTITY_START = 0.6
GATE = 0.12
VALID_START = 0.9  # an episode stating the relation a question asks about, valid when it asks (recall_validity.py)
BELOW = 0.9  # the others of that relation: at most this x the least active of those
_WORD = re.compile(r"[a-z0-9]{3,}")
_STOP = frozenset(
    "the and for are was were you your with what when where who why how did does that this have has "
    "had from about they them their there been will would could should which into over more most "
    "some than then also just like very much many any all not but can its our out get got".split()
)


@dataclass
class Seeds:
    semantic_episodes: list[tuple[str, float]]  # (episode id, cosine) best first
    keyword_episodes: list[str]  # episode ids, best first
    query_vector: np.ndarray


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if w not in _STOP}


class GraphView:
    """Neighbours of a node, from the user's graph (built on first use, cached until it changes)."""

    def __init__(self, g: UserGraph):
        self.g = g
        n = max(1, len(g.episodes))
        # entities in more than HUB_SHARE of the episodes (the speakers of a conversation) join everything:
        # they are left out of the spread, as out of consolidation
        self.hubs = {e.id for e in g.entities.values() if len(e.episodes) > HUB_SHARE * n and len(e.episodes) > 3}
        self.links: dict[str, dict[str, float]] = {}
        for (a, b), w in g.links.items():
            self.links.setdefault(a, {})[b] = w
            self.links.setdefault(b, {})[a] = w
        self.order: dict[str, tuple[str | None, str | None]] = {}
        by_channel: dict[Any, list] = {}
        for ep in sorted(g.episodes.values(), key=lambda e: (e.ts, e.id)):
            by_channel.setdefault(ep.channel_id, []).append(ep)
        for eps in by_channel.values():
            for k, ep in enumerate(eps):
                prev = eps[k - 1].id if k and ep.ts - eps[k - 1].ts <= SESSION_GAP else None
                nxt = eps[k + 1].id if k + 1 < len(eps) and eps[k + 1].ts - ep.ts <= SESSION_GAP else None
                self.order[ep.id] = (prev, nxt)
        self.summary_index: dict[str, list[str]] = {}  # a word of trace summaries -> the traces it is in
        for t in g.traces.values():
            for word in words(t.summary):
                self.summary_index.setdefault(word, []).append(t.id)
        self.name_words = {w for key in g.by_key for w in key.split()}  # every word of a known name

    def neighbours(self, node: str) -> dict[str, float]:
        kind, _, nid = node.partition(":")
        g, out = self.g, {}
        if kind == "t" and nid in g.traces:
            out = {f"e:{e}": 1.0 for e in g.traces[nid].episode_ids}
            out.update({f"t:{o}": w for o, w in self.links.get(nid, {}).items()})
        elif kind == "e" and nid in g.episodes:
            ep = g.episodes[nid]
            if ep.trace_id:
                out[f"t:{ep.trace_id}"] = 1.0
            out.update({f"n:{n}": 0.5 for n in ep.entity_ids if n not in self.hubs})
            for other in self.order.get(nid, (None, None)):
                if other:
                    out[f"e:{other}"] = 0.5
        elif kind == "n" and nid in g.entities and nid not in self.hubs:
            out = {f"e:{e}": 0.5 for e in g.entities[nid].episodes}
        return out


def unknown_names(g: UserGraph, view: GraphView, query: str) -> list[str]:
    """Names (people, places, organisations) the query uses that the user's graph has never seen."""
    out = []
    for m in find_mentions(query, *g.gazetteer()):
        key = fold(m.text)
        if (
            m.type in ("person", "place", "organisation")
            and key not in g.by_key
            and not set(key.split()) <= view.name_words
        ):
            out.append(m.text)  # neither a known name nor part of one ("Bob" of "Bob Smith")
    return out


def named(g: UserGraph, query: str) -> list[str]:
    """The known entities the query names (the fast tier with the user's gazetteer), in order, once each."""
    return list(
        dict.fromkeys(g.by_key[fold(m.text)] for m in find_mentions(query, *g.gazetteer()) if fold(m.text) in g.by_key)
    )


def seed(
    g: UserGraph,
    view: GraphView,
    s: Seeds,
    query: str,
    trace_activation,
    names: list[str] | None = None,
    valid: Order | None = None,
) -> dict[str, float]:
    seeds: dict[str, float] = {}

    def put(node: str, a: float) -> None:
        seeds[node] = max(seeds.get(node, 0.0), a)

    eps = [(e, sim) for e, sim in s.semantic_episodes if sim >= MIN_SIMILARITY and e in g.episodes]
    for e, sim in eps[:SEMANTIC_SEEDS]:
        put(f"e:{e}", sim)
    traces = [(t, t.vector) for t in g.traces.values() if t.vector is not None and len(t.vector)]
    if traces:
        sims = np.stack([v for _, v in traces]) @ s.query_vector
        ranked = sorted(
            (
                (0.7 * float(sim) + 0.3 * trace_activation(t), float(sim), t.id)
                for (t, _), sim in zip(traces, sims)
                if sim >= MIN_SIMILARITY
            ),
            reverse=True,
        )
        for _, sim, tid in ranked[:SEMANTIC_SEEDS]:
            put(f"t:{tid}", sim)
    for e in [e for e in s.keyword_episodes if e in g.episodes][:LEXICAL_SEEDS]:
        put(f"e:{e}", LEXICAL_START)
    qw = words(query)
    if qw:
        overlap = sorted(
            ((n, tid) for tid, n in Counter(t for w in qw for t in view.summary_index.get(w, ())).items()), reverse=True
        )
        for _, tid in overlap[:LEXICAL_SEEDS]:
            put(f"t:{tid}", LEXICAL_START)
    for nid in (named(g, query) if names is None else names)[:NAMED_ENTITIES]:
        put(f"n:{nid}", ENTITY_START)
        latest = sorted(
            {t for e in g.entities[nid].episodes if e in g.episodes and (t := g.episodes[e].trace_id)},
            key=lambda t: -g.traces[t].end if t in g.traces else 0,
        )
        for tid in latest[:NAMED_TRACES]:
            put(f"t:{tid}", ENTITY_START)
    if valid and valid.seed:  # the relation the question asks about, valid when it asks (recall_validity.py)
        for e in valid.favoured:
            put(f"e:{e}", VALID_START)
    return seeds


def rank_by_validity(g: UserGraph, fired: dict[str, float], valid: Order) -> dict[str, float]:
    """Fired activation with the disfavoured episodes, and the traces that hold some of them and no favoured
    one, capped below the least active favoured episode; when the question names the relation, the favoured
    episodes rise to the best activation (recall_validity.py)."""
    if not valid:
        return fired
    held = favoured_traces(g, valid)
    below = {f"e:{e}" for e in valid.disfavoured} | {
        f"t:{g.episodes[e].trace_id}"
        for e in valid.disfavoured
        if e in g.episodes and g.episodes[e].trace_id and g.episodes[e].trace_id not in held
    }
    return validity.rank_below(fired, {f"e:{e}" for e in valid.favoured}, below, BELOW, lift=valid.seed)


def favoured_traces(g: UserGraph, valid: Order) -> set[str]:
    """The traces that hold a favoured episode (they win a tie)."""
    return {t for e in valid.favoured if e in g.episodes and (t := g.episodes[e].trace_id)}


def recall(
    g: UserGraph,
    view: GraphView,
    s: Seeds,
    query: str,
    params: act.Params,
    trace_activation,
    gate: float = GATE,
    valid: Order | None = None,
) -> tuple[bool, float, dict[str, float]]:
    """(known, confidence, fired activation by node). The activation is computed either way: query mode
    `graph` ranks by it with no gate. `valid`: the question's order by validity (recall_validity.py), for its seeds
    (the caller ranks by it last: rank_by_validity)."""
    seeds = seed(g, view, s, query, trace_activation, valid=valid)
    fired = act.spread(view.neighbours, seeds, params) if seeds else {}
    fired = {n: a for n, a in fired.items() if not n.startswith("n:")}  # entities carry activation, memories compete
    if unknown_names(g, view, query):
        return False, 0.0, fired
    best = max(fired.values(), default=0.0)
    return best >= gate, best, fired
