"""Routes a typed request to the memory service and turns every outcome into one response."""

from __future__ import annotations

import logging
from typing import Any, Callable

from pydantic import BaseModel

from .errors import Internal, SidecarError
from .protocol import (
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
    def __init__(self, service: MemoryService):
        self.handlers: dict[type, Callable[[Any], BaseModel]] = {
            StoreRequest: service.store_messages,
            QueryRequest: service.query,
            CleanupRequest: service.cleanup,
            DeleteRequest: service.delete,
            ForgetUserRequest: service.forget_user,
            StatsRequest: service.stats,
            PingRequest: lambda _req: PongResponse(),
            ShutdownRequest: lambda _req: OkResponse(),
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
                ContextRequest: facts.context,
            })

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
