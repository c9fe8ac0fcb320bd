"""The `channel_context` and `history` commands: fetch a window of messages (from the store or
inline), then hand it to the pure logic of `conversation.py`.

Kept apart from `service.py` (the memory rules) so that a `context` command can call
`channel_block` and `history_block` with the same options and embed their blocks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from ..messages import (
    MessageReader,
    Replaced,
    Supersession,
    content_over_limit,
    drop_padding,
    padding_fetch,
    supersede,
)
from ..storage import sql_num, sql_str
from ..wire import (
    ChannelContextOptions,
    ChannelContextResponse,
    ContextRequest,
    ContextResponse,
    ConversationSource,
    HistoryOptions,
    HistoryResponse,
)
from ..wire.base import MIN_SCORE
from ..wire.conversation import MEMORY_FLOOR
from ..wire.errors import InvalidRequest, NotFound, TooLarge, quote
from . import threads as conv

log = logging.getLogger("sidecar.conversation")


@dataclass(frozen=True)
class ChannelBlock:
    block: str
    threads: int
    messages: int
    opted_out: bool = False
    shown: frozenset[str] = frozenset()  # the texts of the messages it shows (threads.normal)


@dataclass(frozen=True)
class HistoryBlock:
    block: str
    messages: int
    opted_out: bool = False
    shown: frozenset[str] = frozenset()


class ConversationService:
    def __init__(
        self,
        store: MessageReader,
        *,
        opt_out_marker: str | None = conv.DEFAULT_OPT_OUT_MARKER,
        max_window: int = 1_000,
        max_content_bytes: int = 1_000_000,
        max_content_chars: int | None = None,
        supersession: Supersession | None = None,
    ):
        self.store = store
        self.supersession = supersession  # which memories a later one replaced (messages/supersession.py)
        self.opt_out_marker = opt_out_marker
        self.max_window = max_window
        self.max_content_bytes = max_content_bytes
        self.max_content_chars = max_content_chars

    # ------------------------------------------------------------------ commands

    def channel_context(self, req: ChannelContextOptions) -> ChannelContextResponse:
        b = self.channel_block(req)
        return ChannelContextResponse(block=b.block, threads=b.threads, messages=b.messages, opted_out=b.opted_out)

    def history(self, req: HistoryOptions) -> HistoryResponse:
        b = self.history_block(req)
        return HistoryResponse(block=b.block, messages=b.messages, opted_out=b.opted_out)

    def context(
        self,
        req: ContextRequest,
        facts_context: Callable[[ContextRequest, Callable[..., dict[str, list[conv.Memory]]]], ContextResponse],
    ) -> ContextResponse:
        """`context` with its optional channel and history blocks. The opt-out marker in the request's
        text empties every block, facts included: the user asked for no background context. The facts block
        is handed `memories` (its relevant memories), which leaves out what the channel and history blocks
        already show."""
        if conv.opted_out(req.text, self.opt_out_marker):
            return ContextResponse(
                format=req.format,
                text="",
                facts=0,
                relations=0,
                memories=0,
                opted_out=True,
                channel_block="" if req.channel is not None else None,
                history_block="" if req.history is not None else None,
            )
        channel = self.channel_block(req.channel) if req.channel is not None else None
        history = self.history_block(req.history) if req.history is not None else None
        shown = (channel.shown if channel else frozenset()) | (history.shown if history else frozenset())
        out = facts_context(req, partial(self.memories, exclude=shown))
        if channel is not None:
            out.channel_block = channel.block
        if history is not None:
            out.history_block = history.block
        return out

    # ------------------------------------------------------------------ memories

    def memories(
        self,
        users: dict[str, str],
        text: str,
        vector: Any,
        limit: int,
        words: int,
        floor: float = MEMORY_FLOOR,
        min_score: float = MIN_SCORE,
        as_of: float | None = None,
        exclude: frozenset[str] = frozenset(),
    ) -> dict[str, list[conv.Memory]]:
        """`context`'s relevant memories: each user's stored messages most relevant to `text` (the hybrid
        ranking of `query`), at `floor` cosine or above, at most `limit` per user, the message being answered
        (the same text) and those `exclude` names (texts the channel and history blocks show) left out, and no
        padding (`query`'s step at `min_score`: no small talk, nothing below it that shares no term); each
        cut to its share of `words`, the budget of them all. `users`: id -> the name their own messages are
        labelled with when stored without a username. `as_of`: only memories said by then, and marked replaced only
        by a memory said by then."""
        if limit <= 0 or not text.strip():
            return {}
        found: dict[str, list[dict[str, Any]]] = {}
        skip = exclude | {"", conv.normal(text)}
        for uid in users:
            size = padding_fetch(limit + 1 + min(len(exclude), limit), min_score)
            rows = self.store.search(vector, uid, size, until=as_of, text=text, mode="hybrid")
            rows = drop_padding(rows, text, min_score)
            kept = [r for r in rows if r["similarity"] >= floor and conv.normal(r["content"]) not in skip]
            if kept:
                found[uid] = self._supersede(uid, text, vector, kept, skip, limit, as_of)[:limit]
        return conv.memory_lines(found, users, words)

    def _supersede(
        self,
        user_id: str,
        text: str,
        vector: Any,
        rows: list[dict[str, Any]],
        skip: frozenset[str],
        limit: int,
        as_of: float | None = None,
    ) -> list[dict[str, Any]]:
        """What is true now, first, as `query` does it (messages/supersession.py): a replaced memory is marked
        (its line says "outdated") and, unless the text asks about the past, the current memory of its chain is
        shown too, above it. `as_of`: what was true then (replaced by a memory said by then; a current memory
        said by then)."""

        def heads_of(ids: list[str]) -> dict[str, dict[str, Any]]:
            found, vectors = self.store.embedded(ids, user_id)
            return {
                r["id"]: {**r, "similarity": float(v @ vector)}
                for r, v in zip(found, vectors)
                if r["user_id"] == user_id
                and conv.normal(r["content"]) not in skip
                and (as_of is None or r["timestamp"] <= as_of)
            }

        supersession: Supersession | None = self.supersession
        if as_of is not None and supersession is not None:
            known = supersession

            def then(user_id: str, ids: list[str]) -> dict[str, Replaced]:
                return {i: r for i, r in known(user_id, ids).items() if r.at <= as_of}

            supersession = then
        now = time.time() if as_of is None else min(time.time(), as_of)
        return supersede(rows, supersession, user_id, text, now, heads_of, limit, lift=("score", "similarity"))

    # ------------------------------------------------------------------ blocks

    def channel_block(self, opts: ChannelContextOptions) -> ChannelBlock:
        if conv.opted_out(opts.text, self.opt_out_marker):
            return ChannelBlock("", 0, 0, opted_out=True)
        self._check_size(opts.limit, "limit", opts)
        if opts.channel_id is not None:
            where = f"channel_id = {sql_str(opts.channel_id)}"
            window = self._stored_window(where, opts.limit, opts)
            lookup = self._stored_lookup(where, window)
        else:
            everything = self._inline(opts)
            window = self._inline_window(everything, opts.limit, opts)
            by_mid = {m.message_id: m for m in everything if m.message_id is not None}
            lookup = by_mid.get
        excluded = set(opts.exclude_ids)
        if opts.exclude_reply_chain_of is not None:
            excluded |= conv.reply_chain(opts.exclude_reply_chain_of, lookup, max_length=self.max_window)
        threads = conv.channel_threads(window, exclude_ids=excluded, max_threads=opts.max_threads)
        speakers = conv.Speakers(opts.bot_user_id, opts.bot_name)
        log.debug(
            "channel_context: window of %d messages, %d excluded ids, %d threads shown",
            len(window),
            len(excluded),
            len(threads),
        )
        return ChannelBlock(
            conv.render_channel_block(threads, speakers),
            len(threads),
            sum(len(t.messages) for t in threads),
            shown=frozenset(conv.normal(m.content) for t in threads for m in t.messages),
        )

    def history_block(self, opts: HistoryOptions) -> HistoryBlock:
        if conv.opted_out(opts.text, self.opt_out_marker):
            return HistoryBlock("", 0, opted_out=True)
        tiers = conv.Tiers(opts.full_count, opts.mid_count, opts.mid_words, opts.short_count, opts.short_words)
        self._check_size(tiers.total, "full_count + mid_count + short_count", opts)
        # read enough that excluded messages do not shorten the history
        size = tiers.total + len(set(opts.exclude_ids))
        if opts.messages is None:
            clauses = []
            if opts.user_id is not None:
                clauses.append(f"user_id = {sql_str(opts.user_id)}")
            if opts.channel_id is not None:
                clauses.append(f"channel_id = {sql_str(opts.channel_id)}")
            window = self._stored_window(" AND ".join(clauses), size, opts)
        else:
            window = self._inline_window(self._inline(opts), size, opts)
        lines = conv.history_lines(
            window, tiers, conv.Speakers(opts.bot_user_id, opts.bot_name), exclude_ids=opts.exclude_ids
        )
        log.debug("history: window of %d messages, %d shown", len(window), len(lines))
        kept = conv.history_kept(window, tiers, exclude_ids=opts.exclude_ids)
        shown = frozenset(conv.normal(m.content) for m in kept)
        return HistoryBlock(conv.render_history_block(lines), len(lines), shown=shown)

    # ------------------------------------------------------------------ windows

    def _check_size(self, n: int, what: str, opts: ConversationSource) -> None:
        if n > self.max_window:
            raise TooLarge(f"{what} {n} is over the maximum window of {self.max_window} messages (--max-window)")
        if opts.messages is not None:
            if len(opts.messages) > self.max_window:
                raise TooLarge(
                    f"{len(opts.messages)} inline messages are over the maximum window of "
                    f"{self.max_window} (--max-window)"
                )
            for i, m in enumerate(opts.messages):
                over = content_over_limit(m.content, self.max_content_bytes, self.max_content_chars)
                if over is not None:
                    raise TooLarge(f"messages[{i}]: {over}")

    def _stored_window(self, scope: str, limit: int, opts: ConversationSource) -> list[conv.Msg]:
        """The last `limit` stored messages matching `scope` (and `before`, `before_message_id`),
        chronological, deduplicated by message_id."""
        where = scope if opts.before is None else f"{scope} AND timestamp < {sql_num(opts.before)}"
        if opts.before_message_id is None:
            msgs = [conv.Msg.from_row(r) for r in self.store.latest(where, limit)]
        else:
            found = self.store.rows(f"{scope} AND message_id = {sql_str(opts.before_message_id)}")
            if not found:
                raise NotFound(
                    f"no stored message with message_id {quote(opts.before_message_id)} in this "
                    f"{'channel' if 'channel_id' in scope else 'history'} (before_message_id)"
                )
            anchor = max((conv.Msg.from_row(r) for r in found), key=conv.order_key)
            ts = sql_num(anchor.timestamp)  # type: ignore[arg-type]
            older = self.store.latest(f"{where} AND timestamp < {ts}", limit)
            same = (conv.Msg.from_row(r) for r in self.store.rows(f"{where} AND timestamp = {ts}"))
            msgs = [conv.Msg.from_row(r) for r in older] + [
                m for m in same if conv.order_key(m) < conv.order_key(anchor)
            ]
        msgs = conv.chronological(msgs)
        return conv.dedupe(msgs[max(0, len(msgs) - limit) :])

    def _stored_lookup(self, where: str, window: list[conv.Msg]) -> Callable[[str], conv.Msg | None]:
        """message_id -> message, for following a reply chain: the window first, then the store. A stored
        message older than the window ends the walk (whatever it replies to is older still)."""
        in_window = {m.message_id: m for m in window if m.message_id is not None}
        oldest = conv.order_key(window[0]) if window else None

        def lookup(message_id: str) -> conv.Msg | None:
            if message_id in in_window:
                return in_window[message_id]
            rows = self.store.rows(f"{where} AND message_id = {sql_str(message_id)}")
            if not rows:
                return None
            m = max((conv.Msg.from_row(r) for r in rows), key=conv.order_key)
            return None if oldest is None or conv.order_key(m) < oldest else m

        return lookup

    def _inline(self, opts: ConversationSource) -> list[conv.Msg]:
        """Inline messages in chronological order (by timestamp when given, else as listed), deduplicated."""
        assert opts.messages is not None
        msgs = [conv.Msg.from_row({**m.model_dump(), "id": str(i)}) for i, m in enumerate(opts.messages)]
        if msgs and msgs[0].timestamp is not None:
            # stable: equal timestamps keep the list order; the request has a timestamp on all messages or none
            msgs.sort(key=lambda m: cast(float, m.timestamp))
        return conv.dedupe(msgs)

    def _inline_window(self, msgs: list[conv.Msg], limit: int, opts: ConversationSource) -> list[conv.Msg]:
        if opts.before_message_id is not None:
            earlier = conv.window_before(msgs, len(msgs), opts.before_message_id)
            if earlier is None:
                raise NotFound(f"no inline message has message_id {quote(opts.before_message_id)} (before_message_id)")
            msgs = earlier
        if opts.before is not None:
            if msgs and msgs[0].timestamp is None:
                raise InvalidRequest("`before` needs a `timestamp` on the inline messages")
            msgs = [m for m in msgs if m.timestamp is not None and m.timestamp < opts.before]
        return msgs[max(0, len(msgs) - limit) :]
