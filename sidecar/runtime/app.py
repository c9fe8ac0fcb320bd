"""The composition root: resolve the model, open the data dir, and wire the domain services together
(messages, then the domains beside them, then the dispatcher). Nothing else builds services."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import text
from .config import Config
from .dispatcher import Dispatcher

if TYPE_CHECKING:  # the domains are imported by build(), once the model starts loading
    from ..embedding.embedder import Embedder
    from ..embedding.loading import ModelLoad
    from ..facts import FactService, FactStore
    from ..facts.extraction import ExtractionWorker
    from ..graph import GraphService
    from ..llm import LLMClient
    from ..messages import MemoryService, MessageStore, Supersession
    from ..portable import PortableService
    from ..storage import SharedStore
    from ..wire import ExportedResponse, ExportRequest, ImportedResponse, ImportRequest

log = logging.getLogger("sidecar.server")

# How long a thread holding the GIL keeps it while another waits (CPython's default: 5 ms). A request that
# arrives while background work runs Python (the graph builder's rules over long memories) waited up to that
# at each step that needs the GIL; measured over the pipe (docs/performance.md, "The GIL's switch interval").
SWITCH_INTERVAL = 0.001


class Activity:
    """Whether requests are in hand: background work (the graph builder, long memories' chunks) steps aside
    for them. A request counts from its start until QUIET seconds after its answer (the next one of a
    pipelining host is on its way)."""

    QUIET = 0.05

    def __init__(self) -> None:
        self.in_hand = 0
        self.last = 0.0

    @contextmanager
    def handling(self) -> Iterator[None]:
        self.in_hand += 1
        try:
            yield
        finally:
            self.in_hand -= 1
            self.last = time.monotonic()

    def busy(self) -> bool:
        return self.in_hand > 0 or time.monotonic() - self.last < self.QUIET


@dataclass
class App:
    service: MemoryService
    store: MessageStore
    dispatcher: Dispatcher
    extractor: ExtractionWorker | None = None  # with an LLM
    graph: GraphService | None = None  # unless switched off
    portable: PortableOnDemand | None = None  # export and import
    activity: Activity = field(default_factory=Activity)  # requests in hand, for background work to step aside

    def close(self) -> None:
        if self.extractor is not None:
            self.extractor.stop()
        if self.graph is not None:
            self.graph.builder.stop()
            if self.graph.deep is not None:
                self.graph.deep.stop()
        self.store.close()


def _graph(
    cfg: Config, store: MessageStore, facts: FactService, llm: LLMClient | None, embedder: Embedder
) -> GraphService:
    from ..conversation import cut_words
    from ..graph import GraphService, GraphStore, NameMatcher

    graph_store = GraphStore(store.database, store.lock, store.schedule.note_write)
    store.also_compact.append(lambda exclusive, keep: graph_store.compact(exclusive=exclusive, keep=keep))
    graph = GraphService(
        graph_store,
        store,
        cut_words,
        cache_bytes=cfg.graph_cache_mb << 20,
        consolidate_every=cfg.graph_consolidate_every,
        max_limit=cfg.max_limit,
        same_fact=facts.same_fact,
        llm=llm if cfg.graph_llm else None,
        embed=embedder.embed_query,
        similar=NameMatcher(embedder.embed_queries),
    )  # names against names: e5's symmetric rule
    graph.builder.start()
    store.on_stale.append(graph.drop_cached)  # another sidecar wrote or forgot (object store)
    graph.writable = lambda: store.database.read_only_reason() is None
    # messages stored without the graph (a crash, --graph false, a store from before graph memory) are
    # built by the catch-up that maintenance starts after the cache's warm-up, on the sidecar that maintains
    return graph


def _revector(graph: GraphService, store: MessageStore) -> None:
    """The memories moved to another model (--reembed): the graph's trace vectors are made again from theirs."""
    graph.store.revector_traces(store.vectors_of)
    graph.drop_cached()


def _llm(cfg: Config) -> LLMClient | None:
    if not cfg.llm_base_url:
        return None
    from ..llm import LLMClient, LLMSettings

    llm = LLMClient(
        LLMSettings(
            cfg.llm_base_url,
            cfg.llm_model or "",
            os.environ.get(cfg.llm_api_key_env),
            timeout=cfg.llm_timeout,
            retries=cfg.llm_retries,
        )
    )
    log.info("LLM endpoint %s, model %s", llm.url, cfg.llm_model)
    return llm


def location(cfg: Config) -> Path | SharedStore:
    """The data dir to open: a local directory, or an object-store location with its settings."""
    if isinstance(cfg.data_dir, Path):  # (not cfg.shared)
        return cfg.data_dir
    from ..storage import ObjectLocation, ObjectStoreSettings, SharedStore

    settings = ObjectStoreSettings.resolve(
        os.environ, cfg.s3_endpoint, cfg.s3_region, cfg.s3_access_key_id, cfg.s3_secret_access_key_env
    )
    log.info(
        "object store %s (%s), refresh %.1f s, lease %.0f s, writers %s",
        cfg.data_dir,
        settings.describe(),
        cfg.refresh_seconds,
        cfg.lease_seconds,
        cfg.s3_writers,
    )
    return SharedStore(
        ObjectLocation.parse(str(cfg.data_dir)), settings, cfg.refresh_seconds, cfg.lease_seconds, cfg.s3_writers
    )


def which_model(cfg: Config) -> tuple[str | None, str | None, str | None]:
    """The model asked for and the user's prefixes (ModelLoad's and resolve_model's last arguments)."""
    return cfg.model, cfg.query_prefix, cfg.passage_prefix


def _message_store(cfg: Config, model: ModelLoad) -> MessageStore:
    from ..embedding.spec import describe_scripts
    from ..messages import MessageStore
    from ..storage import import_lancedb

    import_lancedb(cfg.log_level)  # the store's library, while the model's file is still being hashed
    files = model.files()  # the store needs the model's identity
    log.info(
        "model %s from %s (%s); reads %s", files.name, files.source, files.onnx, describe_scripts(files.spec.scripts)
    )
    # an object store re-embeds at the opening; a local data dir in the background (messages/reembed.py)
    reembed = model.embedder().embed_passages if cfg.reembed and cfg.shared else None
    return MessageStore(
        location(cfg),
        files.identity,
        cfg.compact_every_writes,
        cfg.compact_interval_seconds,
        compact_max_duty=cfg.compact_max_duty,
        reembed=reembed,
        cache_bytes=cfg.cache_mb << 20,
        spill_bytes=cfg.cache_disk_mb << 20,
        allow_reembed=cfg.reembed and not cfg.shared,
        model_scripts=files.spec.scripts,
    )


def _supersession(graph: GraphService | None, facts: FactStore, store: MessageStore) -> Supersession:
    """Which memories a later one replaced (the query's and context's "what is true now, first"): graph memory's
    links (relations closed by later ones) and, for the rest, the facts' (a fact from one memory invalidated by a
    fact from a later memory of the same user: its `message_id` naming the memory, the memory's own id)."""
    from ..messages import Replaced
    from ..storage import sql_in, sql_str

    def superseded(user_id: str, ids: list[str]) -> dict[str, Replaced]:
        out = graph.superseded(user_id, ids) if graph is not None else {}
        pairs = facts.replacements(user_id, [i for i in ids if i not in out])
        if pairs:  # the replacing memory: the user's own, and when it was said
            said = {
                r["id"]: r["timestamp"]
                for r in store.rows(f"{sql_in('id', [n for _, n in pairs])} AND user_id = {sql_str(user_id)}", user_id)
            }
            for old, new in sorted(pairs, key=lambda p: said.get(p[1], float("inf"))):
                if new in said and old not in out:
                    out[old] = Replaced(new, said[new], new)
        return out

    return superseded


def build(cfg: Config, model: ModelLoad | None = None) -> App:
    """`model`: the ModelLoad the caller started before its own imports (the server does), else one is
    started here; either way the domains' imports and the store's opening run beside the model's load."""
    from ..embedding.loading import ModelLoad

    model = model or ModelLoad(cfg.model_dir, cfg.offline, cfg.model_sha256, cfg.threads, *which_model(cfg))
    text.configure(list(cfg.languages) if cfg.languages else None)  # keyword analysis (sidecar/text)
    from ..conversation import ConversationService
    from ..facts import FactsCompanion, FactService, FactStore
    from ..graph import GraphCompanion
    from ..messages import MemoryService

    try:
        store = _message_store(cfg, model)
        identity = store.database.model
    except BaseException:
        model.settle()  # the error reaches the caller, who exits: never while the model's session is being made
        raise
    try:
        embedder = model.embedder()
        store.start_chunking(embedder.windows, embedder.embed_ids)  # long memories, in the background
        moving = cfg.reembed or store.database.reembedding is not None  # begun now, or resumed
        fact_store = FactStore.attach(
            store.database,
            store.lock,
            store.schedule.note_write,
            embedder.embed_passages if moving else None,
            model_scripts=embedder.files.spec.scripts,
        )
        store.also_compact.append(lambda exclusive, keep: fact_store.compact(if_written=not exclusive, keep=keep))
        store.also_close.append(fact_store.wait_reads)  # the graph's fact lookups, outside the lock
        resynced = store.database.model_changed  # an object store re-embedded at the opening
        if resynced:
            store.database.commit_meta()  # every domain has re-embedded
        llm = _llm(cfg)
        facts = FactService(
            embedder,
            fact_store,
            categories=cfg.fact_categories,
            duplicate_threshold=cfg.duplicate_threshold,
            candidate_threshold=cfg.candidate_threshold,
            llm=llm,
            max_limit=cfg.max_limit,
            max_users=cfg.max_users,
        )
        # other sidecars write facts too: kept answers no older than LanceDB's own reads
        if store.fresh.interval is not None:  # (fresh.enabled)
            facts.answers_ttl = min(facts.answers_ttl, store.fresh.interval / 2)
        extractor = None
        if llm is not None:
            from ..facts.extraction import ExtractionWorker

            extractor = ExtractionWorker(llm, cfg.fact_categories, facts.consolidate)
        companion = FactsCompanion(facts, extractor, extract_by_default=cfg.llm_extract)
        graph = _graph(cfg, store, facts, llm, embedder) if cfg.graph else None
        companions = (companion,) if graph is None else (companion, GraphCompanion(graph))
        service = MemoryService(
            embedder,
            store,
            ttl_days=cfg.ttl_days,
            max_content_bytes=cfg.max_content_bytes,
            max_content_chars=cfg.max_content_chars,
            max_batch=cfg.max_batch,
            max_limit=cfg.max_limit,
            companions=companions,
            graph_search=graph.search if graph is not None else None,
            supersession=_supersession(graph, fact_store, store),
        )
        conversation = ConversationService(
            store,
            opt_out_marker=cfg.opt_out_marker,
            max_window=cfg.max_window,
            max_content_bytes=cfg.max_content_bytes,
            max_content_chars=cfg.max_content_chars,
            supersession=service.supersession,
        )
        portable = _portable(cfg, store, fact_store, graph, embedder, facts, service, identity)
        if graph is not None and resynced:
            _revector(graph, store)
    except BaseException:
        store.close()
        raise
    dispatcher = Dispatcher(
        service,
        conversation,
        facts,
        companion,
        graph,
        portable,
        read_only=store.database.read_only_reason,
        redaction=cfg.redact,
    )
    app = App(service, store, dispatcher, extractor, graph, portable)
    embedder.busy = app.activity.busy  # long memories' windows step aside for requests too
    store.start_reembedding(
        embedder.embed_passages, app.activity.busy, [lambda: _revector(graph, store)] if graph is not None else []
    )
    if graph is not None:
        graph.builder.busy = app.activity.busy
    sys.setswitchinterval(SWITCH_INTERVAL)
    return app


class PortableOnDemand:
    """Export and import, their service made at the first of them: the portable package's modules were 50-60 ms
    of every start-up, for commands most sessions never send."""

    def __init__(self, make: Callable[[], PortableService]):
        self._make = make
        self._service: PortableService | None = None
        self._lock = threading.Lock()

    def _get(self) -> PortableService:
        with self._lock:
            if self._service is None:
                self._service = self._make()
            return self._service

    def export(self, req: ExportRequest, progress: Callable[[str, int], None] | None = None) -> ExportedResponse:
        return self._get().export(req, progress)

    def import_(self, req: ImportRequest, progress: Callable[[str, int], None] | None = None) -> ImportedResponse:
        return self._get().import_(req, progress)


def _portable(
    cfg: Config,
    store: MessageStore,
    fact_store: FactStore,
    graph: GraphService | None,
    embedder: Embedder,
    facts: FactService,
    service: MemoryService,
    identity: dict[str, Any],
) -> PortableOnDemand:
    def make() -> PortableService:
        from ..portable import PortableService, Stores

        def gone(ids: list[str]) -> None:
            for companion in service.companions:
                companion.on_deleted(ids)

        def over_limit(kind: str, text: str) -> str | None:  # the limits every face has (import: records)
            if kind == "fact":
                return facts.text_over_limit(text)
            return service.content_over_limit(text)

        stores = Stores(
            store, fact_store, graph, embedder.embed_passages, facts.set_names, gone, over_limit, cfg.redact.clean
        )
        # relative export/import paths: under a local data dir, else the working directory
        local = cfg.data_dir if isinstance(cfg.data_dir, Path) else None  # (str: an object-store location)
        return PortableService(stores, identity, local, ttl_days=cfg.ttl_days)

    return PortableOnDemand(make)
