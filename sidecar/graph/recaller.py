"""`graph_recall` and query mode `graph`: seeds from the messages store (semantic and keyword search)
and from the user's graph, spreading activation (recall.py), the answer shaped for the wire, and use
strengthening the traces it returns."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..messages import named_window
from ..storage import sql_in
from ..wire import GraphRecallRequest, GraphRecallResponse, RecalledEntity, RecalledEpisode, RecalledTrace
from ..wire.errors import TooLarge
from . import activation as act
from . import as_of
from . import recall_validity as validity
from .consolidation import BATCH
from .model import UserGraph
from .recall import BELOW, GATE, SEMANTIC_SEEDS, GraphView, Seeds, favoured_traces, named, rank_by_validity, recall
from .recall_validity import Order
from .records import Trace, decayed

if TYPE_CHECKING:
    from ..messages import MessageReader
    from .builder import Builder
    from .store import GraphStore

USE_BOOST = 0.1
TIME_BOOST = 1.0  # an episode inside the time the query names (messages/timewords.py): activation x (1 + this)
SIMILARITY_WEIGHT = 0.6  # query mode graph: cosine vs fired activation in an episode's score
TRUE_NOW_WAIT = 0.5  # seconds `context` waits at most for the builder (a backlog: it answers with what is built)


class Graphs(Protocol):
    """What recall needs of the graph service, which hands itself over (service.py imports this module, never
    the other way round)."""

    reader: MessageReader
    store: GraphStore
    builder: Builder
    lock: threading.RLock
    max_limit: int
    clock: Callable[[], float]
    cut: Callable[[str, int], str]
    writable: Callable[[], bool]

    def graph(self, user_id: str, background: bool = False) -> UserGraph: ...
    def settled(self, user_id: str | None = None) -> None: ...
    def consolidate_user(self, user_id: str) -> dict[str, int]: ...


class Recaller:
    def __init__(self, service: Graphs, embed: Callable[[str], np.ndarray]):
        self.service = service  # the GraphService: graphs, lock, store, reader
        self.embed = embed

    @staticmethod
    def view(g: UserGraph) -> GraphView:
        """Recall's view of the graph, kept on the graph (so the LRU budget counts it and it leaves with
        the graph) until the graph changes."""
        if g.view is None or g.view[0] != g.version:
            g.view = (g.version, GraphView(g))
        return g.view[1]

    def _fired(
        self,
        user_id: str,
        text: str,
        vector: np.ndarray,
        since: float | None,
        until: float | None,
        params: act.Params,
        gate: float,
        then: float | None = None,
    ) -> tuple[UserGraph, bool, float, dict[str, float], Order]:
        """The user's graph, known, confidence, the fired activation, and the question's order by validity
        (recall_validity.py: already applied to the activation; query mode graph applies it to its scores too).
        `then` (as_of): the graph as it was at that time (as_of.py), and only episodes said by then; the
        question's time words ("now", "last year") are read from then."""
        svc = self.service
        self.consolidate_pending(user_id)  # what was stored since the last pass takes part
        reader = svc.reader
        said = until if then is None else then if until is None else min(until, then)  # the episodes read
        semantic = reader.search(vector, user_id, SEMANTIC_SEEDS, since=since, until=said, mode="semantic")
        keyword = reader.search(vector, user_id, SEMANTIC_SEEDS, since=since, until=said, text=text, mode="keyword")
        now = svc.clock() if then is None else min(svc.clock(), then)
        window = named_window(text, now) if since is None and until is None else None
        with svc.lock:
            g = svc.graph(user_id) if then is None else as_of.at(svc.graph(user_id), then)
            seeds = Seeds([(r["id"], r["similarity"]) for r in semantic], [r["id"] for r in keyword], vector)
            valid = validity.order(g, text, named(g, text), window)
            if since is not None or until is not None:  # a hard window: no favoured episode from outside it
                valid.favoured = {e for e in valid.favoured if self._inside(g, e, since, until)}
            known, best, fired = recall(
                g, self.view(g), seeds, text, params, lambda t: decayed(t.activation, t.updated_at, now), gate, valid
            )
            if since is not None or until is not None:
                fired = {
                    n: a for n, a in fired.items() if not n.startswith("e:") or self._inside(g, n[2:], since, until)
                }
            elif window is not None:  # the query names a time: episodes then rank up
                fired = {
                    n: min(1.0, a * (1 + TIME_BOOST)) if n.startswith("e:") and self._inside(g, n[2:], *window) else a
                    for n, a in fired.items()
                }
            fired = rank_by_validity(g, fired, valid)
        return g, known, best, fired, valid

    @staticmethod
    def _inside(g: UserGraph, ep_id: str, since: float | None, until: float | None) -> bool:
        ep = g.episodes.get(ep_id)
        return ep is not None and (since is None or ep.ts >= since) and (until is None or ep.ts <= until)

    def graph_recall(self, req: GraphRecallRequest) -> GraphRecallResponse:
        svc = self.service
        if req.limit > svc.max_limit:
            raise TooLarge(f"limit {req.limit} is over the maximum of {svc.max_limit}")
        o = req.params.model_dump(exclude_none=True) if req.params is not None else {}
        gate = o.pop("gate", GATE)
        params = act.Params(**o)
        until = req.until if req.as_of is None else req.as_of if req.until is None else min(req.until, req.as_of)
        g, known, best, fired, valid = self._fired(
            req.user_id, req.text, self.embed(req.text), req.since, req.until, params, gate, req.as_of
        )
        if not known:
            return GraphRecallResponse(known=False, confidence=round(best, 4), traces=[])
        ranked = self._traces(g, fired, valid)
        if req.since is not None or until is not None:
            ranked = [
                (t, a) for t, a in ranked if any(self._inside(g, e, req.since, until) for e in g.traces[t].episode_ids)
            ]
        ranked = ranked[: req.limit]
        traces = [
            self._trace_out(g, tid, a, fired, req.episodes, req.since, until, valid.favoured) for tid, a in ranked
        ]
        traces = [t for t in traces if t.episodes]
        if req.strengthen and traces:
            self.strengthen(req.user_id, [t.id for t in traces], USE_BOOST)
        return GraphRecallResponse(known=True, confidence=round(best, 4), traces=traces)

    @staticmethod
    def _traces(g: UserGraph, fired: dict[str, float], valid: Order) -> list[tuple[str, float]]:
        """Traces by fired activation; a trace reached only through its episodes counts their best; in a tie,
        one holding an episode the question asks for by validity first."""
        score: dict[str, float] = {}
        for node, a in fired.items():
            kind, _, nid = node.partition(":")
            tid = nid if kind == "t" else g.episodes[nid].trace_id if kind == "e" and nid in g.episodes else None
            if tid and tid in g.traces:
                score[tid] = max(score.get(tid, 0.0), a)
        first = favoured_traces(g, valid)
        return sorted(score.items(), key=lambda kv: (-kv[1], kv[0] not in first, -g.traces[kv[0]].end, kv[0]))

    def _trace_out(
        self,
        g: UserGraph,
        tid: str,
        a: float,
        fired: dict[str, float],
        n: int,
        since: float | None,
        until: float | None,
        first: set[str],
    ) -> RecalledTrace:
        t = g.traces[tid]
        inside = [e for e in t.episode_ids if self._inside(g, e, since, until)]
        eps = sorted(
            inside,
            key=lambda e: (-fired.get(f"e:{e}", 0.0), e not in first, g.episodes[e].ts if e in g.episodes else 0.0),
        )[:n]
        rows = {r["id"]: r for r in self.service.reader.rows(sql_in("id", eps))} if eps else {}
        episodes = [
            RecalledEpisode(
                id=e,
                content=rows[e]["content"],
                timestamp=int(rows[e]["timestamp"]),
                is_bot=rows[e]["is_bot"],
                username=rows[e].get("username"),
                message_id=rows[e].get("message_id"),
                channel_id=rows[e].get("channel_id"),
                activation=round(fired.get(f"e:{e}", 0.0), 4),
            )
            for e in eps
            if e in rows
        ]
        ents = [
            RecalledEntity(id=x, name=g.entities[x].name, type=g.entities[x].type)
            for x in t.entity_ids
            if x in g.entities
        ]
        return RecalledTrace(
            id=t.id,
            summary=t.summary,
            strength=len(t.episode_ids),
            activation=round(a, 4),
            entities=ents,
            episodes=episodes,
            start=int(t.start),
            end=int(t.end),
        )

    def search(
        self, user_id: str, text: str, vector: np.ndarray, limit: int, since: float | None, until: float | None
    ) -> list[dict[str, Any]]:
        """Query mode `graph`: the activated episodes ranked by SIMILARITY_WEIGHT x cosine + (1 -
        SIMILARITY_WEIGHT) x fired activation (the paper's fusion without its global prior; no gate)."""
        g, _known, _best, fired, valid = self._fired(user_id, text, vector, since, until, act.Params(), 0.0)
        eps = [n[2:] for n in fired if n.startswith("e:") and n[2:] in g.episodes]
        rows, vectors = self.service.reader.embedded(eps, user_id)
        scores, by_id = {}, {}
        for r, v in zip(rows, vectors):
            r["similarity"] = float(v @ vector)
            scores[r["id"]] = SIMILARITY_WEIGHT * r["similarity"] + (1 - SIMILARITY_WEIGHT) * fired[f"e:{r['id']}"]
            by_id[r["id"]] = r
        if valid:  # the similarity of a closed relation's episode must not rank it back up
            scores = validity.rank_below(scores, valid.favoured, valid.disfavoured, BELOW, lift=valid.seed)
        for e, r in by_id.items():
            r["score"] = scores[e]  # what the results are ranked by (the query's `score`)
        return [by_id[e] for e in sorted(scores, key=lambda e: (-scores[e], e not in valid.favoured, e))[:limit]]

    def consolidate_pending(self, user_id: str) -> None:
        """Consolidate what the user stored since the last pass (recall needs every episode in a trace);
        not on a read-only sidecar (the sidecar that writes consolidates)."""
        svc = self.service
        if not svc.writable():
            return
        svc.settled()
        with svc.lock:
            g = svc.graph(user_id)
            if not any(e.trace_id is None and not e.low for e in g.episodes.values()):
                return
        while svc.consolidate_user(user_id)["episodes"] >= BATCH:
            pass

    def strengthen(self, user_id: str, trace_ids: list[str], boost: float) -> None:
        """Use strengthens memory: each trace gains `boost` (on its decayed value), capped at 1 (not on a
        read-only sidecar: it writes nothing)."""
        svc = self.service
        if not svc.writable():
            return
        with svc.lock:
            g = svc.graph(user_id)
            now = svc.clock()
            traces = [g.traces[t] for t in trace_ids if t in g.traces]
            for t in traces:
                t.activation = min(1.0, decayed(t.activation, t.updated_at, now) + boost)
                t.updated_at = now
            svc.store.save(g, traces=traces)

    def true_now(self, user_id: str, text: str | None, limit: int, then: float | None = None) -> list[dict[str, Any]]:
        """`context`'s "what is true now": the user's current relations as sentences (recall_validity.true_now). It
        waits at most TRUE_NOW_WAIT for the messages stored before it to be built (milliseconds each), so that
        "I moved to Paris" stored just before shows; then answers with what is built. `then` (as_of): what was
        true then, the relations valid at that time (as_of.py)."""
        if limit <= 0:
            return []
        self.service.builder.wait_built(TRUE_NOW_WAIT)
        with self.service.lock:
            g = self.service.graph(user_id) if then is None else as_of.at(self.service.graph(user_id), then)
            return validity.true_now(g, text, named(g, text) if text else [], limit)

    def related_block(self, users: list[str], text: str, per_user: int, words: int, then: float | None = None) -> str:
        """`[related memories]` lines, one per recalled trace (date and summary), within `words` words
        in all: the pyramid's cut shortens each summary to its share (the context's "related memories"). `then`
        (as_of): only traces with episodes said by then, dated by the last of those."""
        lines: list[tuple[float, Trace]] = []
        vector = self.embed(text)
        for uid in users:
            g, known, _best, fired, valid = self._fired(uid, text, vector, None, None, act.Params(), GATE, then)
            if known:
                lines += [(a, g.traces[tid]) for tid, a in self._traces(g, fired, valid)[:per_user]]
        if not lines:
            return ""
        share = max(4, words // len(lines))
        out = ["[related memories]"]
        for _a, t in sorted(lines, key=lambda at: (at[0], at[1].id), reverse=True):
            day = time.strftime("%Y-%m-%d", time.gmtime(t.end))
            out.append(f"- {day}: {self.service.cut(t.summary, share)}")
        return "\n".join(out)
