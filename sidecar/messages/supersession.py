"""What is true now, first: a step of the result pipeline (pure). A memory whose statement a later memory
replaced ("I live in Berlin", then "moved to Lisbon") is still returned, history matters, but marked
(`superseded`: the memory that replaced it and when), and for a question about the present the current memory
of its chain is returned too and ranked above it. A question about the past ("before", "used to", "in 2024",
"以前", "раньше", ...) keeps the plain order (the marks stay).

Which memories were replaced is not this domain's to know: the graph (relations closed by later ones) and the
facts (a fact invalidated by a later one) answer through `interface.Supersession`, which runtime/app.py wires.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .interface import Replaced, Supersession
from .timewords import named_window

# words of a question about what was true before, in the languages the project reads time words in
# (timewords.py) and those of the users it serves; a word of the present wins over them ("where do I live now,
# and before?" asks for now first)
_PAST = re.compile(
    r"\b(?:before|used to|previously|previous|formerly|former|earlier|in the past|back then|back when|originally"
    r"|prior|first|ex|exes|was|were|did|had)\b|(?<!how )\bold\b"
    r"|以前|之前|原来|過去|过去|曾经|曾經|当时|當時|从前|從前"
    r"|(?<!名)前[にはの]|昔|当時|かつて|元カレ|元カノ|元彼|元の"
    r"|예전|이전|옛날|원래|당시|전에"
    r"|\b(?:раньше|прежде|до этого|до того|бывш|когда-то|прошл)"
    r"|\b(?:قبل|سابق|زمان|القديم|كان|كنت)\b"
)
_PRESENT = re.compile(
    r"\b(?:now|nowadays|currently|current|these days|at the moment|at present|presently|right now|still|today"
    r"|anymore|any more|latest)\b"
    r"|现在|現在|目前|如今|今|지금|요즘|현재|\b(?:сейчас|теперь|нынче|в данный момент)\b"
    r"|\b(?:الآن|الان|حاليا|حالياً|هالأيام|دلوقتي)"
)


def asks_past(text: str, now: float) -> bool:
    """Whether a question asks what was true before: a word of the past and none of the present, or a time it
    names that ended before today (timewords.named_window: "in 2024", "last year")."""
    folded = text.casefold().replace("’", "'")
    if _PRESENT.search(folded):
        return False
    window = named_window(text, now)
    if window is not None and window[1] < now:
        return True
    return bool(_PAST.search(folded))


def _score(row: dict[str, Any]) -> float:
    return float(row.get("score", row["similarity"]))


def current_first(
    rows: list[dict[str, Any]],
    replaced: Mapping[str, Replaced],
    heads: Mapping[str, dict[str, Any]],
    limit: int,
    lift: tuple[str, ...] = ("score",),
) -> list[dict[str, Any]]:
    """The ranked rows with, just above each replaced one, the current memory of its chain (from the rows, moved
    up, or from `heads`, the current memories not among them), scored as the one it now ranks above (`lift`: the
    fields raised; the scores stay in order: a host that sorts by them keeps this order); at most `limit`."""
    by_id = {r["id"]: r for r in rows}
    placed: set[str] = set()
    out: list[dict[str, Any]] = []
    for r in rows:
        if r["id"] in placed:
            continue
        info = replaced.get(r["id"])
        head = None if info is None else by_id.get(info.current) or heads.get(info.current)
        if head is not None and head["id"] not in placed and head["id"] != r["id"]:
            for key in lift:
                head[key] = max(_score(head), _score(r)) if key == "score" else max(head[key], r[key])
            out.append(head)
            placed.add(head["id"])
        out.append(r)
        placed.add(r["id"])
    return out[:limit]


def marked(rows: list[dict[str, Any]], replaced: Mapping[str, Replaced]) -> list[dict[str, Any]]:
    """Each replaced row carries `superseded`: {id: the memory that replaced it, at: when it was said}."""
    for r in rows:
        info = replaced.get(r["id"])
        if info is not None:
            r["superseded"] = {"id": info.by, "at": int(info.at)}
    return rows


def supersede(
    rows: list[dict[str, Any]],
    supersession: Supersession | None,
    user_id: str,
    text: str,
    now: float,
    heads_of: Callable[[list[str]], dict[str, dict[str, Any]]],
    limit: int,
    reorder: bool = True,
    lift: tuple[str, ...] = ("score",),
) -> list[dict[str, Any]]:
    """The step as `query` and `context` take it: the user's replaced rows marked and, with `reorder` and unless
    `text` asks about the past, the current memory of each chain put above (`heads_of(ids)`: the rows of current
    memories not among `rows`, the user's own that the request lets through, with their `similarity`)."""
    replaced = supersession(user_id, [r["id"] for r in rows]) if supersession is not None and rows else {}
    if not replaced:
        return rows
    if reorder and not asks_past(text, now):
        missing = sorted({i.current for i in replaced.values()} - {r["id"] for r in rows})
        rows = current_first(rows, replaced, heads_of(missing) if missing else {}, limit, lift)
    return marked(rows, replaced)
