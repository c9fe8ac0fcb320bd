"""The wire contract: request and response models (the single source of truth) and their codec.

`protocol/schema.json` is generated from these models (`python -m sidecar.schema`), and a test
fails when the committed file is stale. Parsing is strict about types (a string is never taken
for a number) and lenient about unknown fields (ignored).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Optional, Union

import orjson
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
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
# Up to the end of year 9999: every stored timestamp can be rendered as a date (history, context).
MAX_TIMESTAMP = 253_402_300_799
Timestamp = Annotated[Number, Field(ge=0, le=MAX_TIMESTAMP, description="Unix time in seconds.")]
SearchMode = Literal["semantic", "keyword", "hybrid"]
MODE_DESCRIPTION = ("semantic: nearest vectors (cosine); keyword: BM25 full-text match; hybrid (default): both, "
                    "fused by rank.")


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


def _nul_path(value: Any, path: str) -> str | None:
    """The first field (dotted path) whose string contains NUL, anywhere in a raw request."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(key, str) and "\x00" in key:
            return f"{path}.{key!r}" if path else repr(key)
        found = _nul_path(item, f"{path}.{key}" if path else str(key))
        if found:
            return found
    return None


class _Request(_Model):
    request_id: RequestId = Field(None, description="Echoed on the response.")

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        # One rule for every string of every request: NUL can be neither stored nor put in a filter.
        field = _nul_path(data, "")
        if field:
            raise ValueError(f"field `{field}` must not contain NUL characters")
        return data


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
    extract: StrictBool | None = Field(None, description="Queue background fact extraction for the stored "
                                       "messages (needs an LLM endpoint). Default: --llm-extract.")

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
    """Search over one user's memories, best first."""

    type: Literal["query"]
    user_id: Id
    text: StrictStr
    limit: StrictInt = Field(5, ge=1)
    min_similarity: Number | None = Field(None, ge=-1, le=1)
    include_bot: StrictBool = True
    since: Timestamp | None = Field(None, description="Only memories with timestamp >= since.")
    until: Timestamp | None = Field(None, description="Only memories with timestamp <= until.")
    username: StrictStr | None = Field(None, description="Upserts the user's display name.")
    mode: SearchMode = Field("hybrid", description=MODE_DESCRIPTION)

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


# ---------------------------------------------------------------- facts (issue 5)

def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


NonBlank = Annotated[StrictStr, AfterValidator(_not_blank)]
Action = Annotated[Literal["KEEP", "INVALIDATE", "MERGE"], BeforeValidator(_upper)]
Fraction = Annotated[Number, Field(ge=0, le=1)]
# {"<user_id>": "<display name or null>", ...}; JSON object keys are always strings.
UserMap = Annotated[dict[Annotated[StrictStr, AfterValidator(_id_to_str)], Optional[StrictStr]],
                    Field(min_length=1, description="user_id -> display name (null: keep the stored name).")]


class RememberRequest(_Request):
    """Add one fact about a user, through consolidation."""

    type: Literal["remember"]
    user_id: Id
    text: NonBlank
    category: NonBlank = Field(description="One of the configured categories (--fact-categories).")
    username: StrictStr | None = None
    source: Literal["manual", "chat", "extraction"] = "manual"
    confidence: Fraction | None = Field(None, description="Default: 1.0 manual, 0.8 chat, 0.7 extraction.")
    message_id: Id | None = Field(None, description="The message the fact came from.")


class ExtractInlineRequest(_Request):
    """Save the <memory> tags of an LLM reply and return the reply without any memory tag."""

    type: Literal["extract_inline"]
    user_id: Id
    reply: StrictStr
    username: StrictStr | None = None
    message_id: Id | None = None


class MemoryInstructionsRequest(_Request):
    type: Literal["memory_instructions"]


class ResolveRequest(_Request):
    """The host's decision about one candidate listed by remember/extract_inline."""

    type: Literal["resolve"]
    fact_id: Id = Field(description="The new fact.")
    candidate_id: Id = Field(description="The existing fact it was compared with.")
    action: Action = Field(description="KEEP, INVALIDATE (the candidate) or MERGE (into the candidate).")
    merged_text: StrictStr | None = Field(None, description="Required for MERGE: the combined fact.")
    reason: StrictStr | None = None

    @model_validator(mode="after")
    def _merge_needs_text(self) -> "ResolveRequest":
        if self.action == "MERGE" and not (self.merged_text or "").strip():
            raise ValueError("MERGE needs a non-empty merged_text")
        return self


class FactsRequest(_Request):
    """One user's facts: by relevance to `text`, else most recent first."""

    type: Literal["facts"]
    user_id: Id
    username: StrictStr | None = None
    text: StrictStr | None = None
    category: StrictStr | list[StrictStr] | None = None
    include_inactive: StrictBool = False
    limit: StrictInt = Field(20, ge=1)
    mode: SearchMode = Field("hybrid", description="With `text`: " + MODE_DESCRIPTION)


class RecallRequest(_Request):
    """Facts of several users at once (e.g. everyone in a reply chain)."""

    type: Literal["recall"]
    users: UserMap
    text: StrictStr | None = None
    category: StrictStr | list[StrictStr] | None = None
    limit: StrictInt = Field(5, ge=1, description="Per user.")
    mode: SearchMode = Field("hybrid", description="With `text`: " + MODE_DESCRIPTION)


class FactHistoryRequest(_Request):
    type: Literal["fact_history"]
    fact_id: Id


class UpdateFactRequest(_Request):
    """A correction: new text and/or category for an active fact (re-embedded, history kept)."""

    type: Literal["update_fact"]
    fact_id: Id
    text: NonBlank | None = None
    category: NonBlank | None = None
    reason: StrictStr | None = None

    @model_validator(mode="after")
    def _something(self) -> "UpdateFactRequest":
        if self.text is None and self.category is None:
            raise ValueError("give `text`, `category` or both")
        return self


class ForgetFactRequest(_Request):
    """Delete one fact and its history for good."""

    type: Literal["forget_fact"]
    fact_id: Id


class ContextRequest(_Request):
    """A prompt-ready block of facts for a message and the users involved; with `channel` and/or
    `history`, the channel block and the history block in the same answer. A `text` carrying the
    opt-out marker empties every block."""

    type: Literal["context"]
    format: Literal["xml", "markdown"] = "xml"
    text: StrictStr | None = Field(None, description="The message being answered; ranks facts by relevance.")
    users: UserMap | None = None
    user_id: Id | None = Field(None, description="Shorthand for one user (with `username`).")
    username: StrictStr | None = None
    limit: StrictInt = Field(10, ge=1, description="xml: facts per user.")
    preferences_limit: StrictInt = Field(10, ge=0, description="markdown: most recent preferences.")
    relevant_limit: StrictInt = Field(10, ge=0, description="markdown: most relevant other facts.")
    min_similarity: Number | None = Field(None, ge=-1, le=1, description="Drop relevant facts below this.")
    mode: SearchMode = Field("hybrid", description="How facts are ranked for `text`: " + MODE_DESCRIPTION)
    channel: "ChannelContextOptions | None" = Field(None, description="Also render the channel block "
                                                    "(the options of `channel_context`).")
    history: "HistoryOptions | None" = Field(None, description="Also render the history block "
                                             "(the options of `history`).")

    @model_validator(mode="after")
    def _who(self) -> "ContextRequest":
        if (self.users is None) == (self.user_id is None):
            raise ValueError("give either `users` or `user_id`")
        return self

    def user_map(self) -> dict[str, str | None]:
        return self.users if self.users is not None else {self.user_id: self.username}  # type: ignore[dict-item]


class SyncRequest(_Request):
    """Wait until background fact extraction has finished (or `timeout` seconds have passed)."""

    type: Literal["sync"]
    timeout: Number = Field(120, gt=0)


class PingRequest(_Request):
    type: Literal["ping"]


class ShutdownRequest(_Request):
    type: Literal["shutdown"]


class ContextMessageIn(_Model):
    """A message sent inline (stateless mode). Unlike `store`, empty content is allowed (it is skipped)."""

    user_id: Id
    content: StrictStr
    is_bot: StrictBool = False
    timestamp: Timestamp | None = Field(None, description="Unix seconds. Give it on every message or on none "
                                                          "(then the list order is oldest first).")
    message_id: Id | None = None
    reply_to: Id | None = Field(None, description="message_id this message replies to.")
    username: StrictStr | None = Field(None, description="Display name of the author.")


class ConversationSource(_Model):
    """Where the messages come from and how speakers are named (shared by channel_context and history)."""

    messages: list[ContextMessageIn] | None = Field(None, description="Stateless mode: the messages themselves, "
                                                                      "instead of reading them from the store.")
    before_message_id: Id | None = Field(None, description="Only messages before this one (by message_id); "
                                                           "default: the newest.")
    before: Timestamp | None = Field(None, description="Only messages with timestamp < before.")
    exclude_ids: list[Id] = Field(default_factory=list, description="message_ids to leave out.")
    bot_user_id: Id | None = Field(None, description="The bot's own user_id; default: messages flagged is_bot "
                                                     "are the bot's.")
    bot_name: StrictStr | None = Field(None, description="Label of the bot's own messages.")
    text: StrictStr | None = Field(None, description="The user's current message; if it contains the opt-out "
                                                     "marker, the block is empty.")

    @model_validator(mode="after")
    def _inline_timestamps(self) -> "ConversationSource":
        if self.messages:
            given = sum(m.timestamp is not None for m in self.messages)
            if 0 < given < len(self.messages):
                raise ValueError("give `timestamp` on every inline message or on none")
        return self


class ChannelContextOptions(ConversationSource):
    """The options of a channel block (reusable by a request that embeds one)."""

    channel_id: Id | None = Field(None, description="Read the channel's stored messages (exclusive with messages).")
    limit: StrictInt = Field(100, ge=1, description="Window: the last `limit` messages.")
    max_threads: StrictInt = Field(5, ge=1, description="Most threads shown.")
    exclude_reply_chain_of: Id | None = Field(None, description="Leave out this message and every message it "
                                                                "replies to, transitively.")

    @model_validator(mode="after")
    def _one_source(self) -> "ChannelContextOptions":
        if self.channel_id is not None and self.messages is not None:
            raise ValueError("give either `channel_id` (stored messages) or `messages` (inline), not both")
        if self.channel_id is None and self.messages is None:
            raise ValueError("give `channel_id` (stored messages) or `messages` (inline)")
        return self


class ChannelContextRequest(_Request, ChannelContextOptions):
    """The recent threads of a channel, rendered as a prompt-ready text block."""

    type: Literal["channel_context"]


class HistoryOptions(ConversationSource):
    """The options of a history block (reusable by a request that embeds one)."""

    channel_id: Id | None = Field(None, description="History of this channel (stored messages).")
    user_id: Id | None = Field(None, description="History of this user (stored messages, all channels unless "
                                                 "channel_id is given too).")
    full_count: StrictInt = Field(5, ge=0, description="Newest messages kept in full.")
    mid_count: StrictInt = Field(10, ge=0, description="Next older messages, cut to mid_words.")
    mid_words: StrictInt = Field(32, ge=1)
    short_count: StrictInt = Field(15, ge=0, description="Next older messages, cut to short_words.")
    short_words: StrictInt = Field(8, ge=1)

    @model_validator(mode="after")
    def _one_source(self) -> "HistoryOptions":
        stored = self.channel_id is not None or self.user_id is not None
        if stored and self.messages is not None:
            raise ValueError("give either `channel_id`/`user_id` (stored messages) or `messages` (inline), not both")
        if not stored and self.messages is None:
            raise ValueError("give `channel_id` and/or `user_id` (stored messages) or `messages` (inline)")
        if self.full_count + self.mid_count + self.short_count == 0:
            raise ValueError("full_count + mid_count + short_count must be at least 1")
        return self


class HistoryRequest(_Request, HistoryOptions):
    """A compressed recent history of a channel or a user, oldest first."""

    type: Literal["history"]


ContextRequest.model_rebuild()  # its `channel` and `history` options are defined after it


Request = Annotated[
    Union[StoreRequest, QueryRequest, CleanupRequest, DeleteRequest, ForgetUserRequest, StatsRequest,
          PingRequest, ShutdownRequest, ChannelContextRequest, HistoryRequest, RememberRequest, ExtractInlineRequest,
          MemoryInstructionsRequest, ResolveRequest, FactsRequest, RecallRequest, FactHistoryRequest,
          UpdateFactRequest, ForgetFactRequest, ContextRequest, SyncRequest],
    Field(discriminator="type"),
]
REQUEST_MODELS: dict[str, type[_Request]] = {
    m.model_fields["type"].annotation.__args__[0]: m  # type: ignore[union-attr]
    for m in (StoreRequest, QueryRequest, CleanupRequest, DeleteRequest, ForgetUserRequest, StatsRequest,
              PingRequest, ShutdownRequest, ChannelContextRequest, HistoryRequest, RememberRequest,
              ExtractInlineRequest, MemoryInstructionsRequest, ResolveRequest, FactsRequest, RecallRequest,
              FactHistoryRequest, UpdateFactRequest, ForgetFactRequest, ContextRequest, SyncRequest)
}


# ---------------------------------------------------------------- responses


class _Response(_Model):
    request_id: RequestId = None


class OkResponse(_Response):
    """Success. `id`/`ids` for store, `deleted` for cleanup/delete/forget_user/forget_fact."""

    type: Literal["ok"] = "ok"
    id: str | None = None
    ids: list[str] | None = None
    deleted: int | None = None
    facts_deleted: int | None = Field(None, description="forget_user: facts deleted with the messages.")


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
    facts: int | None = Field(None, description="Active facts.")
    cache: dict[str, int] = Field(default_factory=dict, description="The in-memory query cache: `users` held, "
                                  "`bytes` used, `budget_bytes` (--cache-mb).")
    extraction: dict[str, int] | None = Field(None, description="Background extraction (with an LLM): "
                                              "pending, done, failed, dropped.")
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


class ChannelContextResponse(_Response):
    """`block` is the rendered text ("" when nothing remains or the user opted out)."""

    type: Literal["channel_context"] = "channel_context"
    block: str
    threads: int = Field(description="Threads shown.")
    messages: int = Field(description="Messages shown.")
    opted_out: bool = Field(description="The user's text carried the opt-out marker.")


class HistoryResponse(_Response):
    """`block` is the rendered text ("" when there is no message or the user opted out)."""

    type: Literal["history"] = "history"
    block: str
    messages: int = Field(description="Messages shown.")
    opted_out: bool = Field(description="The user's text carried the opt-out marker.")


class FactOut(_Model):
    id: str
    user_id: str
    username: str | None = None
    text: str
    category: str
    source: str
    confidence: float
    message_id: str | None = None
    created_at: int = Field(description="Unix seconds.")
    updated_at: int = Field(description="Unix seconds: last change or confirmation.")
    active: bool
    superseded_by: str | None = Field(None, description="The fact that replaced or absorbed this one.")
    superseded_at: int | None = None
    superseded_reason: str | None = Field(None, description="invalidated or merged.")
    similarity: float | None = Field(None, description="Cosine similarity to the request's text or new fact.")


class DecisionOut(_Model):
    candidate_id: str
    action: Literal["KEEP", "INVALIDATE", "MERGE"]
    decided_by: Literal["llm", "host", "rule"]
    merged_text: str | None = None
    reason: str | None = None


class Consolidation(_Model):
    """What became of one new fact."""

    action: Literal["added", "duplicate", "merged"] = Field(
        description="added: stored (see candidates/decisions); duplicate: nothing new stored, `fact` is the "
                    "existing fact, confirmed; merged: combined into an existing fact, which `fact` is.")
    fact: FactOut
    candidates: list[FactOut] = Field(default_factory=list,
                                      description="Similar active facts awaiting the host's `resolve`.")
    decisions: list[DecisionOut] = Field(default_factory=list, description="Decisions already applied.")
    llm_error: str | None = Field(None, description="Why the LLM could not decide (the host decides instead).")


class RememberedResponse(_Response, Consolidation):
    type: Literal["remembered"] = "remembered"


class RejectedTag(_Model):
    tag: str = Field(description="The removed text (capped at 200 characters).")
    reason: Literal["missing_category", "unknown_category", "empty", "too_long", "nested", "unclosed",
                    "unterminated", "unmatched_close", "self_closing"]
    message: str


class ExtractedResponse(_Response):
    type: Literal["extracted"] = "extracted"
    reply: str = Field(description="The reply with every memory tag removed.")
    facts: list[Consolidation]
    rejected: list[RejectedTag]


class InstructionsResponse(_Response):
    type: Literal["instructions"] = "instructions"
    text: str
    categories: list[str]


class ResolvedResponse(_Response):
    type: Literal["resolved"] = "resolved"
    action: Literal["KEEP", "INVALIDATE", "MERGE"]
    fact: FactOut = Field(description="The new fact after the decision.")
    candidate: FactOut = Field(description="The candidate after the decision.")


class FactsResponse(_Response):
    type: Literal["facts"] = "facts"
    facts: list[FactOut]


class UserFacts(_Model):
    user_id: str
    username: str | None = None
    facts: list[FactOut]


class RecallResponse(_Response):
    type: Literal["recall"] = "recall"
    users: list[UserFacts] = Field(description="In the order of the request's `users`.")


class FactEventOut(_Model):
    at: float = Field(description="Unix seconds.")
    action: Literal["created", "confirmed", "kept", "replaced", "invalidated", "merged", "merged_into", "updated"]
    text: str | None = Field(None, description="The fact's text after the event.")
    previous_text: str | None = None
    other_fact_id: str | None = None
    decided_by: str | None = Field(None, description="rule, llm, host, or the new fact's source for `created`.")
    reason: str | None = None


class FactHistoryResponse(_Response):
    type: Literal["fact_history"] = "fact_history"
    fact: FactOut
    events: list[FactEventOut] = Field(description="Oldest first.")


class FactResponse(_Response):
    type: Literal["fact"] = "fact"
    fact: FactOut


class ContextResponse(_Response):
    type: Literal["context"] = "context"
    format: Literal["xml", "markdown"]
    text: str = Field(description="The block to paste into a system prompt; empty when there is nothing.")
    facts: int = Field(description="How many facts the block shows.")
    channel_block: str | None = Field(None, description="With `channel`: the channel_context block.")
    history_block: str | None = Field(None, description="With `history`: the history block.")
    opted_out: bool = Field(False, description="The request's text carried the opt-out marker: every block is empty.")


class SyncedResponse(_Response):
    type: Literal["synced"] = "synced"
    pending: int = Field(description="Jobs still queued or running (0 unless the timeout passed).")
    done: int = Field(description="Extraction jobs finished since start-up.")
    failed: int = Field(description="Extraction jobs given up after their retries since start-up.")


class ErrorResponse(_Response):
    type: Literal["error"] = "error"
    code: str = Field(description="Stable snake_case code; see the README's error table.")
    message: str


Response = Union[ReadyResponse, OkResponse, ResultsResponse, StatsResponse, PongResponse, ChannelContextResponse,
                 HistoryResponse, RememberedResponse, ExtractedResponse, InstructionsResponse, ResolvedResponse,
                 FactsResponse, RecallResponse, FactHistoryResponse, FactResponse, ContextResponse, SyncedResponse,
                 ErrorResponse]


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
