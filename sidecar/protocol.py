"""The wire contract: request and response models (the single source of truth) and their codec.

`protocol/schema.json` is generated from these models (`python -m sidecar.schema`), and a test
fails when the committed file is stale. Parsing is strict about types (a string is never taken
for a number) and lenient about unknown fields (ignored).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Union

import orjson
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from .errors import InvalidJson, InvalidRequest, UnknownType

PROTOCOL_VERSION = 1
MAX_ID_CHARS = 512


def _id_to_str(value: str | int) -> str:
    s = str(value)
    if not s.strip():
        raise ValueError("must not be empty")
    if len(s) > MAX_ID_CHARS:
        raise ValueError(f"must be at most {MAX_ID_CHARS} characters")
    return s


def _finite(value: float | int) -> float | int:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


# Ids may be JSON strings or integers (chat platforms use both); they are stored as strings.
Id = Annotated[Union[StrictStr, StrictInt], AfterValidator(_id_to_str), Field(json_schema_extra={"maxLength": MAX_ID_CHARS})]
RequestId = Union[StrictStr, StrictInt, None]
Number = Annotated[Union[StrictInt, StrictFloat], AfterValidator(_finite)]
Timestamp = Annotated[Number, Field(ge=0, description="Unix time in seconds.")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class _Request(_Model):
    request_id: RequestId = Field(None, description="Echoed on the response.")


class MessageIn(_Model):
    user_id: Id
    content: StrictStr = Field(description="The message text; must not be blank.")
    is_bot: StrictBool = False
    timestamp: Timestamp | None = Field(None, description="Unix seconds; default: now.")
    message_id: Id | None = None
    channel_id: Id | None = None
    reply_to: Id | None = Field(None, description="message_id this message replies to.")
    username: StrictStr | None = Field(None, description="Display name of the author.")

    @model_validator(mode="after")
    def _content_not_blank(self) -> "MessageIn":
        if not self.content.strip():
            raise ValueError("content must not be empty")
        return self


class StoreRequest(_Request):
    """Store one message (top-level fields) or many (`messages`), in one commit."""

    type: Literal["store"]
    user_id: Id | None = None
    content: StrictStr | None = None
    is_bot: StrictBool = False
    timestamp: Timestamp | None = None
    message_id: Id | None = None
    channel_id: Id | None = None
    reply_to: Id | None = None
    username: StrictStr | None = None
    messages: list[MessageIn] | None = Field(None, description="Batch form; exclusive with user_id/content.")

    @model_validator(mode="after")
    def _one_form(self) -> "StoreRequest":
        if self.messages is not None:
            if self.user_id is not None or self.content is not None:
                raise ValueError("give either `messages` (batch) or `user_id` and `content`, not both")
            if not self.messages:
                raise ValueError("messages must not be empty")
            return self
        if self.user_id is None:
            raise ValueError("field `user_id` is required")
        if self.content is None:
            raise ValueError("field `content` is required")
        if not self.content.strip():
            raise ValueError("content must not be empty")
        return self

    def items(self) -> list[MessageIn]:
        if self.messages is not None:
            return self.messages
        return [MessageIn.model_construct(**{k: getattr(self, k) for k in MessageIn.model_fields})]


class QueryRequest(_Request):
    """Semantic search over one user's memories, best first."""

    type: Literal["query"]
    user_id: Id
    text: StrictStr
    limit: StrictInt = Field(5, ge=1)
    min_similarity: Number | None = Field(None, ge=-1, le=1)
    include_bot: StrictBool = True
    since: Timestamp | None = Field(None, description="Only memories with timestamp >= since.")
    until: Timestamp | None = Field(None, description="Only memories with timestamp <= until.")

    @model_validator(mode="after")
    def _text_not_blank(self) -> "QueryRequest":
        if not self.text.strip():
            raise ValueError("text must not be empty")
        return self


class CleanupRequest(_Request):
    """Delete memories older than ttl_days (one user's when user_id is given), then compact."""

    type: Literal["cleanup"]
    ttl_days: Number | None = Field(None, gt=0, description="Default: the configured --ttl-days.")
    user_id: Id | None = None


class DeleteRequest(_Request):
    type: Literal["delete"]
    id: Id


class ForgetUserRequest(_Request):
    type: Literal["forget_user"]
    user_id: Id


class StatsRequest(_Request):
    type: Literal["stats"]


class PingRequest(_Request):
    type: Literal["ping"]


class ShutdownRequest(_Request):
    type: Literal["shutdown"]


Request = Annotated[
    Union[StoreRequest, QueryRequest, CleanupRequest, DeleteRequest, ForgetUserRequest, StatsRequest,
          PingRequest, ShutdownRequest],
    Field(discriminator="type"),
]
REQUEST_MODELS: dict[str, type[_Request]] = {
    m.model_fields["type"].annotation.__args__[0]: m  # type: ignore[union-attr]
    for m in (StoreRequest, QueryRequest, CleanupRequest, DeleteRequest, ForgetUserRequest, StatsRequest,
              PingRequest, ShutdownRequest)
}


# ---------------------------------------------------------------- responses


class _Response(_Model):
    request_id: RequestId = None


class OkResponse(_Response):
    """Success. `id`/`ids` for store, `deleted` for cleanup/delete/forget_user."""

    type: Literal["ok"] = "ok"
    id: str | None = None
    ids: list[str] | None = None
    deleted: int | None = None


class MessageOut(_Model):
    id: str
    content: str
    similarity: float
    timestamp: int = Field(description="Unix seconds (whole seconds).")
    is_bot: bool
    user_id: str
    username: str | None = None
    message_id: str | None = None
    channel_id: str | None = None
    reply_to: str | None = None


class ResultsResponse(_Response):
    type: Literal["results"] = "results"
    messages: list[MessageOut]


class ModelInfo(_Model):
    name: str
    dim: int
    digest: str = Field(description="sha256 of the ONNX file.")
    source: str = Field(description="Where the model files were found.")


class StatsResponse(_Response):
    type: Literal["stats"] = "stats"
    memories: int
    users: int
    disk_bytes: int
    model: ModelInfo
    version: str
    protocol: int
    schema_version: int
    uptime_seconds: float
    data_dir: str
    versions: dict[str, str] = Field(description="Versions of the main libraries.")


class ReadyResponse(_Model):
    type: Literal["ready"] = "ready"
    version: str
    protocol: int
    model: str
    dim: int
    model_digest: str
    data_dir: str
    memories: int
    startup_ms: int


class PongResponse(_Response):
    type: Literal["pong"] = "pong"


class ErrorResponse(_Response):
    type: Literal["error"] = "error"
    code: str = Field(description="Stable snake_case code; see the README's error table.")
    message: str


Response = Union[ReadyResponse, OkResponse, ResultsResponse, StatsResponse, PongResponse, ErrorResponse]


# ---------------------------------------------------------------- codec


def _describe(err: ValidationError, type_name: str) -> str:
    parts = []
    for e in err.errors()[:3]:
        loc = ".".join(str(p) for p in e["loc"] if not isinstance(p, str) or not p.startswith("function-"))
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "missing":
            parts.append(f"field `{loc}` is required")
        elif loc:
            parts.append(f"field `{loc}`: {msg}")
        else:
            parts.append(msg)
    more = len(err.errors()) - 3
    tail = f" (and {more} more)" if more > 0 else ""
    return f"invalid {type_name} request: " + "; ".join(parts) + tail


def decode(line: bytes) -> _Request:
    """Parse one request line; raises a SidecarError carrying the request_id when it can be read."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        reason = "not valid UTF-8" if "utf-8" in str(exc).lower() else str(exc)
        raise InvalidJson(f"line is not valid JSON: {reason}") from None
    if not isinstance(obj, dict):
        raise InvalidRequest(f"a request must be a JSON object, got {type(obj).__name__ if obj is not None else 'null'}")
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
        raise UnknownType(f"unknown request type {kind!r}; known types: {', '.join(sorted(REQUEST_MODELS))}", rid)
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise InvalidRequest(_describe(exc, kind), rid) from None


def encode(response: BaseModel | dict[str, Any]) -> bytes:
    """One response line, newline included. None-valued optional fields are left out."""
    obj = response.model_dump(exclude_none=True) if isinstance(response, BaseModel) else dict(response)
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
