"""Wire models of conversation context: channel_context, history, and the combined `context` block."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from .base import (
    MIN_SCORE,
    MIN_SCORE_DESCRIPTION,
    MODE_DESCRIPTION,
    AsOf,
    Fraction,
    Id,
    Number,
    RequestBase,
    ResponseBase,
    SearchMode,
    Timestamp,
    UserMap,
    WireModel,
)


class ContextMessageIn(WireModel):
    """A message sent inline (stateless mode). Unlike `store`, empty content is allowed (it is skipped)."""

    user_id: Id
    content: StrictStr
    is_bot: StrictBool = False
    timestamp: Timestamp | None = Field(
        None, description="Unix seconds. Give it on every message or on none (then the list order is oldest first)."
    )
    message_id: Id | None = None
    reply_to: Id | None = Field(None, description="message_id this message replies to.")
    username: StrictStr | None = Field(None, description="Display name of the author.")


class ConversationSource(WireModel):
    """Where the messages come from and how speakers are named (shared by channel_context and history)."""

    messages: list[ContextMessageIn] | None = Field(
        None, description="Stateless mode: the messages themselves, instead of reading them from the store."
    )
    before_message_id: Id | None = Field(
        None, description="Only messages before this one (by message_id); default: the newest."
    )
    before: Timestamp | None = Field(None, description="Only messages with timestamp < before.")
    exclude_ids: list[Id] = Field(default_factory=list, description="message_ids to leave out.")
    bot_user_id: Id | None = Field(
        None, description="The bot's own user_id; default: messages flagged is_bot are the bot's."
    )
    bot_name: StrictStr | None = Field(None, description="Label of the bot's own messages.")
    text: StrictStr | None = Field(
        None, description="The user's current message; if it contains the opt-out marker, the block is empty."
    )

    @model_validator(mode="after")
    def _inline_timestamps(self) -> ConversationSource:
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
    exclude_reply_chain_of: Id | None = Field(
        None, description="Leave out this message and every message it replies to, transitively."
    )

    @model_validator(mode="after")
    def _one_source(self) -> ChannelContextOptions:
        if self.channel_id is not None and self.messages is not None:
            raise ValueError("give either `channel_id` (stored messages) or `messages` (inline), not both")
        if self.channel_id is None and self.messages is None:
            raise ValueError("give `channel_id` (stored messages) or `messages` (inline)")
        return self


class ChannelContextRequest(RequestBase, ChannelContextOptions):
    """The recent threads of a channel, rendered as a prompt-ready text block."""

    type: Literal["channel_context"]


class HistoryOptions(ConversationSource):
    """The options of a history block (reusable by a request that embeds one)."""

    channel_id: Id | None = Field(None, description="History of this channel (stored messages).")
    user_id: Id | None = Field(
        None, description="History of this user (stored messages, all channels unless channel_id is given too)."
    )
    full_count: StrictInt = Field(5, ge=0, description="Newest messages kept in full.")
    mid_count: StrictInt = Field(10, ge=0, description="Next older messages, cut to mid_words.")
    mid_words: StrictInt = Field(32, ge=1)
    short_count: StrictInt = Field(15, ge=0, description="Next older messages, cut to short_words.")
    short_words: StrictInt = Field(8, ge=1)

    @model_validator(mode="after")
    def _one_source(self) -> HistoryOptions:
        stored = self.channel_id is not None or self.user_id is not None
        if stored and self.messages is not None:
            raise ValueError("give either `channel_id`/`user_id` (stored messages) or `messages` (inline), not both")
        if not stored and self.messages is None:
            raise ValueError("give `channel_id` and/or `user_id` (stored messages) or `messages` (inline)")
        if self.full_count + self.mid_count + self.short_count == 0:
            raise ValueError("full_count + mid_count + short_count must be at least 1")
        return self


class HistoryRequest(RequestBase, HistoryOptions):
    """A compressed recent history of a channel or a user, oldest first."""

    type: Literal["history"]


ContextSection = Literal["facts", "now", "memories"]
CONTEXT_SECTIONS: tuple[ContextSection, ...] = ("facts", "now", "memories")
# `context`'s relevant memories: a stored message shows at this cosine to the request's text or above
# (`python scripts/bench.py locomo --memory-floor`: docs/facts.md, "Why 0.40 for memories")
MEMORY_FLOOR = 0.4


class ContextRequest(RequestBase):
    """A prompt-ready block for a message and the users involved: their facts, what is true now (current
    relations from graph memory, with the month each was first stated) and the stored memories relevant to `text`; with
    `channel` and/or `history`, the channel block and the history block in the same answer. A `text`
    carrying the opt-out marker empties every block."""

    type: Literal["context"]
    format: Literal["xml", "markdown"] = "xml"
    text: StrictStr | None = Field(
        None, description="The message being answered; ranks facts by relevance and finds the relevant memories."
    )
    include: list[ContextSection] = Field(
        default_factory=lambda: list(CONTEXT_SECTIONS),
        description="The sections of `text`: `facts`; `now`, what is true now (the users' current relations, "
        "needs graph memory); `memories`, the stored messages most relevant to `text`. Facts only: "
        '["facts"].',
    )
    now_limit: StrictInt = Field(5, ge=0, le=50, description="`now`: current relations per user at most.")
    memories_limit: StrictInt = Field(3, ge=0, le=20, description="`memories`: memories per user at most.")
    memories_words: StrictInt = Field(
        120,
        ge=10,
        le=2000,
        description="`memories`: word budget of all memory lines together (each is cut to its share).",
    )
    memories_min_similarity: Number = Field(
        MEMORY_FLOOR, ge=-1, le=1, description="`memories`: the least cosine similarity to `text` shown."
    )
    memories_min_score: Fraction = Field(MIN_SCORE, description="`memories`: " + MIN_SCORE_DESCRIPTION)
    users: UserMap | None = None
    user_id: Id | None = Field(None, description="Shorthand for one user (with `username`).")
    username: StrictStr | None = None
    limit: StrictInt = Field(10, ge=1, description="xml: facts per user.")
    preferences_limit: StrictInt = Field(10, ge=0, description="markdown: most recent preferences.")
    relevant_limit: StrictInt = Field(10, ge=0, description="markdown: most relevant other facts.")
    min_similarity: Number | None = Field(None, ge=-1, le=1, description="Drop relevant facts below this.")
    mode: SearchMode = Field("hybrid", description="How facts are ranked for `text`: " + MODE_DESCRIPTION)
    channel: ChannelContextOptions | None = Field(
        None, description="Also render the channel block (the options of `channel_context`)."
    )
    related: StrictInt = Field(
        0,
        ge=0,
        le=20,
        description="With `text` and graph memory: also render a "
        '"related memories" block of this many traces per user recalled by the text.',
    )
    related_words: StrictInt = Field(120, ge=10, le=2000, description="Word budget of the related-memories block.")
    history: HistoryOptions | None = Field(
        None, description="Also render the history block (the options of `history`)."
    )
    as_of: AsOf | None = Field(
        None,
        description="The facts block as of this time (unix seconds): facts active then, what was true then (the "
        "relations valid then, under `<true_then>` / `### True Then`), memories stored by then; a time in the future "
        "answers as now. The channel and history blocks are not changed by it.",
    )

    @model_validator(mode="after")
    def _who(self) -> ContextRequest:
        if (self.users is None) == (self.user_id is None):
            raise ValueError("give either `users` or `user_id`")
        return self

    def user_map(self) -> dict[str, str | None]:
        return self.users if self.users is not None else {self.user_id: self.username}  # type: ignore[dict-item]


class ChannelContextResponse(ResponseBase):
    """`block` is the rendered text ("" when nothing remains or the user opted out)."""

    type: Literal["channel_context"] = "channel_context"
    block: str
    threads: int = Field(description="Threads shown.")
    messages: int = Field(description="Messages shown.")
    opted_out: bool = Field(description="The user's text carried the opt-out marker.")


class HistoryResponse(ResponseBase):
    """`block` is the rendered text ("" when there is no message or the user opted out)."""

    type: Literal["history"] = "history"
    block: str
    messages: int = Field(description="Messages shown.")
    opted_out: bool = Field(description="The user's text carried the opt-out marker.")


class ContextResponse(ResponseBase):
    type: Literal["context"] = "context"
    format: Literal["xml", "markdown"]
    text: str = Field(description="The block to paste into a system prompt; empty when there is nothing.")
    facts: int = Field(description="How many facts the block shows.")
    relations: int = Field(description="How many current relations its `now` section shows.")
    memories: int = Field(description="How many memories its `memories` section shows.")
    channel_block: str | None = Field(None, description="With `channel`: the channel_context block.")
    history_block: str | None = Field(None, description="With `history`: the history block.")
    related_block: str | None = Field(None, description="With `related`: traces recalled by `text`, compressed.")
    opted_out: bool = Field(False, description="The request's text carried the opt-out marker: every block is empty.")
