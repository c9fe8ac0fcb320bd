"""Conversation context, as pure functions over simple message records: the thread forest of a
channel window, exclusion of ids and reply chains, the `[recent channel context]` block, the
compressed `[recent history]` block, and the opt-out marker.

No storage, no protocol: the callers (`conversation_service.py`, and later the `context` command)
fetch the messages and hand them over as `Msg` records in chronological order.

Rendering rules (byte for byte; the golden transcripts check them):

channel block::

    [recent channel context]

    thread (alice, bob):
      alice: how do I reset the router?
      bob: hold the button for 10 s

    standalone (carol):
      carol: lunch at noon?

- Lines are joined with "\\n"; there is no trailing newline. Nothing to show -> "" (no header alone).
- A message is two spaces, the speaker's label, ": ", the text. Text is stripped; a multi-line text
  keeps its lines, each further line indented by four spaces; blank lines inside a text are dropped.
- `thread (a, b):` lists the participants (distinct speakers) in order of first appearance among the
  shown messages; `standalone (a):` when one speaker wrote every shown message of the thread.

history block::

    [recent history]
    [2024-01-01T09:00Z] alice: first words of an older message, cut to…
    [2024-01-01T09:05Z] bot: the newest messages are kept in full

- One entry per message, oldest first: `[time] label: text` (an uncut multi-line text keeps its
  lines, indented as in the channel block; a cut text is one line), time in ISO-8601 UTC to the minute
  (`YYYY-MM-DDTHH:MMZ`, seconds dropped); without a timestamp the `[time] ` prefix is left out.
- A cut keeps the first N whitespace-separated words, joined by single spaces, followed by "…"
  (U+2026); it also keeps at most 10 * N characters (for text without spaces: CJK, long URLs),
  backing off to the last space in the second half of that budget. A text that has at most N
  words and 10 * N characters is not cut and gets no ellipsis.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

CHANNEL_HEADER = "[recent channel context]"
HISTORY_HEADER = "[recent history]"
ELLIPSIS = "…"
DEFAULT_OPT_OUT_MARKER = "🚫"
DEFAULT_BOT_LABEL = "bot"
CHARS_PER_WORD = 10  # a cut to N words also keeps at most 10 * N characters

_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class Msg:
    """One chat message, as far as conversation context needs it."""

    user_id: str
    content: str
    is_bot: bool = False
    timestamp: float | None = None
    message_id: str | None = None
    reply_to: str | None = None
    username: str | None = None
    id: str | None = None  # storage id; last tie-breaker of the stored order
    channel_id: str | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Msg:
        ts = row.get("timestamp")
        return cls(
            user_id=str(row["user_id"]),
            content=row.get("content") or "",
            is_bot=bool(row.get("is_bot")),
            timestamp=float(ts) if ts is not None else None,
            message_id=row.get("message_id"),
            reply_to=row.get("reply_to"),
            username=row.get("username"),
            id=row.get("id"),
            channel_id=row.get("channel_id"),
        )


# ---------------------------------------------------------------- order


def _message_id_key(message_id: str | None) -> tuple:
    # Chat platforms hand out increasing numeric ids (Discord snowflakes, Telegram message ids):
    # compare those as numbers, anything else as text, and messages without an id first.
    if message_id is None:
        return (0, 0)
    if message_id.isascii() and message_id.isdigit():
        return (1, int(message_id))
    return (2, message_id)


def order_key(m: Msg) -> tuple:
    """The chronological order of stored messages: timestamp, then message_id (numeric ids as
    numbers), then the storage id. Deterministic, whatever order the store returns rows in."""
    return (m.timestamp if m.timestamp is not None else float("-inf"), _message_id_key(m.message_id), m.id or "")


def chronological(messages: Iterable[Msg]) -> list[Msg]:
    return sorted(messages, key=order_key)


def dedupe(messages: Sequence[Msg]) -> list[Msg]:
    """Messages in chronological order, one per (channel_id, message_id): a message stored twice (a
    retry, an edit stored again) counts once, as its newest copy. The channel is part of the key
    because some platforms (Telegram) number messages per chat. Messages without message_id are all
    kept."""
    last: dict[tuple[str | None, str], int] = {}
    for i, m in enumerate(messages):
        if m.message_id is not None:
            last[(m.channel_id, m.message_id)] = i
    return [m for i, m in enumerate(messages) if m.message_id is None or last[(m.channel_id, m.message_id)] == i]


def window_before(messages: Sequence[Msg], limit: int, before_message_id: str | None = None) -> list[Msg] | None:
    """The last `limit` of chronologically ordered messages, strictly before `before_message_id`
    when given (None when no message has that id)."""
    end = len(messages)
    if before_message_id is not None:
        hits = [i for i, m in enumerate(messages) if m.message_id == before_message_id]
        if not hits:
            return None
        end = hits[-1]
    return list(messages[max(0, end - limit) : end])


# ---------------------------------------------------------------- speakers


def _one_line(text: str) -> str:
    return _WS.sub(" ", text).strip()


@dataclass(frozen=True)
class Speakers:
    """Who is who. The bot's own messages are those from `bot_user_id` when it is given, otherwise
    those flagged `is_bot`; they are labelled `bot_name` (or their username, or "bot"). Everyone
    else is labelled by username, falling back to user_id."""

    bot_user_id: str | None = None
    bot_name: str | None = None

    def is_own(self, m: Msg) -> bool:
        return m.user_id == self.bot_user_id if self.bot_user_id is not None else m.is_bot

    def identity(self, m: Msg) -> tuple[bool, str]:
        return (True, "") if self.is_own(m) else (False, m.user_id)

    def label(self, m: Msg) -> str:
        if self.is_own(m) and self.bot_name and _one_line(self.bot_name):
            return _one_line(self.bot_name)
        if m.username and _one_line(m.username):
            return _one_line(m.username)
        return DEFAULT_BOT_LABEL if self.is_own(m) else _one_line(m.user_id) or m.user_id


def is_blank(m: Msg) -> bool:
    return not m.content.strip()


# ---------------------------------------------------------------- threads


def thread_forest(messages: Sequence[Msg]) -> list[list[int]]:
    """Threads of chronologically ordered messages, as lists of indexes into `messages`.

    A message whose reply_to is the message_id of another message of the list is its child; every
    other message is a root. Each thread is a root and all its descendants, in chronological order;
    threads come in the order of their roots. A reply cycle (bad data) is cut at its oldest message,
    which becomes a root. With duplicate message_ids, replies attach to the newest copy.
    """
    by_mid = {m.message_id: i for i, m in enumerate(messages) if m.message_id is not None}
    parent: list[int | None] = []
    for i, m in enumerate(messages):
        p = by_mid.get(m.reply_to) if m.reply_to is not None else None
        parent.append(p if p != i else None)
    # cut reply cycles: each message has one parent, so a component holds at most one cycle
    state = [0] * len(messages)  # 0 unseen, 1 on the current walk, 2 done
    for start in range(len(messages)):
        walk: list[int] = []
        node: int | None = start
        while node is not None and state[node] == 0:
            state[node] = 1
            walk.append(node)
            node = parent[node]
        if node is not None and state[node] == 1:
            parent[min(walk[walk.index(node) :])] = None
        for n in walk:
            state[n] = 2
    root: list[int] = list(range(len(messages)))
    for i in range(len(messages)):  # parents may come later (clock skew): walk to the top
        top = i
        while (up := parent[top]) is not None:
            top = up
        root[i] = top
    threads: dict[int, list[int]] = {}
    for i in range(len(messages)):
        threads.setdefault(root[i], []).append(i)
    return [threads[r] for r in sorted(threads)]


def reply_chain(start_id: str, lookup: Callable[[str], Msg | None], max_length: int = 10_000) -> set[str]:
    """`start_id` and every message_id it replies to, transitively, as far as `lookup` (message_id ->
    message, or None when unknown) can follow. Stops at unknown messages, loops and `max_length`."""
    chain: set[str] = set()
    current: str | None = start_id
    while current is not None and current not in chain and len(chain) < max_length:
        chain.add(current)
        m = lookup(current)
        current = m.reply_to if m is not None else None
    return chain


@dataclass(frozen=True)
class Thread:
    messages: tuple[Msg, ...]  # the shown messages, chronological
    latest: int  # chronological position of its newest shown message


def channel_threads(window: Sequence[Msg], *, exclude_ids: Iterable[str] = (), max_threads: int = 5) -> list[Thread]:
    """The threads to show from a chronologically ordered window: the forest is built over the whole
    window, then excluded and empty messages are left out (their replies stay in the thread), threads
    with nothing left are dropped, the rest ordered newest first by their latest shown message and
    capped at `max_threads`."""
    excluded = set(exclude_ids)
    out: list[Thread] = []
    for members in thread_forest(window):
        shown = [
            i
            for i in members
            if not is_blank(window[i]) and (window[i].message_id is None or window[i].message_id not in excluded)
        ]
        if shown:
            out.append(Thread(tuple(window[i] for i in shown), max(shown)))
    out.sort(key=lambda t: t.latest, reverse=True)
    return out[:max_threads]


# ---------------------------------------------------------------- rendering


def _text_lines(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").strip().split("\n")]
    return "\n    ".join(line for line in lines if line.strip())


def participants(messages: Iterable[Msg], speakers: Speakers) -> list[str]:
    seen: dict[tuple[bool, str], str] = {}
    for m in messages:
        seen.setdefault(speakers.identity(m), speakers.label(m))
    return list(seen.values())


def render_channel_block(threads: Sequence[Thread], speakers: Speakers) -> str:
    if not threads:
        return ""
    lines = [CHANNEL_HEADER]
    for t in threads:
        names = participants(t.messages, speakers)
        kind = "standalone" if len(names) == 1 else "thread"
        lines.append("")
        lines.append(f"{kind} ({', '.join(names)}):")
        for m in t.messages:
            lines.append(f"  {speakers.label(m)}: {_text_lines(m.content)}")
    return "\n".join(lines)


def format_time(timestamp: float) -> str:
    """ISO-8601 UTC to the minute, e.g. 2024-01-01T09:05Z (seconds are dropped, not rounded)."""
    return datetime.fromtimestamp(timestamp, tz=UTC).strftime("%Y-%m-%dT%H:%MZ")


def cut_words(text: str, max_words: int) -> str:
    """At most `max_words` whole words; an ellipsis marks a cut. Uncut text keeps its lines.

    Words are whitespace-separated, so text without spaces (Chinese, Japanese, a long URL) would
    never be cut: the cut text is also held to `CHARS_PER_WORD` characters per word, cut back to
    the last space when there is one in its second half.
    """
    words = text.split()
    max_chars = max_words * CHARS_PER_WORD
    if len(words) <= max_words and len(" ".join(words)) <= max_chars:
        return _text_lines(text)
    kept = " ".join(words[:max_words])
    if len(kept) > max_chars:
        kept = kept[:max_chars]
        space = kept.rfind(" ")
        if space > max_chars // 2:
            kept = kept[:space]
    return kept.rstrip() + ELLIPSIS


@dataclass(frozen=True)
class Tiers:
    """History compression: the newest `full` messages whole, the next `mid` cut to `mid_words`
    words, the next `short` cut to `short_words` words."""

    full: int = 5
    mid: int = 10
    mid_words: int = 32
    short: int = 15
    short_words: int = 8

    @property
    def total(self) -> int:
        return self.full + self.mid + self.short

    def words_for(self, rank: int) -> int | None:
        """Word budget of the message `rank` places from the newest (0 = newest); None = in full."""
        if rank < self.full:
            return None
        if rank < self.full + self.mid:
            return self.mid_words
        return self.short_words


def history_kept(messages: Sequence[Msg], tiers: Tiers, *, exclude_ids: Iterable[str] = ()) -> list[Msg]:
    """The messages a history shows, oldest first: excluded and empty ones left out, the newest `tiers.total`."""
    excluded = set(exclude_ids)
    kept = [m for m in messages if not is_blank(m) and (m.message_id is None or m.message_id not in excluded)]
    return kept[max(0, len(kept) - tiers.total) :]


def history_lines(
    messages: Sequence[Msg], tiers: Tiers, speakers: Speakers, *, exclude_ids: Iterable[str] = ()
) -> list[str]:
    """Lines of the history of chronologically ordered messages, oldest first: excluded and empty
    messages are left out, then the newest `tiers.total` are kept and compressed by age."""
    kept = history_kept(messages, tiers, exclude_ids=exclude_ids)
    lines = []
    for i, m in enumerate(kept):
        budget = tiers.words_for(len(kept) - 1 - i)
        text = _text_lines(m.content) if budget is None else cut_words(m.content, budget)
        when = f"[{format_time(m.timestamp)}] " if m.timestamp is not None else ""
        lines.append(f"{when}{speakers.label(m)}: {text}")
    return lines


def render_history_block(lines: Sequence[str]) -> str:
    return "\n".join([HISTORY_HEADER, *lines]) if lines else ""


# ---------------------------------------------------------------- opt-out


def opted_out(text: str | None, marker: str | None) -> bool:
    """True when the user's message contains the opt-out marker (case-insensitively; an empty marker
    disables the check)."""
    if not text or not marker:
        return False
    return marker.casefold() in text.casefold()


# ---------------------------------------------------------------- relevant memories (context)


@dataclass(frozen=True)
class Memory:
    """One line of `context`'s relevant memories: when, who, what (one line, cut to its share of words)."""

    timestamp: float
    label: str
    text: str
    outdated: bool = False  # a later memory replaced what it says (messages/supersession.py)


def normal(text: str) -> str:
    """One line, single spaces, any case: how two messages are told to be the same text."""
    return " ".join(text.split()).casefold()


def memory_lines(found: dict[str, list[dict]], names: dict[str, str], words: int) -> dict[str, list[Memory]]:
    """Rows found per user (best first, with their `similarity`) -> their memory lines, within `words` words in
    all: at most words / 4 lines (the most similar across users), each message on one line cut to an equal
    share of the words; labelled by the username stored with it, else the bot's label or the user's name."""
    ranked = sorted(
        ((r["similarity"], uid, i) for uid, rows in found.items() for i, r in enumerate(rows)),
        key=lambda x: (-x[0], x[1], x[2]),
    )[: max(1, words // 4)]
    if not ranked:
        return {}
    share = max(4, words // len(ranked))
    kept = {(uid, i) for _, uid, i in ranked}
    out: dict[str, list[Memory]] = {}
    for uid, rows in found.items():
        for i, r in enumerate(rows):
            if (uid, i) not in kept:
                continue
            label = _one_line(r.get("username") or "") or (
                DEFAULT_BOT_LABEL if r.get("is_bot") else names.get(uid) or uid
            )
            out.setdefault(uid, []).append(
                Memory(
                    float(r["timestamp"]),
                    label,
                    cut_words(" ".join(r["content"].split()), share),
                    r.get("superseded") is not None,
                )
            )
    return out
