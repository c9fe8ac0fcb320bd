"""The codec: the union of every request and response, one line in -> a typed request, a typed
response -> one line out, and the JSON Schema committed as protocol/schema.json."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from .base import PROTOCOL_VERSION, RequestBase
from .conversation import (
    ChannelContextRequest,
    ChannelContextResponse,
    ContextRequest,
    ContextResponse,
    HistoryRequest,
    HistoryResponse,
)
from .errors import MAX_QUOTE, InvalidJson, InvalidRequest, UnknownType, clip, quote
from .facts import (
    ExtractedResponse,
    ExtractInlineRequest,
    FactHistoryRequest,
    FactHistoryResponse,
    FactResponse,
    FactsRequest,
    FactsResponse,
    ForgetFactRequest,
    InstructionsResponse,
    MemoryInstructionsRequest,
    RecallRequest,
    RecallResponse,
    RememberedResponse,
    RememberRequest,
    ResolvedResponse,
    ResolveRequest,
    UpdateFactRequest,
)
from .graph import (
    ConsolidatedResponse,
    ConsolidateRequest,
    EntitiesRequest,
    EntitiesResponse,
    EntityRequest,
    EntityResponse,
    GraphRecallRequest,
    GraphRecallResponse,
    HealthRequest,
    HealthResponse,
    MergedResponse,
    MergeEntitiesRequest,
)
from .messages import (
    CleanupRequest,
    DeleteRequest,
    ForgetUserRequest,
    OkResponse,
    QueryRequest,
    ResultsResponse,
    StoreRequest,
)
from .portable import ExportedResponse, ExportRequest, ImportedResponse, ImportRequest
from .system import (
    ErrorResponse,
    PingRequest,
    PongResponse,
    ReadyResponse,
    ShutdownRequest,
    StatsRequest,
    StatsResponse,
    SyncedResponse,
    SyncRequest,
)

Request = Annotated[
    StoreRequest
    | QueryRequest
    | CleanupRequest
    | DeleteRequest
    | ForgetUserRequest
    | StatsRequest
    | PingRequest
    | ShutdownRequest
    | ChannelContextRequest
    | HistoryRequest
    | RememberRequest
    | ExtractInlineRequest
    | MemoryInstructionsRequest
    | ResolveRequest
    | FactsRequest
    | RecallRequest
    | FactHistoryRequest
    | UpdateFactRequest
    | ForgetFactRequest
    | ContextRequest
    | SyncRequest
    | EntitiesRequest
    | EntityRequest
    | MergeEntitiesRequest
    | ConsolidateRequest
    | HealthRequest
    | GraphRecallRequest
    | ExportRequest
    | ImportRequest,
    Field(discriminator="type"),
]

REQUEST_MODELS: dict[str, type[RequestBase]] = {
    m.model_fields["type"].annotation.__args__[0]: m  # type: ignore[union-attr]
    for m in (
        StoreRequest,
        QueryRequest,
        CleanupRequest,
        DeleteRequest,
        ForgetUserRequest,
        StatsRequest,
        PingRequest,
        ShutdownRequest,
        ChannelContextRequest,
        HistoryRequest,
        RememberRequest,
        ExtractInlineRequest,
        MemoryInstructionsRequest,
        ResolveRequest,
        FactsRequest,
        RecallRequest,
        FactHistoryRequest,
        UpdateFactRequest,
        ForgetFactRequest,
        ContextRequest,
        SyncRequest,
        EntitiesRequest,
        EntityRequest,
        MergeEntitiesRequest,
        ConsolidateRequest,
        HealthRequest,
        GraphRecallRequest,
        ExportRequest,
        ImportRequest,
    )
}


Response = (
    ReadyResponse
    | OkResponse
    | ResultsResponse
    | StatsResponse
    | PongResponse
    | ChannelContextResponse
    | HistoryResponse
    | RememberedResponse
    | ExtractedResponse
    | InstructionsResponse
    | ResolvedResponse
    | FactsResponse
    | RecallResponse
    | FactHistoryResponse
    | FactResponse
    | ContextResponse
    | SyncedResponse
    | EntitiesResponse
    | EntityResponse
    | MergedResponse
    | ConsolidatedResponse
    | HealthResponse
    | GraphRecallResponse
    | ExportedResponse
    | ImportedResponse
    | ErrorResponse
)


def describe(err: ValidationError, limit: int = 3) -> str:
    """The first `limit` problems of a validation error as one sentence; every piece of the input in it
    (a field name from a dict key, a value a message repeats) quoted at most MAX_QUOTE characters."""
    parts = []
    errors = err.errors()
    for e in errors[:limit]:
        loc = ".".join(clip(str(p)) for p in e["loc"] if not isinstance(p, str) or not p.startswith("function-"))
        msg = e["msg"].removeprefix("Value error, ")
        for said in (e.get("input"), *(e.get("ctx") or {}).values()):  # what pydantic repeats of the input
            if isinstance(said, str) and len(said) > MAX_QUOTE and said in msg:
                msg = msg.replace(said, clip(said))
        msg = clip(msg, MAX_QUOTE + 100)  # fixed words and a quote; the backstop
        if e["type"] == "missing":
            parts.append(f"field `{loc}` is required")
        elif loc:
            parts.append(f"field `{loc}`: {msg}")
        else:
            parts.append(msg)
    more = len(errors) - limit
    tail = f" (and {more} more)" if more > 0 else ""
    return "; ".join(parts) + tail


def decode(line: bytes) -> RequestBase:
    """Parse one request line; raises a SidecarError carrying the request_id when it can be read."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        reason = "not valid UTF-8" if "utf-8" in str(exc).lower() else str(exc)
        raise InvalidJson(f"line is not valid JSON: {reason}") from None
    return validate_request(obj)


def validate_request(obj: Any) -> RequestBase:
    """A parsed JSON value -> the typed request it is (every face feeds its requests through here);
    raises a SidecarError carrying the request_id when it can be read."""
    if not isinstance(obj, dict):
        raise InvalidRequest(
            f"a request must be a JSON object, got {type(obj).__name__ if obj is not None else 'null'}"
        )
    rid = obj.get("request_id")
    if not (rid is None or isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))):
        raise InvalidRequest("field `request_id` must be a string or an integer")
    kind = obj.get("type")
    if kind is None:
        raise InvalidRequest("field `type` is required", rid)
    if not isinstance(kind, str):
        raise InvalidRequest("field `type` must be a string", rid)
    model = REQUEST_MODELS.get(kind)
    if model is None:
        raise UnknownType(f"unknown request type {quote(kind)}; known types: {', '.join(sorted(REQUEST_MODELS))}", rid)
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise InvalidRequest(f"invalid {kind} request: {describe(exc)}", rid) from None


def encode(response: BaseModel | dict[str, Any]) -> bytes:
    """One response line, newline included. None-valued optional fields are left out, but for those a model
    names in KEEP_NULL and was given (an `expires_at` of null says "never")."""
    if isinstance(response, BaseModel):
        obj = response.model_dump(exclude_none=True)
        for name in getattr(response, "KEEP_NULL", ()):
            if name not in obj and name in response.model_fields_set:
                obj[name] = None
    else:
        obj = dict(response)
    return orjson.dumps({"type": obj.pop("type"), **obj}) + b"\n"


def json_schema() -> dict[str, Any]:
    """The schema of every request and response, as committed in protocol/schema.json."""
    schema = TypeAdapter(Request).json_schema(mode="validation")
    responses = TypeAdapter(Response).json_schema(mode="serialization")
    defs = {**schema.pop("$defs", {}), **responses.pop("$defs", {})}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "memory-sidecar protocol",
        "description": f"Protocol version {PROTOCOL_VERSION}. One JSON object per line on stdin (request) "
        "and stdout (response).",
        "protocol": PROTOCOL_VERSION,
        "request": schema,
        "response": responses,
        "$defs": defs,
    }
