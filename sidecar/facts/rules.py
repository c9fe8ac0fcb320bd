"""Pure rules about facts: text normalisation, the duplicate rule, consolidation decisions,
the memory-tag instructions for an LLM, and the prompt-ready context blocks.

No storage, no embedding, no I/O: everything here is testable with plain values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal
from xml.sax.saxutils import escape

from ..text import terms, written_in

# Measured on tests/fixtures/fact_pairs.jsonl with the default model
# (`python scripts/bench.py fact-thresholds`): rewordings 0.76-0.99 (median 0.97), contradictions
# 0.27-0.86, mergeable 0.39-0.72, unrelated -0.06-0.30.
# Duplicate: 0.88 keeps precision at 1.0 on the fixture (no contradiction or mergeable pair above it;
# the closest, "Is 29 years old" / "Is 30 years old" at 0.864, is also caught by the number guard).
DUPLICATE_THRESHOLD = 0.88
# Candidate: 0.35 keeps every unrelated pair out (highest 0.30) and shows 95% of the related ones.
CANDIDATE_THRESHOLD = 0.35
MAX_CANDIDATES = 3
# A fact mostly in a script the model does not read (Arabic, Cyrillic, ... on all-MiniLM-L6-v2): the model
# sees all such text as alike ("أخي يعمل طبيبا" / "أخي أهداني كتابا" score above the duplicate threshold), so
# a duplicate must also share its analysed terms: Jaccard at or above this (4 of 5; a short fact, all of them).
UNREAD_TERMS_OVERLAP = 0.8

DEFAULT_CATEGORIES = ("preference", "company", "pattern", "answer")
CATEGORY_HINTS = {
    "preference": "likes, dislikes, tastes and choices (food, tools, games, style)",
    "company": "where they work or study, their role, team, employer or business",
    "pattern": "recurring habits, routines and schedules",
    "answer": "answers they gave to your questions (budget, location, constraints, decisions)",
}

ACTIONS = ("KEEP", "INVALIDATE", "MERGE")
MAX_FACT_CHARS = 1_000

_WS = re.compile(r"\s+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_CATEGORY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


def normalise_text(text: str) -> str:
    """One line, single spaces, trimmed."""
    return _WS.sub(" ", text).strip()


def normalise_category(category: str) -> str:
    return category.strip().lower()


def parse_categories(value: str) -> tuple[str, ...]:
    """`preference,company` -> ("preference", "company"); raises ValueError on a bad list."""
    cats: list[str] = []
    for raw in value.split(","):
        c = normalise_category(raw)
        if not c:
            continue
        if not _CATEGORY.match(c):
            raise ValueError(f"category {raw.strip()!r} must be lower-case letters, digits, '_' or '-' (at most 40)")
        if c not in cats:
            cats.append(c)
    if not cats:
        raise ValueError("at least one category is needed")
    return tuple(cats)


def _numbers(text: str) -> list[str]:
    return sorted(n.replace(",", ".") for n in _NUMBER.findall(text))


def same_terms(a: str, b: str, overlap: float = UNREAD_TERMS_OVERLAP) -> bool:
    """Two texts share their analysed terms (sidecar/text: stemmed, stop words out, Han as bigrams): the
    Jaccard of the two sets at or above `overlap`. Two texts without terms: equal up to punctuation."""
    ta, tb = set(terms(a)), set(terms(b))
    if not ta and not tb:
        return re.sub(r"\W+", "", a) == re.sub(r"\W+", "", b)
    return len(ta & tb) >= overlap * len(ta | tb)


def is_duplicate(
    new_text: str,
    old_text: str,
    similarity: float,
    threshold: float = DUPLICATE_THRESHOLD,
    scripts: frozenset[str] | None = None,
) -> bool:
    """Near-identical facts: same text up to case and spacing, or similarity at or above the threshold
    with the same numbers in both (embeddings barely see "29" vs "30": never a duplicate). When either text
    is mostly in a script the model does not read (`scripts`, those it reads; None: every one), the
    similarity says nothing: the two must also share their terms (`same_terms`)."""
    a, b = normalise_text(new_text).casefold(), normalise_text(old_text).casefold()
    if a == b:
        return True
    if similarity < threshold or _numbers(a) != _numbers(b):
        return False
    return (written_in(a, scripts) and written_in(b, scripts)) or same_terms(a, b)


# Words that put a fact at another time, or make it an intention, a negation: never what is true now
# ("Used to live in Berlin", "Wants to move to Paris"), so never the same as a current relation.
_NOT_NOW = re.compile(
    r"\b(?:used to|grew up|former|formerly|previously|before|no longer|anymore|any more|ex|left|"
    r"quit|broke up|moved away|wants? to|would like|hopes? to|plans? to|planning|dreams? of|"
    r"thinking of|not|never|don't|doesn't|didn't|isn't|wasn't)\b",
    re.IGNORECASE,
)


def mentions_object(fact: str, obj: str) -> bool:
    """The fact names the object: its words, in order, as whole words (any case)."""
    words = re.findall(r"\w+", obj.casefold())
    return bool(words) and re.search(r"\b" + r"\W+".join(map(re.escape, words)) + r"\b", fact.casefold()) is not None


def same_as_fact(
    sentence: str, obj: str, fact: str, similarity: float | None, threshold: float = DUPLICATE_THRESHOLD
) -> bool:
    """A current relation read as a fact ("Lives in Paris", its object "Paris") says what the fact says: the
    same text up to case and spacing; or a fact that names the object, of no other time or intention (no
    "used to", "wants to", "not", ...), and a duplicate of the sentence by the facts' own rule (similarity at
    the duplicate threshold, the same numbers). Measured: `python scripts/bench.py fact-thresholds --relations`."""
    if normalise_text(sentence).casefold() == normalise_text(fact).casefold():
        return True
    return (
        similarity is not None
        and mentions_object(fact, obj)
        and not _NOT_NOW.search(fact)
        and is_duplicate(sentence, fact, similarity, threshold)
    )


@dataclass(frozen=True)
class Decision:
    """What to do with one candidate (an existing fact) given a new fact."""

    action: Literal["KEEP", "INVALIDATE", "MERGE"]
    merged_text: str | None = None
    decided_by: Literal["host", "llm", "rule"] = "host"
    reason: str | None = None


def plan_decisions(decisions: Sequence[Decision]) -> list[Decision]:
    """At most one MERGE per new fact: the first (most similar candidate) wins, later ones become KEEP.
    A MERGE without a usable merged text also becomes KEEP."""
    out: list[Decision] = []
    merged = False
    for d in decisions:
        if d.action == "MERGE":
            text = normalise_text(d.merged_text or "")
            if merged or not text:
                why = "a second MERGE for the same new fact" if merged else "MERGE without merged_text"
                out.append(Decision("KEEP", None, d.decided_by, f"{why}; kept both"))
                continue
            merged = True
            out.append(Decision("MERGE", text, d.decided_by, d.reason))
        else:
            out.append(d)
    return out


# ---------------------------------------------------------------- instructions


def memory_instructions(categories: Sequence[str]) -> str:
    """The system-prompt paragraph that teaches an LLM to emit <memory> tags."""
    lines = [
        "You have a long-term memory about the people you talk with. When the user tells you something "
        "about themselves that will still be true and useful in future conversations, record it by adding "
        'a tag to your reply: <memory category="CATEGORY">fact</memory>.',
        "",
        "Categories:",
    ]
    for c in categories:
        hint = CATEGORY_HINTS.get(c)
        lines.append(f"- {c}: {hint}" if hint else f"- {c}")
    lines += [
        "",
        "Rules:",
        "- One fact per tag; use several tags for several facts.",
        "- Write each fact as a short, third-person statement about the user, e.g. "
        f'<memory category="{categories[0]}">Prefers dark roast coffee</memory>.',
        f"- Use only these categories: {', '.join(categories)}.",
        "- Skip trivia, greetings, passing moods and anything only true right now.",
        "- Never record a password, key, token or card number, nor anything the user wrapped in "
        "<private>...</private>: what is private stays out of memory.",
        "- Never mention that you are recording or remembering anything; the tags are removed before "
        "the user sees your reply.",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- context blocks


@dataclass(frozen=True)
class ContextFact:
    id: str
    text: str
    category: str
    updated_at: float
    similarity: float | None = None


@dataclass(frozen=True)
class ContextRelation:
    """A current relation of graph memory, as a sentence ("Lives in Paris"), first stated at `since` (None:
    a relation whose date says nothing, such as a sister)."""

    sentence: str
    since: float | None = None


@dataclass(frozen=True)
class ContextMemory:
    """A stored message relevant to the request: when, who, what (one line, already cut to its budget)."""

    timestamp: float
    label: str
    text: str
    outdated: bool = False  # a later memory replaced what it says


@dataclass
class ContextUser:
    user_id: str
    name: str
    relevant: list[ContextFact] = field(default_factory=list)  # best first (or most recent without a message)
    preferences: list[ContextFact] = field(default_factory=list)  # most recent first
    now: list[ContextRelation] = field(default_factory=list)  # what is true now, most relevant first
    memories: list[ContextMemory] = field(default_factory=list)  # most relevant first


_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def now_line(r: ContextRelation) -> str:
    """ "Lives in Paris (as of March 2024)": the month and year (UTC) it was first stated. Not "since": a
    relation is dated by its statement, and "I moved to Paris last year" or "I live in Paris" stated in
    March 2024 says nothing of when it began."""
    text = normalise_text(r.sentence)
    if r.since is None:
        return text
    d = datetime.fromtimestamp(r.since, tz=UTC)
    return f"{text} (as of {_MONTHS[d.month - 1]} {d.year})"


def memory_line(m: ContextMemory) -> str:
    """ "2024-03-02 Sam: I moved to Paris." (the date in UTC); "2024-03-02 Sam (outdated): I live in Rome." when a
    later memory replaced what it says."""
    day = datetime.fromtimestamp(m.timestamp, tz=UTC).strftime("%Y-%m-%d")
    mark = " (outdated)" if m.outdated else ""
    return f"{day} {normalise_text(m.label)}{mark}: {normalise_text(m.text)}"


def _attr(value: str) -> str:
    return escape(normalise_text(value), {chr(34): "&quot;"})


def day(ts: float) -> str:
    """YYYY-MM-DD (UTC)."""
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d")


def render_xml(users: Iterable[ContextUser], then: float | None = None) -> str:
    """<background_facts>, one <user name="..."> block per user with something to show: its facts as
    "- fact" lines, then <true_now> (its current relations) and <memories> (stored messages relevant to
    the request), each with "- " lines. Every stored string is XML-escaped, so none can close a block early.
    `then` (a past `as_of`): what was true then, <true_then date="YYYY-MM-DD">, in place of <true_now>."""
    blocks: list[str] = []
    open_tag, close_tag = (
        ("<true_now>", "</true_now>") if then is None else (f'<true_then date="{day(then)}">', "</true_then>")
    )
    for u in users:
        if not (u.relevant or u.now or u.memories):
            continue
        blocks.append(f'<user name="{_attr(u.name)}">')
        blocks.extend(f"- {escape(normalise_text(f.text))}" for f in u.relevant)
        if u.now:
            blocks += [open_tag, *(f"- {escape(now_line(r))}" for r in u.now), close_tag]
        if u.memories:
            blocks += ["<memories>", *(f"- {escape(memory_line(m))}" for m in u.memories), "</memories>"]
        blocks.append("</user>")
    if not blocks:
        return ""
    return "\n".join(["<background_facts>", *blocks, "</background_facts>"])


def markdown_facts(
    users: Sequence[ContextUser], preferences_limit: int, relevant_limit: int
) -> tuple[list[tuple[ContextUser, ContextFact]], list[tuple[ContextUser, ContextFact]]]:
    """The facts the markdown block shows: the `preferences_limit` most recent preferences of all users, then
    the `relevant_limit` most relevant other facts (by similarity, else most recent)."""
    prefs: list[tuple[ContextUser, ContextFact]] = []
    for u in users:
        prefs.extend((u, f) for f in u.preferences)
    prefs.sort(key=lambda uf: (-uf[1].updated_at, uf[1].id))
    prefs = prefs[:preferences_limit]
    shown = {f.id for _, f in prefs}

    relevant: list[tuple[ContextUser, ContextFact]] = []
    for u in users:
        relevant.extend((u, f) for f in u.relevant if f.id not in shown)
    if any(f.similarity is not None for _, f in relevant):
        relevant.sort(key=lambda uf: (-(uf[1].similarity or 0.0), -uf[1].updated_at, uf[1].id))
    else:
        relevant.sort(key=lambda uf: (-uf[1].updated_at, uf[1].id))
    return prefs, relevant[:relevant_limit]


def render_markdown(
    users: Sequence[ContextUser], preferences_limit: int, relevant_limit: int, then: float | None = None
) -> str:
    """## Memory Context / ### User Preferences / ### True Now / ### Relevant Context / ### Relevant
    Memories: "- [category] fact" lines, "- sentence (as of Month YYYY)" lines, "- YYYY-MM-DD who: message"
    lines. With several users each fact and relation is prefixed by its user's name. Empty string when there
    is nothing. `then` (a past `as_of`): "### True Then (YYYY-MM-DD)" in place of "### True Now"."""
    several = len(users) > 1

    def who(u: ContextUser) -> str:
        return f"{normalise_text(u.name)}: " if several else ""

    def line(u: ContextUser, f: ContextFact) -> str:
        return f"- [{f.category}] {who(u)}{normalise_text(f.text)}"

    prefs, relevant = markdown_facts(users, preferences_limit, relevant_limit)
    sections: list[str] = []
    if prefs:
        sections.append("\n".join(["### User Preferences", *(line(u, f) for u, f in prefs)]))
    now = [f"- {who(u)}{now_line(r)}" for u in users for r in u.now]
    if now:
        sections.append("\n".join(["### True Now" if then is None else f"### True Then ({day(then)})", *now]))
    if relevant:
        sections.append("\n".join(["### Relevant Context", *(line(u, f) for u, f in relevant)]))
    memories = [f"- {memory_line(m)}" for u in users for m in u.memories]
    if memories:
        sections.append("\n".join(["### Relevant Memories", *memories]))
    if not sections:
        return ""
    return "\n\n".join(["## Memory Context", *sections])
