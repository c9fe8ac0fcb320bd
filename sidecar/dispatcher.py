"""Routes a typed request to the memory service and turns every outcome into one response."""

from __future__ import annotations

import logging
from typing import Any, Callable

from pydantic import BaseModel

from .conversation_service import ConversationService
from .errors import Internal, SidecarError
from .protocol import (
    ChannelContextRequest,
    CleanupRequest,
    ContextRequest,
    ExtractInlineRequest,
    FactHistoryRequest,
    FactsRequest,
    ForgetFactRequest,
    MemoryInstructionsRequest,
    RecallRequest,
    RememberRequest,
    ResolveRequest,
    SyncRequest,
    UpdateFactRequest,
    DeleteRequest,
    ForgetUserRequest,
    HistoryRequest,
    OkResponse,
    PingRequest,
    PongResponse,
    QueryRequest,
    ShutdownRequest,
    StatsRequest,
    StoreRequest,
    decode,
    encode,
)
from .service import MemoryService

log = logging.getLogger("sidecar.dispatcher")


class Dispatcher:
    def __init__(self, service: MemoryService, conversation: ConversationService | None = None):
        self.service = service
        conversation = conversation or ConversationService(service.store)
        self.handlers: dict[type, Callable[[Any], BaseModel]] = {
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
            SyncRequest: service.sync,
        }
        facts = service.facts
        if facts is not None:
            self.handlers.update({
                RememberRequest: facts.remember,
                ExtractInlineRequest: facts.extract_inline,
                MemoryInstructionsRequest: facts.instructions,
                ResolveRequest: facts.resolve,
                FactsRequest: facts.list_facts,
                RecallRequest: facts.recall,
                FactHistoryRequest: facts.history,
                UpdateFactRequest: facts.update,
                ForgetFactRequest: facts.forget,
                ContextRequest: lambda req: conversation.context(req, facts.context),
            })

    def handle_lines(self, lines: list[bytes]) -> list[tuple[bytes, bool]]:
        """Several queued lines, answered in order. Consecutive `store` requests are committed
        together (one embedding batch, one LanceDB commit), each acknowledged only after it."""
        out: list[tuple[bytes, bool]] = []
        i = 0
        while i < len(lines):
            run: list[StoreRequest] = []
            j = i
            while j < len(lines):
                try:
                    request = decode(lines[j])
                except SidecarError:
                    break
                if not isinstance(request, StoreRequest):
                    break
                run.append(request)
                j += 1
            if len(run) < 2:
                out.append(self.handle_line(lines[i]))
                i += 1
                if out[-1][1]:  # shutdown: nothing after it runs
                    break
                continue
            out.extend(self._store_group(run))
            i = j
        return out

    def _store_group(self, run: list[StoreRequest]) -> list[tuple[bytes, bool]]:
        try:
            results = self.service.store_group(run)
        except Exception as exc:  # noqa: BLE001 - the commit failed: every request in it failed
            log.exception("group store failed")
            return [(encode(Internal(f"internal error: {type(exc).__name__}: {exc}", r.request_id).to_response()),
                     False) for r in run]
        out = []
        for req, res in zip(run, results):
            if isinstance(res, SidecarError):
                res.request_id = req.request_id
                out.append((encode(res.to_response()), False))
            else:
                res.request_id = req.request_id
                out.append((encode(res), False))
        return out

    def handle_line(self, line: bytes) -> tuple[bytes, bool]:
        """One request line in, one response line out; True when the request was `shutdown`."""
        request_id = None
        try:
            request = decode(line)
            request_id = request.request_id
            response = self.handlers[type(request)](request)
            response.request_id = request_id
            return encode(response), isinstance(request, ShutdownRequest)
        except SidecarError as exc:
            if exc.request_id is None:
                exc.request_id = request_id
            return encode(exc.to_response()), False
        except Exception as exc:  # noqa: BLE001 - a failed request must never take the process down
            log.exception("request failed")
            err = Internal(f"internal error: {type(exc).__name__}: {exc}", request_id)
            return encode(err.to_response()), False
