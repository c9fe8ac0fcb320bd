"""Wire models of the messages domain: store, query, cleanup, delete, forget_user."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from .base import (
    MIN_SCORE,
    MIN_SCORE_DESCRIPTION,
    MODE_DESCRIPTION,
    SCOPE,
    Fraction,
    Id,
    Number,
    RequestBase,
    ResponseBase,
    Timestamp,
    WireModel,
    check_window,
)


class MessageIn(WireModel):
    user_id: Id
    content: StrictStr = Field(description="The message text; must not be blank.")
    is_bot: StrictBool = False
    timestamp: Timestamp | None = Field(None, description="Unix seconds; default: now.")
    message_id: Id | None = None
    channel_id: Id | None = None
    reply_to: Id | None = Field(None, description="message_id this message replies to.")
    username: StrictStr | None = Field(None, description="Display name of the author.")

    @model_validator(mode="after")
    def _content_not_blank(self) -> MessageIn:
        if not self.content.strip():
            raise ValueError("content must not be empty")
        return self


class StoreRequest(RequestBase):
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
    extract: StrictBool | None = Field(
        None,
        description="Queue background fact extraction for the stored "
        "messages (needs an LLM endpoint). Default: --llm-extract.",
    )

    @model_validator(mode="after")
    def _one_form(self) -> StoreRequest:
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


class QueryRequest(RequestBase):
    """Search over one user's memories, best first."""

    type: Literal["query"]
    user_id: Id
    text: StrictStr
    limit: StrictInt = Field(5, ge=1)
    min_similarity: Number | None = Field(None, ge=-1, le=1)
    min_score: Fraction = Field(
        MIN_SCORE,
        description=MIN_SCORE_DESCRIPTION + " The floor applies in modes hybrid and semantic; in keyword mode every "
        "result shares a term with the text and in graph mode results come by association, so there only small "
        "talk is dropped.",
    )
    include_bot: StrictBool = True
    since: Timestamp | None = Field(None, description="Only memories with timestamp >= since.")
    until: Timestamp | None = Field(None, description="Only memories with timestamp <= until.")
    username: StrictStr | None = Field(None, description="Upserts the user's display name.")
    mode: Literal["semantic", "keyword", "hybrid", "graph"] = Field(
        "hybrid",
        description=MODE_DESCRIPTION + " graph: episodes ranked by spreading activation over the user's "
        "memory graph (graph memory on).",
    )

    @model_validator(mode="after")
    def _text_not_blank(self) -> QueryRequest:
        if not self.text.strip():
            raise ValueError("text must not be empty")
        check_window(self.since, self.until)
        return self


class CleanupRequest(RequestBase):
    """Delete memories older than ttl_days (one user's when user_id is given), then compact."""

    type: Literal["cleanup"]
    ttl_days: Number | None = Field(None, gt=0, description="Default: the configured --ttl-days.")
    user_id: Id | None = None


class DeleteRequest(RequestBase):
    type: Literal["delete"]
    id: Id
    user_id: Id | None = Field(None, description=SCOPE)


class ForgetUserRequest(RequestBase):
    type: Literal["forget_user"]
    user_id: Id


class Tombstone(WireModel):
    """What forgetting leaves behind, and all it keeps: what was forgotten and when. An import skips what a
    tombstone covers (unless asked to restore it); an export carries them."""

    of: Literal["user", "memory"]
    id: str = Field(description="The user id or the memory id.")
    at: int = Field(description="When it was forgotten (unix seconds).")


class Removed(WireModel):
    """forget_user: what left each store."""

    memories: int
    facts: int = Field(description="Facts (with their history); 0 when none were kept.")
    graph_episodes: int = Field(
        description="Graph episodes (with their entities, relations and traces); 0 with graph memory off."
    )
    chunks: int = Field(description="Long memories' chunk vectors.")


class OkResponse(ResponseBase):
    """Success. `id`/`ids` for store, `deleted` for cleanup/delete/forget_user/forget_fact."""

    type: Literal["ok"] = "ok"
    id: str | None = None
    ids: list[str] | None = None
    deleted: int | None = None
    facts_deleted: int | None = Field(None, description="forget_user: facts deleted with the messages.")
    graph_episodes_deleted: int | None = Field(
        None, description="forget_user: graph episodes deleted (with their entities, relations and traces)."
    )
    removed: Removed | None = Field(None, description="forget_user: what left each store.")
    tombstone: Tombstone | None = Field(
        None, description="forget_user, delete: the tombstone written (an import will not bring it back)."
    )
    expires_at: int | list[int | None] | None = Field(
        None,
        description="store: when the memory expires (unix seconds: its timestamp plus --ttl-days), null when "
        "expiry is off (--ttl-days 0); the batch form gives one per id, in the same order.",
    )
    redacted: int | None = Field(
        None,
        description="store: how many secrets in the stored text were replaced by a placeholder such as "
        "`[redacted: openai key]` (never what they were; 0: none; --redact).",
    )
    note: str | None = Field(
        None,
        description="store: set when a memory's timestamp is already past the expiry: it is stored, and deleted "
        "at the next automatic cleanup unless the sidecar runs with a larger --ttl-days (or 0).",
    )

    KEEP_NULL: ClassVar[frozenset[str]] = frozenset({"expires_at"})


class Superseded(WireModel):
    """A later memory of the same user replaced what this one says ("I live in Berlin", then "moved to Lisbon")."""

    id: str = Field(
        description="The memory that replaced it (the next one of its chain: what replaced that may be later still)."
    )
    at: int = Field(description="When that memory was said: unix seconds (whole seconds).")


class MessageOut(WireModel):
    id: str
    content: str
    score: float = Field(
        description=(
            "The score the results are ranked by, best first (a host that filters or re-sorts by it keeps the same "
            "order): semantic, the cosine similarity; keyword, BM25; hybrid (the default), the weighted "
            "reciprocal-rank fusion of the semantic and keyword rankings (with a query naming a time, fused once "
            "more with the ranking inside that time); graph, cosine and activation blended. Comparable within "
            "one answer only."
        )
    )
    similarity: float = Field(
        description="The cosine similarity of the memory (its best chunk, for a long one) "
        "to the query, whatever the mode ranked by."
    )
    timestamp: int = Field(description="Unix seconds (whole seconds).")
    is_bot: bool
    user_id: str
    username: str | None = None
    message_id: str | None = None
    channel_id: str | None = None
    reply_to: str | None = None
    span: list[int] | None = Field(
        None,
        min_length=2,
        max_length=2,
        description=(
            "A long memory (past the model's 256-token window, embedded in overlapping chunks): the [start, end) "
            "character offsets (Unicode code points) in `content` of the chunk that matched best; absent for "
            "shorter memories and for keyword-only matches."
        ),
    )
    superseded: Superseded | None = Field(
        None,
        description=(
            "Present when a later memory replaced what this one says (a relation it stated was closed by a later "
            "one in graph memory): this memory is history, no longer true. In the default (hybrid) and graph modes, "
            'unless the query asks about the past ("before", "used to", "in 2024", ...), the current memory '
            "is returned too and ranked above it."
        ),
    )


class ResultsResponse(ResponseBase):
    type: Literal["results"] = "results"
    messages: list[MessageOut]
