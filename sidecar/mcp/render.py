"""Tool results as text a model reads well: one line per memory, fact or entity, with the ids the
other tools take. The same answer also goes out whole as structured content (server.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def when(ts: float | int) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts))


def count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _remember(r: Any, user: str) -> str:
    hidden = f"; {count(r.redacted, 'secret')} replaced by a placeholder" if r.redacted else ""
    return f"Remembered for user {user!r} (memory id {r.id}{hidden})."


def _search(r: Any, user: str) -> str:
    if not r.messages:
        return f"No memories found for user {user!r}."
    lines = [f"{count(len(r.messages), 'memory', 'memories')} for user {user!r}, best first:"]
    for i, m in enumerate(r.messages, 1):
        who = "assistant" if m.is_bot else (m.username or "user")
        old = f", outdated: replaced by {m.superseded.id} on {when(m.superseded.at)}" if m.superseded else ""
        lines.append(
            f"{i}. [{when(m.timestamp)}, {who}, score {m.score:.3g}, similarity {m.similarity:.2f}, id {m.id}{old}] "
            f"{m.content}"
        )
    return "\n".join(lines)


def _fact_line(f: Any) -> str:
    state = "" if f.active else f", inactive ({f.superseded_reason or 'replaced'})"
    return f"- [{f.category}] {f.text} (id {f.id}{state})"


def _facts(r: Any, user: str) -> str:
    if not r.facts:
        return f"No facts known about user {user!r}."
    return "\n".join([f"{count(len(r.facts), 'fact')} about user {user!r}:", *(_fact_line(f) for f in r.facts)])


def _remember_fact(r: Any, user: str) -> str:
    head = {
        "added": "Fact stored",
        "duplicate": "Already known (not stored twice)",
        "merged": "Fact merged into an existing one",
    }.get(r.action, r.action)
    lines = [f"{head} for user {user!r}:", _fact_line(r.fact)]
    if r.candidates:
        lines.append("Similar facts already known (forget one with `forget` if it is now wrong):")
        lines += [_fact_line(c) for c in r.candidates]
    return "\n".join(lines)


def _forget(r: Any, user: str) -> str:
    stays = " A tombstone stays, so an import of an older backup will not bring it back." if r.tombstone else ""
    if r.removed is not None:
        x = r.removed
        return (
            f"Forgot everything about user {user!r}: {count(x.memories, 'memory', 'memories')}, "
            f"{count(x.facts, 'fact')}, {count(x.graph_episodes, 'graph episode')}, "
            f"{count(x.chunks, 'chunk vector')}.{stays}"
        )
    if r.facts_deleted is not None or r.graph_episodes_deleted is not None:
        return (
            f"Forgot everything about user {user!r}: {count(r.deleted or 0, 'memory', 'memories')}, "
            f"{count(r.facts_deleted or 0, 'fact')}, {count(r.graph_episodes_deleted or 0, 'graph episode')}."
        )
    return f"Forgot {count(r.deleted or 0, 'item')}.{stays}"


def _context(r: Any, user: str) -> str:
    if r.opted_out:
        return "The text carries the opt-out marker: no memory is used."
    blocks = [b for b in (r.text, r.history_block, r.related_block) if b]
    return "\n\n".join(blocks) if blocks else f"Nothing is remembered about user {user!r} yet."


def _graph_recall(r: Any, user: str) -> str:
    if not r.known:
        return f"Nothing known about that for user {user!r} (confidence {r.confidence:.2f})."
    lines = [f"Recalled for user {user!r} (confidence {r.confidence:.2f}):"]
    for i, t in enumerate(r.traces, 1):
        names = ", ".join(e.name for e in t.entities)
        lines.append(f"{i}. {t.summary}" + (f" [about: {names}]" if names else ""))
        lines += [f"   - [{when(e.timestamp)}, id {e.id}] {e.content}" for e in t.episodes]
    return "\n".join(lines)


def _entities(r: Any, user: str) -> str:
    if not r.entities:
        return f"No entities known for user {user!r} yet."
    lines = [f"{count(len(r.entities), 'entity', 'entities')} for user {user!r}, most salient first:"]
    for e in r.entities:
        aliases = f", also {', '.join(e.aliases)}" if e.aliases else ""
        lines.append(
            f"- {e.name} ({e.type}, {count(e.mentions, 'mention')}, last {when(e.last_seen)}{aliases}; id {e.id})"
        )
    return "\n".join(lines)


RENDER: dict[str, Callable[[Any, str], str]] = {
    "remember": _remember,
    "search": _search,
    "facts": _facts,
    "remember_fact": _remember_fact,
    "forget": _forget,
    "context": _context,
    "graph_recall": _graph_recall,
    "entities": _entities,
}
