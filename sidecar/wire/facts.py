"""Wire models of the facts domain: remember, extract_inline, resolve, facts, recall, history, forget."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from .base import (
    MODE_DESCRIPTION,
    SCOPE,
    Action,
    AsOf,
    Fraction,
    Id,
    NonBlank,
    RequestBase,
    ResponseBase,
    SearchMode,
    UserMap,
    WireModel,
)


class RememberRequest(RequestBase):
    """Add one fact about a user, through consolidation."""

    type: Literal["remember"]
    user_id: Id
    text: NonBlank
    category: NonBlank = Field(description="One of the configured categories (--fact-categories).")
    username: StrictStr | None = None
    source: Literal["manual", "chat", "extraction"] = "manual"
    confidence: Fraction | None = Field(None, description="Default: 1.0 manual, 0.8 chat, 0.7 extraction.")
    message_id: Id | None = Field(None, description="The message the fact came from.")


class ExtractInlineRequest(RequestBase):
    """Save the <memory> tags of an LLM reply and return the reply without any memory tag."""

    type: Literal["extract_inline"]
    user_id: Id
    reply: StrictStr
    username: StrictStr | None = None
    message_id: Id | None = None


class MemoryInstructionsRequest(RequestBase):
    type: Literal["memory_instructions"]


class ResolveRequest(RequestBase):
    """The host's decision about one candidate listed by remember/extract_inline."""

    type: Literal["resolve"]
    fact_id: Id = Field(description="The new fact.")
    candidate_id: Id = Field(description="The existing fact it was compared with.")
    user_id: Id | None = Field(None, description=SCOPE)
    action: Action = Field(description="KEEP, INVALIDATE (the candidate) or MERGE (into the candidate).")
    merged_text: StrictStr | None = Field(None, description="Required for MERGE: the combined fact.")
    reason: StrictStr | None = None

    @model_validator(mode="after")
    def _merge_needs_text(self) -> ResolveRequest:
        if self.action == "MERGE" and not (self.merged_text or "").strip():
            raise ValueError("MERGE needs a non-empty merged_text")
        return self


class FactsRequest(RequestBase):
    """One user's facts: by relevance to `text`, else most recent first."""

    type: Literal["facts"]
    user_id: Id
    username: StrictStr | None = None
    text: StrictStr | None = None
    category: StrictStr | list[StrictStr] | None = None
    include_inactive: StrictBool = False
    limit: StrictInt = Field(20, ge=1)
    mode: SearchMode = Field("hybrid", description="With `text`: " + MODE_DESCRIPTION)
    as_of: AsOf | None = None


class RecallRequest(RequestBase):
    """Facts of several users at once (e.g. everyone in a reply chain)."""

    type: Literal["recall"]
    users: UserMap
    text: StrictStr | None = None
    category: StrictStr | list[StrictStr] | None = None
    limit: StrictInt = Field(5, ge=1, description="Per user.")
    mode: SearchMode = Field("hybrid", description="With `text`: " + MODE_DESCRIPTION)


class FactHistoryRequest(RequestBase):
    type: Literal["fact_history"]
    fact_id: Id
    user_id: Id | None = Field(None, description=SCOPE)


class UpdateFactRequest(RequestBase):
    """A correction: new text and/or category for an active fact (re-embedded, history kept)."""

    type: Literal["update_fact"]
    fact_id: Id
    user_id: Id | None = Field(None, description=SCOPE)
    text: NonBlank | None = None
    category: NonBlank | None = None
    reason: StrictStr | None = None

    @model_validator(mode="after")
    def _something(self) -> UpdateFactRequest:
        if self.text is None and self.category is None:
            raise ValueError("give `text`, `category` or both")
        return self


class ForgetFactRequest(RequestBase):
    """Delete one fact and its history for good."""

    type: Literal["forget_fact"]
    fact_id: Id
    user_id: Id | None = Field(None, description=SCOPE)


class FactOut(WireModel):
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


class DecisionOut(WireModel):
    candidate_id: str
    action: Literal["KEEP", "INVALIDATE", "MERGE"]
    decided_by: Literal["llm", "host", "rule"]
    merged_text: str | None = None
    reason: str | None = None


class Consolidation(WireModel):
    """What became of one new fact."""

    action: Literal["added", "duplicate", "merged"] = Field(
        description="added: stored (see candidates/decisions); duplicate: nothing new stored, `fact` is the "
        "existing fact, confirmed; merged: combined into an existing fact, which `fact` is."
    )
    fact: FactOut
    candidates: list[FactOut] = Field(
        default_factory=list, description="Similar active facts awaiting the host's `resolve`."
    )
    decisions: list[DecisionOut] = Field(default_factory=list, description="Decisions already applied.")
    llm_error: str | None = Field(None, description="Why the LLM could not decide (the host decides instead).")


class RememberedResponse(ResponseBase, Consolidation):
    type: Literal["remembered"] = "remembered"


class RejectedTag(WireModel):
    tag: str = Field(description="The removed text (capped at 200 characters).")
    reason: Literal[
        "missing_category",
        "unknown_category",
        "empty",
        "too_long",
        "nested",
        "unclosed",
        "unterminated",
        "unmatched_close",
        "self_closing",
    ]
    message: str


class ExtractedResponse(ResponseBase):
    type: Literal["extracted"] = "extracted"
    reply: str = Field(description="The reply with every memory tag removed.")
    facts: list[Consolidation]
    rejected: list[RejectedTag]


class InstructionsResponse(ResponseBase):
    type: Literal["instructions"] = "instructions"
    text: str
    categories: list[str]


class ResolvedResponse(ResponseBase):
    type: Literal["resolved"] = "resolved"
    action: Literal["KEEP", "INVALIDATE", "MERGE"]
    fact: FactOut = Field(description="The new fact after the decision.")
    candidate: FactOut = Field(description="The candidate after the decision.")


class FactsResponse(ResponseBase):
    type: Literal["facts"] = "facts"
    facts: list[FactOut]


class UserFacts(WireModel):
    user_id: str
    username: str | None = None
    facts: list[FactOut]


class RecallResponse(ResponseBase):
    type: Literal["recall"] = "recall"
    users: list[UserFacts] = Field(description="In the order of the request's `users`.")


class FactEventOut(WireModel):
    at: float = Field(description="Unix seconds.")
    action: Literal["created", "confirmed", "kept", "replaced", "invalidated", "merged", "merged_into", "updated"]
    text: str | None = Field(None, description="The fact's text after the event.")
    previous_text: str | None = None
    other_fact_id: str | None = None
    decided_by: str | None = Field(None, description="rule, llm, host, or the new fact's source for `created`.")
    reason: str | None = None


class FactHistoryResponse(ResponseBase):
    type: Literal["fact_history"] = "fact_history"
    fact: FactOut
    events: list[FactEventOut] = Field(description="Oldest first.")


class FactResponse(ResponseBase):
    type: Literal["fact"] = "fact"
    fact: FactOut
