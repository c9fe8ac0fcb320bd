"""Domain rules of graph memory: the per-user graphs (loaded lazily, kept under an LRU budget), the
background builder, consolidation into traces (on a schedule and on demand), and the commands
`entities`, `entity`, `merge_entities`, `consolidate`, `health`. Activation decays with time since
last use, computed when read (nothing is rewritten on a timer):
a(t) = FLOOR + (a0 - FLOOR) * 2^(-(t - t_use) / HALF_LIFE); use (a mention, a recall) adds USE_BOOST.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..messages import Replaced
from ..wire import (
    ConsolidatedResponse,
    ConsolidateRequest,
    EntitiesRequest,
    EntitiesResponse,
    EntityRequest,
    EntityResponse,
    MergedResponse,
    MergeEntitiesRequest,
)
from ..wire.errors import InvalidRequest, NotFound, TooLarge, quote
from . import as_of, supersession
from . import consolidation as cons
from .builder import USER_GROUP, Builder, Changes, self_entity
from .cache import GraphCache
from .lang import language, lexicon
from .model import Similar, UserGraph
from .recaller import Recaller
from .records import Entity, Episode, Trace, fold, stable_id
from .relations import single_valued
from .store import GraphStore
from .tables import graph_of
from .wire_out import entity_out, relation_out, trace_out

if TYPE_CHECKING:
    from ..messages import MessageReader

log = logging.getLogger("sidecar.graph")

CONSOLIDATE_EVERY = 200  # new episodes that start a background consolidation
CONSOLIDATE_INTERVAL = 300.0  # seconds: or this long after the first unconsolidated one
BACKGROUND_SHARE = 8  # graphs no command has used: 1/8 of --graph-cache-mb (graph/cache.py)
READ_USERS = 200  # users whose graphs a delete reads together (one read per table)
SETTLE_SECONDS = 30.0  # a graph command waits at most this long for queued messages to be built


def _first_person(text: str) -> bool:
    """Whether the speaker speaks of themself, in the words of the memory's language; True for a language with
    no lexicon (the LLM reads what the rules cannot)."""
    lex = lexicon(language(text))
    return lex is None or lex.first_person is None or lex.first_person.search(text) is not None


class GraphService:
    def __init__(
        self,
        store: GraphStore,
        reader: MessageReader,
        cut: Callable[[str, int], str],
        *,
        cache_bytes: int = 64 << 20,
        max_limit: int = 100,
        clock: Callable[[], float] = time.time,
        extra_tier: Any = None,
        same_fact: Callable[[str, str], str | None] | None = None,
        llm: Any = None,
        embed: Callable[[str], np.ndarray] | None = None,
        consolidate_every: int = CONSOLIDATE_EVERY,
        similar: Similar | None = None,
    ):
        self.store = store
        self.reader, self.cut = reader, cut  # the messages domain's MessageReader; the pyramid's word cut (summaries)
        self.consolidate_every = consolidate_every  # 0: only on demand (`consolidate`, recall)
        self.max_limit, self.clock = max_limit, clock
        self.lock = threading.RLock()  # every graph read and change
        self._cache = GraphCache(cache_bytes)  # the users' graphs (graph/cache.py); see _evict for their share
        self._pinned: set[str] = set()  # the builder's current group: never evicted while it builds
        self._rows: dict[str, dict[str, Any]] = {}  # the group's rows not made into graphs yet (preload)
        self._stale, self._read_bytes = False, 0  # drop_cached() was called; the graphs read lately, mean bytes
        # which episodes later ones replaced, per user (supersession.py), kept beside the graphs' LRU: a query reads
        # them without loading a graph (a user whose graph left is read again in the background, `_warm`)
        self._links: dict[str, supersession.Links] = {}
        self._warming: set[str] = set()
        self.writable: Callable[[], bool] = lambda: True  # False on a read-only sidecar: recall writes nothing
        self._unconsolidated = 0  # episodes built since the last pass, and when
        self._first_unconsolidated: float | None = None
        self.last_consolidation: float | None = None

        def commit(rows: dict[str, list[dict[str, Any]]]) -> None:
            self.store.commit(rows, new_episodes=True)

        def graphs(user_id: str) -> UserGraph:
            return self.graph(user_id, background=True)

        self.builder = Builder(self.lock, graphs, self._save, commit, self._built, extra_tier, same_fact, similar)
        self.builder.preload, self.builder.release, self.builder.group_size = (
            self.preload,
            self.release,
            self.group_size,
        )
        self.builder.on_overflow = self.catch_up
        self.caught_up = threading.Event()  # set once the start-up catch-up has queued what it found
        self.llm, self.deep = llm, None
        if llm is not None:
            from .deep import DeepTier

            self.deep = DeepTier(llm, self._apply_deep)
            self.builder.on_built = self._to_deep_tier
        self.recaller = Recaller(self, embed) if embed is not None else None

    # ------------------------------------------------------------------ graphs

    def preload(self, user_ids: list[str]) -> None:
        """Read these users' rows together (one read per table, held as Arrow), for `graph()` to make one user's
        graph at a time; each stays (whatever the budget) until `release` or the next preload (docs/graph.md)."""
        with self.lock:
            self._pinned = set(user_ids)
            missing = [u for u in dict.fromkeys(user_ids) if u not in self._cache]
            self._rows = self.store.read_rows(missing) if missing else {}
            self._evict()

    def release(self, user_id: str) -> None:
        """The builder is done with this user's graph: the budget applies to it again."""
        with self.lock:
            self._pinned.discard(user_id)
            self._rows.pop(user_id, None)
            self._evict()

    def group_size(self) -> int:
        """How many users' rows the builder reads together: as many as the budget holds at the mean size of the
        graphs read lately (their rows, as Arrow, take about as much; the builder caps it at USER_GROUP)."""
        with self.lock:
            return self._cache.budget // self._read_bytes if self._read_bytes else USER_GROUP

    def graph(self, user_id: str, background: bool = False) -> UserGraph:
        """The user's graph, loaded on a miss (`background`: for the builder, consolidation, a delete)."""
        with self.lock:
            if self._stale:
                self._evict()
            g = self._cache.get(user_id)
            if g is None:
                rows = self._rows.pop(user_id, None)  # read with the builder's group
                g = graph_of(user_id, rows) if rows is not None else self.store.load(user_id)
                size = self._cache.put(user_id, g)  # its bytes: the graphs read lately, their mean, for group_size
                self._read_bytes = size if not self._read_bytes else (self._read_bytes * 7 + size) // 8
            self._cache.touch(user_id, foreground=not background)
            self._evict(keep=user_id)
            return g

    def graphs(self, user_ids: list[str]) -> dict[str, UserGraph]:
        """Several users' graphs for background work (a delete): the ones not held read together, one read per
        table per 200 users (`graph` one at a time: a cleanup over 1,000 users made 6,000 reads, 18 s). Caller
        holds `lock` until done with them: a graph that leaves the cache meanwhile stays valid in its hands."""
        with self.lock:
            missing = [u for u in dict.fromkeys(user_ids) if u not in self._cache and u not in self._rows]
            if missing:
                self._rows.update(self.store.read_rows(missing))  # taken by `graph`, as the builder's group
            return {uid: self.graph(uid, background=True) for uid in user_ids}

    def _evict(self, keep: str | None = None) -> None:
        """Graphs leave to fit the budget (pinned ones and `keep` stay; every unpinned one after drop_cached())."""
        if self._stale:
            self._stale = False
            self._cache.keep_only(lambda u: u in self._pinned or u == keep)
        self._cache.evict(lambda u: u == keep or u in self._pinned, self._cache.budget // BACKGROUND_SHARE)

    def _save(self, built: tuple[UserGraph, Changes], rows: dict[str, list] | None) -> dict[str, list]:
        """What the builder built in one user's graph, as table rows (added to `rows`; the builder commits them)."""
        g, c = built
        g.version += 1
        g.replaced = (g.version, supersession.replaced(g))  # worked out here: a query never waits for the lock
        self._links[g.user_id] = g.replaced[1]
        self._cache.measure(g.user_id)  # grown by what was built
        return self.store.rows(
            [(g, c.episodes, list(c.entities.values()), list(c.relations.values()), [], [])], into=rows
        )

    def _built(self, n: int) -> None:
        self._unconsolidated += n
        self._first_unconsolidated = self._first_unconsolidated or time.monotonic()

    def consolidation_due(self) -> bool:
        if not self._unconsolidated or not self.consolidate_every:
            return False
        waited = time.monotonic() - (self._first_unconsolidated or time.monotonic())
        return self._unconsolidated >= self.consolidate_every or waited >= CONSOLIDATE_INTERVAL

    def catch_up_in_background(self) -> None:
        """`catch_up` in a thread of its own (at start-up, after an import, when the lease passes here)."""
        threading.Thread(target=self.catch_up, name="graph-catch-up", daemon=True).start()

    def catch_up(self) -> int:
        """Queue every stored message with no episode (a crash, a store from before the graph, an import),
        as fast as the builder builds them; how many. Blocks."""
        try:
            done = self.builder.with_in_hand(self.store.done_ids)  # what is queued is not missing
            return self.builder.catch_up(lambda: self.reader.missing_by_users(done), self.reader.embedded)
        finally:
            self.caught_up.set()

    # ------------------------------------------------------------------ consolidation

    def consolidate_all(self, user_id: str | None = None, budget: float | None = None) -> dict[str, int]:
        """budget (the background pass): seconds, then it stops between users (the rest stays due), and it
        does not hurry the builder: a pass over every user once held the builder back past its queue."""
        if budget is None:
            self.settled()
        users = [user_id] if user_id is not None else self.store.users_with_unconsolidated()
        self._unconsolidated, self._first_unconsolidated = 0, None
        total = {"users": 0, "episodes": 0, "traces_created": 0, "traces_updated": 0, "links": 0}
        ends = time.monotonic() + (budget if budget is not None else float("inf"))
        for uid in users:
            if time.monotonic() > ends:
                self._unconsolidated += self.consolidate_every  # still due: the next tick goes on
                break
            while True:
                counts = self.consolidate_user(uid)
                for k in counts:
                    total[k] += counts[k]
                if counts["episodes"] < cons.BATCH:
                    break
            total["users"] += 1
        self.last_consolidation = self.clock()
        return total

    def consolidate_user(self, user_id: str) -> dict[str, int]:
        """One pass over at most BATCH (consolidation.py) of the user's unconsolidated episodes (idempotent)."""
        with self.lock:
            g = self.graph(user_id, background=True)
            ordered = sorted(g.episodes.values(), key=lambda e: (e.ts, e.id))
            unwritten = self.builder.unwritten  # built, not yet written by the builder: the next pass takes them
            new = [e for e in ordered if e.trace_id is None and not e.low and e.id not in unwritten][: cons.BATCH]
            if not new:
                return {"episodes": 0, "traces_created": 0, "traces_updated": 0, "links": 0}
            first = ordered.index(new[0])
            context = [e for e in ordered[max(0, first - cons.WINDOW) : first] if e.trace_id]
            window = sorted(context + new, key=lambda e: (e.ts, e.id))
            rows, vectors = self.reader.embedded([e.id for e in window], user_id)
            present = {r["id"] for r in rows}
            window = [e for e in window if e.id in present]
            hubs = self._hubs(g)
            groups = cons.group(
                window,
                vectors,
                hubs,
                {e.id for e in new if e.id in present},
                {t.id: len(t.episode_ids) for t in g.traces.values()},
            )
            created, updated = self._apply(g, groups)
            g.version += 1
            changed = created | updated
            links = self._link(g, changed)
            self.store.save(
                g, episodes=[e for e in window if e.id in present], traces=[g.traces[t] for t in changed], links=links
            )
            self._cache.measure(user_id)  # grown by its traces
            return {
                "episodes": len(new),
                "traces_created": len(created),
                "traces_updated": len(updated),
                "links": len(links),
            }

    def _hubs(self, g: UserGraph) -> set[str]:
        n = max(1, len(g.episodes))
        return {e.id for e in g.entities.values() if len(e.episodes) > cons.HUB_SHARE * n and len(e.episodes) > 3}

    def _apply(self, g: UserGraph, groups: list[cons.Group]) -> tuple[set[str], set[str]]:
        now = self.clock()
        created: set[str] = set()
        updated: set[str] = set()
        for grp in groups:
            if grp.trace_id and grp.trace_id in g.traces:
                trace = g.traces[grp.trace_id]
                trace.episode_ids = list(dict.fromkeys(trace.episode_ids + grp.episode_ids))
                updated.add(trace.id)
            else:
                trace = Trace(
                    stable_id(g.user_id, "trace", grp.episode_ids[0]),
                    "",
                    list(grp.episode_ids),
                    [],
                    0.5,
                    0.0,
                    0.0,
                    now,
                    now,
                )
                g.traces[trace.id] = trace
                created.add(trace.id)
            for ep_id in grp.episode_ids:
                g.episodes[ep_id].trace_id = trace.id
        self._refresh(g, [g.traces[t] for t in created | updated], now)
        return created, updated - created

    def _refresh(self, g: UserGraph, traces: list[Trace], now: float) -> None:
        """The traces made again from their episodes' messages, read in one go (trace by trace, consolidation held
        the lock through most of a 100k import's catch-up while the builder waited for it)."""
        if ids := list(dict.fromkeys(e for t in traces for e in t.episode_ids)):
            cons.refresh(g, traces, *self.reader.embedded(ids, g.user_id), self.cut, now)

    def _refresh_many(self, traces: dict[str, tuple[UserGraph, list[Trace]]], now: float) -> None:
        """`_refresh` for several users' graphs (user -> graph, traces), their messages read together."""
        ids = {uid: list(dict.fromkeys(e for t in ts for e in t.episode_ids)) for uid, (_g, ts) in traces.items()}
        read = self.reader.embedded_by_user({uid: i for uid, i in ids.items() if i})
        for uid, (g, ts) in traces.items():
            if uid in read:
                cons.refresh(g, ts, *read[uid], self.cut, now)

    def _link(self, g: UserGraph, changed: set[str]) -> list[tuple[str, str]]:
        held = [(t.id, t.vector) for t in g.traces.values() if t.vector is not None and len(t.vector)]
        if not held or not changed:
            return []
        ids = [t for t, _ in held]
        matrix = np.stack([v for _, v in held]).astype(np.float32)
        found = cons.links(ids, matrix, changed)
        g.links.update(found)
        return list(found)

    # ------------------------------------------------------------------ companion hooks

    def on_deleted(self, ids: list[str]) -> None:
        """Deleted messages leave their users' graphs: episodes, mentions, relations they alone
        stated, and traces (consolidated again without them, or dropped when empty)."""
        gone = set(ids)
        with self.lock:
            users = sorted(self.store.users_of(ids))
            for uid in users:
                self._links.pop(uid, None)  # worked out again without them
            saved: list[tuple[UserGraph, list, list, list, list, list]] = []
            dropped: dict[str, set[str]] = {"relations": set(), "traces": set(), "episodes": gone}
            graphs: dict[str, UserGraph] = {}
            refresh: dict[str, tuple[UserGraph, list[Trace]]] = {}  # the traces to make again, read together after
            for k, uid in enumerate(users):  # all of them written together: one commit per table, not one per user
                if k % READ_USERS == 0:  # their graphs read READ_USERS at a time (their rows as Arrow: bounded)
                    graphs = self.graphs(users[k : k + READ_USERS])
                g = graphs[uid]
                entities = [e for e in g.entities.values() if gone & set(e.episodes)]
                before = set(g.relations)
                touched = g.remove_episodes(gone)
                g.version += 1
                empty = {t for t in touched if t in g.traces and not g.traces[t].episode_ids}
                for t in empty:
                    del g.traces[t]
                    for key in [k for k in g.links if t in k]:
                        del g.links[key]
                kept = [g.traces[t] for t in touched - empty]
                if kept:
                    refresh[uid] = (g, kept)
                dropped["relations"] |= before - set(g.relations)
                dropped["traces"] |= empty
                saved.append((g, [], entities, list(g.relations.values()), kept, []))
            self._refresh_many(refresh, self.clock())
            if users:
                self.store.delete_many(users, dropped)
                self.store.save_many(saved)

    # ------------------------------------------------------------------ recall

    def graph_recall(self, req: Any) -> Any:
        assert self.recaller is not None  # (made when the graph has an embedder)
        return self.recaller.graph_recall(req)

    def related_block(self, users: list[str], text: str, per_user: int, words: int, as_of: float | None = None) -> str:
        assert self.recaller is not None  # (made when the graph has an embedder)
        return self.recaller.related_block(users, text, per_user, words, as_of)

    def true_now(self, user_id: str, text: str | None, limit: int, as_of: float | None = None) -> list[dict[str, Any]]:
        assert self.recaller is not None  # (made when the graph has an embedder)
        return self.recaller.true_now(user_id, text, limit, as_of)

    def superseded(self, user_id: str, ids: list[str]) -> dict[str, Replaced]:
        """Which of these memories (episodes) of the user a later one replaced (graph/supersession.py): the
        `Supersession` the query and `context` are handed. Never waits and never reads a graph on the request
        path: the links are worked out when the builder builds (or here, when the user's graph is held and the
        graphs' lock free) and kept per user; a user whose graph is not held and whose links are not known yet is
        answered with none, and their graph is read in the background for the next request (`_warm`). So a graph
        that has not caught up answers with what it had built."""
        if not ids:
            return {}
        g = self._cache.get(user_id)
        if g is not None and (g.replaced is None or g.replaced[0] != g.version) and self.lock.acquire(blocking=False):
            try:
                if self._cache.get(user_id) is g:
                    g.replaced = (g.version, supersession.replaced(g))
                    self._links[user_id] = g.replaced[1]
            finally:
                self.lock.release()
        links = self._links.get(user_id)
        if links is None:
            self._warm(user_id)
            return {}
        return {i: Replaced(*links[i]) for i in ids if i in links}

    def _warm(self, user_id: str) -> None:
        """Work out the user's links in a thread of its own (reading their graph when it is not held)."""
        if user_id in self._warming:
            return
        self._warming.add(user_id)

        def work() -> None:
            try:
                with self.lock:
                    g = self.graph(user_id, background=True)
                    if g.replaced is None or g.replaced[0] != g.version:
                        g.replaced = (g.version, supersession.replaced(g))
                    self._links[user_id] = g.replaced[1]
            except Exception:  # a store error: the next request tries again
                log.exception("reading the links of a graph failed")
            finally:
                self._warming.discard(user_id)

        threading.Thread(target=work, name="graph-links", daemon=True).start()

    def search(
        self, user_id: str, text: str, vector: np.ndarray, limit: int, since: float | None, until: float | None
    ) -> list[dict[str, Any]]:
        assert self.recaller is not None  # (made when the graph has an embedder)
        return self.recaller.search(user_id, text, vector, limit, since, until)

    # ------------------------------------------------------------------ the deep (LLM) tier

    def _to_deep_tier(self, g: UserGraph, ep: Episode, row: dict[str, Any]) -> None:
        """The pre-filter: an episode with a named mention, a first-person statement (the first-person words of its
        language's lexicon: graph/lang/) or in a language with no lexicon goes to the LLM."""
        if (
            self.deep is not None
            and not ep.low
            and not row.get("is_bot")
            and (ep.entity_ids or _first_person(row["content"]))
        ):
            from .deep import DeepJob

            self.deep.submit(DeepJob(g.user_id, ep.id, row["content"], row.get("username")))

    def _apply_deep(self, job: Any, entities: list[tuple[str, str]], relations: list[tuple[str, str]]) -> None:
        from .deep import LLM_CONFIDENCE

        with self.lock:
            g = self.graph(job.user_id, background=True)
            ep = g.episodes.get(job.episode_id)
            if ep is None:
                return  # deleted or forgotten meanwhile
            changed: dict[str, Entity] = {}
            g.version += 1
            for name, type_ in entities:
                entity, _new = g.resolve(name, type_, self.builder.similar)
                if entity.id not in ep.entity_ids:
                    ep.entity_ids.append(entity.id)
                    entity.episodes.append(ep.id)
                changed[entity.id] = entity
            rels = []
            if relations:
                me = self_entity(g, job.username)
                changed[me.id] = me
                for predicate, value in relations:
                    obj = g.find(value)
                    rel, closed = g.add_relation(
                        me, predicate, single_valued(predicate), obj, value, ep, LLM_CONFIDENCE
                    )
                    rels += [rel, *closed]
            self.store.save(g, entities=changed.values(), relations=rels)
            self.store.replace_mentions(g, [ep.id])

    def llm_health(self) -> dict[str, Any]:
        """Whether the deep tier is on and (checked at most every 30 s) its server answers."""
        return self.deep.health() if self.deep is not None else {"configured": False, "reachable": None}

    def reload(self, user_ids: list[str]) -> None:
        """These users' graphs were written from outside (an import): read them again when next used."""
        self.builder.wait_idle(60.0)
        with self.lock:
            gone = set(user_ids)
            self._cache.keep_only(lambda u: u not in gone)
            for u in gone:
                self._links.pop(u, None)

    def drop_cached(self) -> None:
        """Another sidecar changed the tables: every graph is read again when next used (takes no lock)."""
        self._stale = True
        self._links = {}  # and the links worked out again

    def forget_user(self, user_id: str) -> int:
        if self.deep is not None:
            self.deep.forget(user_id)
        with self.lock:
            self._cache.pop(user_id)
            self._links.pop(user_id, None)
            return self.store.forget_user(user_id)

    # ------------------------------------------------------------------ commands

    def settled(self, user_id: str | None = None) -> None:
        """Graph commands answer for every acknowledged store: wait for the builder (bounded), for this user's
        messages only when one is named (another user's backlog does not hold them)."""
        deadline = time.monotonic() + SETTLE_SECONDS
        self.caught_up.wait(SETTLE_SECONDS)
        left = max(0.0, deadline - time.monotonic())
        if not (self.builder.wait_user(user_id, left) if user_id is not None else self.builder.wait_idle(left)):
            log.warning("graph builder still busy after %.0f s; answering with what is built", SETTLE_SECONDS)

    def entities(self, req: EntitiesRequest) -> EntitiesResponse:
        self.settled(req.user_id)
        if req.limit > self.max_limit * 10:
            raise TooLarge(f"limit {req.limit} is over the maximum of {self.max_limit * 10}")
        with self.lock:
            g = self.graph(req.user_id)
            prefix = fold(req.prefix) if req.prefix else None
            found = [
                e
                for e in g.entities.values()
                if (req.entity_type is None or e.type == req.entity_type)
                and (prefix is None or any(k.startswith(prefix) for k in e.keys()))
            ]
            found.sort(key=lambda e: (-len(e.episodes), fold(e.name), e.id))
            return EntitiesResponse(entities=[entity_out(g, e) for e in found[: req.limit]])

    def entity(self, req: EntityRequest) -> EntityResponse:
        self.settled(req.user_id)
        with self.lock:
            g = self.graph(req.user_id)
            if req.as_of is not None:  # the graph as it was then: only the relations valid then
                g = as_of.at(g, req.as_of)
                g.relations = {k: r for k, r in g.relations.items() if r.valid_to is None}
            e = g.entities.get(req.id) if req.id is not None else g.find(req.name or "")
            if e is None:
                then = "" if req.as_of is None else f" as of {int(req.as_of)} (none mentioned it by then)"
                raise NotFound(f"user {quote(req.user_id)} has no entity {quote(req.id or req.name)}{then}")
            # what is true now first, then what was (each in the order it was stated)
            rels = sorted(
                (r for r in g.relations.values() if e.id in (r.subject_id, r.object_id)),
                key=lambda r: (r.valid_to is not None, r.valid_from, r.predicate, r.object_value, r.id),
            )
            traces = sorted((t for t in g.traces.values() if e.id in t.entity_ids), key=lambda t: (t.start, t.id))
            now = self.clock()
            return EntityResponse(
                entity=entity_out(g, e),
                relations=[relation_out(g, r) for r in rels],
                traces=[trace_out(t, now) for t in traces],
            )

    def merge_entities(self, req: MergeEntitiesRequest) -> MergedResponse:
        if req.source == req.target:
            raise InvalidRequest("source and target are the same entity; nothing to merge")
        self.settled(req.user_id)
        with self.lock:
            g = self.graph(req.user_id)
            source, target = g.entities.get(req.source), g.entities.get(req.target)
            for key, found in (("source", source), ("target", target)):
                if found is None:
                    raise NotFound(f"user {quote(req.user_id)} has no entity {quote(getattr(req, key))} ({key})")
            assert source is not None and target is not None
            episodes = list(source.episodes)
            moved = g.merge(source, target)
            g.version += 1
            self.store.delete_rows(
                g, entities=[source.id], relations=g.fold_relations(single_valued)
            )  # relations made one
            self.store.replace_mentions(g, episodes)
            self.store.save(
                g,
                entities=[target],
                relations=g.relations.values(),
                traces=[t for t in g.traces.values() if target.id in t.entity_ids],
            )
            return MergedResponse(entity=entity_out(g, target), moved=moved)

    def consolidate(self, req: ConsolidateRequest) -> ConsolidatedResponse:
        return ConsolidatedResponse.model_validate(self.consolidate_all(req.user_id))

    def health(self) -> dict[str, Any]:
        pending, lag = self.builder.lag()
        return {
            **self.store.counts(),
            "queue": self.builder.pending,
            "pending": pending,
            "lag_seconds": round(lag, 3),
            "last_consolidation": self.last_consolidation,
            "cached_users": len(self._cache),
            "cached_bytes": self._cache.total,
        }
