"""Routes a typed request to the memory service and turns every outcome into one response."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..conversation import ConversationService
from ..facts import FactsCompanion, FactService
from ..messages import MemoryService, content_over_limit
from ..text import REDACT_ON, Redaction
from ..wire import (
    MAX_QUERY_BYTES,
    ChannelContextRequest,
    CleanupRequest,
    ConsolidateRequest,
    ContextRequest,
    DeleteRequest,
    EntitiesRequest,
    EntityRequest,
    ExportRequest,
    ExtractInlineRequest,
    FactHistoryRequest,
    FactsRequest,
    ForgetFactRequest,
    ForgetUserRequest,
    GraphHealth,
    GraphRecallRequest,
    HealthRequest,
    HealthResponse,
    HistoryRequest,
    ImportRequest,
    MemoryInstructionsRequest,
    MergeEntitiesRequest,
    OkResponse,
    PingRequest,
    PongResponse,
    QueryRequest,
    RecallRequest,
    RememberRequest,
    ResolveRequest,
    ShutdownRequest,
    StatsRequest,
    StoreRequest,
    SyncRequest,
    UpdateFactRequest,
    decode,
    encode,
)
from ..wire.base import ResponseBase
from ..wire.errors import Disabled, Internal, SidecarError, TooLarge
from .privacy import clean_request

if TYPE_CHECKING:  # the graph is imported only when it is on; the portable service at its first use
    from ..graph import GraphService
    from .app import PortableOnDemand

log = logging.getLogger("sidecar.dispatcher")


# Requests that write: refused with `disabled` by a sidecar that serves an object store read-only
WRITES = (
    StoreRequest,
    CleanupRequest,
    DeleteRequest,
    ForgetUserRequest,
    SyncRequest,
    RememberRequest,
    ExtractInlineRequest,
    ResolveRequest,
    UpdateFactRequest,
    ForgetFactRequest,
    ImportRequest,
    MergeEntitiesRequest,
    ConsolidateRequest,
)

# Requests whose `text` is searched for: held to MAX_QUERY_BYTES (after NFKC) on every face
QUERY_TEXTS = (QueryRequest, FactsRequest, RecallRequest, ContextRequest, GraphRecallRequest)


def check_query_text(request: Any) -> None:
    """TooLarge when the request's search text is over MAX_QUERY_BYTES, measured on its NFKC form."""
    text = getattr(request, "text", None)
    if isinstance(text, str):
        over = content_over_limit(text, MAX_QUERY_BYTES, None, "`text`", ("the query text's fixed limit", ""))
        if over is not None:
            raise TooLarge(over)


class Dispatcher:
    def __init__(
        self,
        service: MemoryService,
        conversation: ConversationService,
        facts: FactService,
        companion: FactsCompanion,
        graph: GraphService | None = None,
        portable: PortableOnDemand | None = None,
        read_only: Callable[[], str | None] = lambda: None,
        redaction: Redaction = REDACT_ON,
    ):
        self.service = service
        self.redaction = redaction  # what text becomes before it is stored or sent (--redact, <private>)
        self.graph = graph
        self.read_only = read_only  # why this sidecar may not write now, or None
        self.handlers: dict[type, Callable[[Any], ResponseBase]] = {
            StoreRequest: service.store_messages,
            QueryRequest: service.query,
            CleanupRequest: service.cleanup,
            DeleteRequest: service.delete,
            ForgetUserRequest: service.forget_user,
            StatsRequest: service.stats,
            PingRequest: lambda _req: PongResponse(),
            ShutdownRequest: lambda _req: OkResponse(),
            ChannelContextRequest: conversation.channel_context,
            HistoryRequest: conversation.history,
            SyncRequest: companion.sync,
            RememberRequest: facts.remember,
            ExtractInlineRequest: facts.extract_inline,
            MemoryInstructionsRequest: facts.instructions,
            ResolveRequest: facts.resolve,
            FactsRequest: facts.list_facts,
            RecallRequest: facts.recall,
            FactHistoryRequest: facts.history,
            UpdateFactRequest: facts.update,
            ForgetFactRequest: facts.forget,
            ContextRequest: lambda req: self._context(req, conversation, facts),
            HealthRequest: self._health,
        }
        if portable is not None:
            self.handlers[ExportRequest] = portable.export
            self.handlers[ImportRequest] = portable.import_
        for kind, name in (
            (EntitiesRequest, "entities"),
            (EntityRequest, "entity"),
            (MergeEntitiesRequest, "merge_entities"),
            (ConsolidateRequest, "consolidate"),
            (GraphRecallRequest, "graph_recall"),
        ):
            self.handlers[kind] = getattr(graph, name) if graph is not None else self._graph_off

    def _context(self, req: ContextRequest, conversation: ConversationService, facts: FactService) -> ResponseBase:
        """The facts block (facts, what is true now from graph memory, the memories relevant to the text) and
        the conversation blocks, then (with `related`, `text` and graph memory) related memories."""
        if self.graph is None and "now" in req.include and "include" in req.model_fields_set:
            raise Disabled('`include` "now" needs graph memory, which is switched off (--graph false)')
        facts.check_users(req.user_map())  # before the channel and history blocks are made
        true_now = self.graph.true_now if self.graph is not None else None
        out = conversation.context(req, lambda r, memories: facts.context(r, true_now, memories))
        if req.related and req.text and not out.opted_out:
            if self.graph is None:
                raise Disabled("`related` needs graph memory, which is switched off (--graph false)")
            out.related_block = self.graph.related_block(
                list(req.user_map()), req.text, req.related, req.related_words, req.as_of
            )
        return out

    @staticmethod
    def _graph_off(req: Any) -> ResponseBase:
        raise Disabled(f"graph memory is switched off (--graph false); `{req.type}` needs it")

    def _health(self, _req: Any) -> HealthResponse:
        g = self.graph.health() if self.graph is not None else {}
        graph = GraphHealth(
            enabled=self.graph is not None,
            episodes=g.get("episodes", 0),
            entities=g.get("entities", 0),
            relations_current=g.get("relations_current", 0),
            relations_closed=g.get("relations_closed", 0),
            traces=g.get("traces", 0),
            queue=g.get("queue", 0),
            pending=g.get("pending", 0),
            lag_seconds=g.get("lag_seconds", 0.0),
            last_consolidation=g.get("last_consolidation"),
            cached_users=g.get("cached_users", 0),
            cached_bytes=g.get("cached_bytes", 0),
            ner={"loaded": False},
            llm=self.graph.llm_health() if self.graph is not None else {"configured": False, "reachable": None},
        )
        quarantined = self.service.store.pending.quarantined
        return HealthResponse(
            status="degraded" if quarantined else "ok",
            uptime_seconds=round(time.monotonic() - self.service.started, 3),
            memories=self.service.store.count(),
            graph=graph,
            quarantined=quarantined or None,
            quarantine=str(self.service.store.pending.quarantine) if quarantined else None,
        )

    def handle_lines(self, lines: list[bytes]) -> list[tuple[bytes, bool]]:
        """Several queued lines, answered in order. Consecutive `store` requests are committed
        together (one embedding batch, one LanceDB commit), each acknowledged only after it.
        Nothing after a `shutdown` runs."""
        decoded = [self._decode(line) for line in lines]
        out: list[tuple[bytes, bool]] = []
        i = 0
        while i < len(decoded):
            j = i
            while j < len(decoded) and isinstance(decoded[j], StoreRequest):
                j += 1
            if j - i >= 2:
                out.extend(self._store_group(decoded[i:j]))
                i = j
                continue
            out.append(self._answer(decoded[i]))
            i += 1
            if out[-1][1]:
                break
        return out

    def handle_line(self, line: bytes) -> tuple[bytes, bool]:
        """One request line in, one response line out; True when the request was `shutdown`."""
        return self._answer(self._decode(line))

    @staticmethod
    def _decode(line: bytes) -> Any:
        try:
            return decode(line)
        except SidecarError as exc:  # answered in order, like any other request
            return exc

    def handle(self, request: Any) -> ResponseBase:
        """One typed request -> its response model, for every face (NDJSON here, MCP in sidecar/mcp).
        Every failure comes out as a SidecarError carrying the request_id; unexpected ones as `internal`."""
        try:
            if isinstance(request, WRITES) and (reason := self.read_only()) is not None:
                raise Disabled(reason)
            if isinstance(request, QUERY_TEXTS):
                check_query_text(request)
            redacted = clean_request(request, self.redaction) if isinstance(request, WRITES) else 0
            response = self.handlers[type(request)](request)
            if isinstance(request, StoreRequest):
                response.redacted = redacted  # type: ignore[attr-defined]
        except SidecarError as exc:
            if exc.request_id is None:
                exc.request_id = request.request_id
            raise
        except Exception as exc:
            log.exception("request failed")
            raise Internal(f"internal error: {type(exc).__name__}: {exc}", request.request_id) from exc
        response.request_id = request.request_id
        return response

    def _answer(self, request: Any) -> tuple[bytes, bool]:
        if isinstance(request, SidecarError):
            return encode(request.to_response()), False
        try:
            response = self.handle(request)
        except SidecarError as exc:
            return encode(exc.to_response()), False
        return encode(response), isinstance(request, ShutdownRequest)

    def _store_group(self, run: list[StoreRequest]) -> list[tuple[bytes, bool]]:
        try:
            if (reason := self.read_only()) is not None:
                raise Disabled(reason)
            counts: list[int | SidecarError] = []  # each request's secrets replaced, or why it was refused
            for req in run:
                try:
                    counts.append(clean_request(req, self.redaction))
                except SidecarError as exc:
                    counts.append(exc)
            stored = iter(self.service.store_group([r for r, n in zip(run, counts) if isinstance(n, int)]))
            results: list[OkResponse | SidecarError] = []
            for n in counts:
                if isinstance(n, SidecarError):
                    results.append(n)
                else:
                    res = next(stored)
                    if not isinstance(res, SidecarError):
                        res.redacted = n
                    results.append(res)
        except Disabled as exc:
            results = [Disabled(str(exc)) for _ in run]
        except Exception as exc:
            log.exception("group store failed")
            results = [Internal(f"internal error: {type(exc).__name__}: {exc}") for _ in run]
        out = []
        for req, res in zip(run, results):
            res.request_id = req.request_id
            out.append((encode(res.to_response() if isinstance(res, SidecarError) else res), False))
        return out
