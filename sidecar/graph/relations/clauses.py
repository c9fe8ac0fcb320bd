"""Cutting a text into sentences and clauses, and the small look-ups every side of the reader shares; the
words they need (abbreviations, conjunctions, what ends a clause) come from the language's grammar (pure)."""

from __future__ import annotations

import functools
import re

from ..lang.types import ClauseGrammar

# How far the reader looks from a subject or a verb for its clause's start and end. A sentence with no
# punctuation (32 KB of " I love it") was read again from its start for every subject: quadratic (92 s in
# process). A clause of chat is far shorter than this; what lies beyond is another clause.
CLAUSE_WINDOW = 400
CUTS = re.compile(r"[,;:()—–]")  # punctuation that starts a clause
_CUT_CHARS = ",;:()—–"


def compiled(pattern: str) -> re.Pattern[str]:
    """A pattern compiled once (re's own cache), to match at a position of the text (`.match(s, pos, hi)`):
    matching a slice copied the rest of the text for every subject, quadratic in a long message."""
    return _compiled(pattern)


_compiled = functools.lru_cache(maxsize=None)(re.compile)


def fold(text: str) -> str:
    return re.sub(r"\s+", " ", text.casefold()).strip(" .,;:!?\"'’")


def split_sentences(g: ClauseGrammar, text: str) -> list[tuple[int, int, bool]]:
    """(start, end, is a question) of each sentence."""
    out, start = [], 0
    look = 1 + max(map(len, g.abbreviations))
    for m in g.sentence_end.finditer(text):
        mark = m.group(0)
        if mark == ".":
            # the word before the full stop, looked for in the few characters an abbreviation has: looking back to
            # the sentence's start made "Dr. Dr. Dr. ..." (abbreviations do not end a sentence) quadratic
            a = max(start, m.start() - look)
            near = text[a : m.start()]
            cut = max(near.rfind(" "), near.rfind("\n"))
            word = near[cut + 1 :] if cut >= 0 or a == start else ""
            if word.casefold() in g.abbreviations or (len(word) == 1 and word.isupper()):
                continue
        out.append((start, m.end(), "?" in mark))
        start = m.end()
    if start < len(text):
        out.append((start, len(text), False))
    return out


def find_clause_start(g: ClauseGrammar, s: str, lo: int, pos: int) -> int:
    """Where the clause holding position `pos` starts: after the last , ; : ( — or " - " before it, or at a
    conjunction that a new subject follows; at most CLAUSE_WINDOW characters back (from a word's start)."""
    if pos - lo > CLAUSE_WINDOW:
        space = s.find(" ", pos - CLAUSE_WINDOW, pos)
        lo = space + 1 if space >= 0 else pos - CLAUSE_WINDOW
    cut = max(s.rfind(c, lo, pos) for c in _CUT_CHARS) + 1
    dash = s.rfind(" - ", lo, pos)
    return conjunction_before(g, s, max(cut, dash + 2 if dash >= 0 else 0, lo), pos)


def conjunction_before(g: ClauseGrammar, s: str, cut: int, pos: int) -> int:
    """The clause starting at `cut` starts later at a conjunction right before `pos` (and its spaces), looked for
    in the few characters it has."""
    end = pos
    while end > cut and s[end - 1] in " \t":
        end -= 1
    conj = g.conjunction_before.search(s, max(cut, end - g.conjunction_chars), end) if end < pos else None
    return conj.start() if conj else cut


def find_clause_end(g: ClauseGrammar, s: str, pos: int, hi: int) -> int:
    """Where the clause holding `pos` ends: its punctuation, a " but", " so", " because" after a comma, or at
    most CLAUSE_WINDOW characters on."""
    hi = min(hi, pos + CLAUSE_WINDOW)
    m = g.clause_end.search(s, pos, hi)
    return m.start() if m else hi


def dashes_between(s: str, lo: int, hi: int) -> list[int]:
    """Where each " - " between `lo` and `hi` starts (overlapping ones too, as `str.rfind` finds them)."""
    out, k = [], s.find(" - ", lo, hi)
    while k >= 0:
        out.append(k)
        k = s.find(" - ", k + 1, hi)
    return out


def ordinary(g: ClauseGrammar, word: str) -> bool:
    """An ordinary word of the language or a time: never a name."""
    w = word.casefold().replace("’", "'")
    return w in g.common or w.split("'")[0] in g.common or w in g.time_words


_VERB_START = re.compile(r"[^\W\d_]|['’]")


def verb_at(g: ClauseGrammar, s: str, at: int, fill: re.Match[str] | None = None) -> tuple[str, int] | None:
    """The verb phrase starting at `at`: (kind, where its object starts)."""
    if not _VERB_START.match(s, at):
        return None
    m = (g.verb_all if fill is not None and fill.group("be") is not None else g.verb_not_be).match(s, at)
    if m is None:
        return None
    assert m.lastgroup is not None  # every alternative is a named group
    return g.verbs[int(m.lastgroup[1:])][0], m.end()
