"""One text being read: its language's grammar, what was found so far, the people it introduced, and the current
sentence's blocking words and clause punctuation, found once per sentence (pure). The subject side
(subjects.py) and the predicate side (objects.py) both read and write it; neither calls into the other's
state."""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..lang.types import ClauseGrammar
from .clauses import CLAUSE_WINDOW, conjunction_before, find_clause_end, find_clause_start, fold, ordinary
from .predicates import FoundRelation


@dataclass
class Subject:
    names: list[str | None]  # None: the speaker
    kind: str  # "i", "we", "person", "unknown"
    start: int  # where the subject's words start (for the clause check)
    end: int  # where its verb may start


@dataclass
class Phrase:
    """One verb phrase being read."""

    s: str  # the text
    subjects: list[str | None]
    kind: str  # the verb's kind (the grammar's `verbs`)
    at: int  # where its object starts
    hi: int  # the sentence's end
    stop: int  # the clause's end
    status: str  # "ok", "ended", "skip"
    ended: bool
    perfect: bool  # "have" before the verb
    fill: re.Match[str]  # the words between subject and verb


class Reading:
    """One text read."""

    def __init__(self, text: str, known: Mapping[str, str] | None, grammar: ClauseGrammar):
        self.text = text
        self.known = known
        self.g = grammar
        self.out: list[FoundRelation] = []
        self.people: list[tuple[str, str | None]] = []  # persons introduced in this message: (name, "he"/"she"/None)
        self.block_starts: list[int] = []  # the current sentence's blocking words (`block`): where they start
        self.block_ends: list[int] = []  # and end
        self.span = (0, 0)  # the current sentence; its clauses' punctuation (found once per sentence: `clause_start`)
        self.cuts: list[int] = []  # after each , ; : ( ) — –
        self.dashes: list[int] = []  # after each " - "
        self.ends: list[int] = []  # where each clause end starts

    def ordinary(self, word: str) -> bool:
        return ordinary(self.g, word)

    def clause_start(self, s: str, lo: int, pos: int) -> int:
        """`find_clause_start` from the sentence's punctuation found once (a look-up, not a search back per subject)."""
        if s is not self.text or not (self.span[0] <= lo <= pos <= self.span[1]):
            return find_clause_start(self.g, s, lo, pos)
        if pos - lo > CLAUSE_WINDOW:
            space = s.find(" ", pos - CLAUSE_WINDOW, pos)
            lo = space + 1 if space >= 0 else pos - CLAUSE_WINDOW
        i = bisect.bisect_right(self.cuts, pos) - 1
        cut = self.cuts[i] if i >= 0 else 0
        j = bisect.bisect_right(self.dashes, pos) - 1
        cut = max(cut, self.dashes[j] - 1 if j >= 0 else 0, lo)
        return conjunction_before(self.g, s, cut, pos)

    def clause_end(self, s: str, pos: int, hi: int) -> int:
        """`find_clause_end` from the sentence's clause ends found once."""
        if s is not self.text or not (self.span[0] <= pos <= hi <= self.span[1]):
            return find_clause_end(self.g, s, pos, hi)
        hi = min(hi, pos + CLAUSE_WINDOW)
        i = bisect.bisect_left(self.ends, pos)
        return min(self.ends[i], hi) if i < len(self.ends) else hi

    def first_block(self, a: int, b: int) -> int | None:
        """Where the first of the current sentence's blocking words lying wholly between `a` and `b` starts."""
        i = bisect.bisect_left(self.block_starts, a)
        return self.block_starts[i] if i < len(self.block_starts) and self.block_ends[i] <= b else None

    def known_type(self, name: str) -> str | None:
        return self.known.get(fold(name)) if self.known else None

    def emit(
        self,
        subject: str | None,
        predicate: str,
        a: int,
        b: int,
        ended: bool = False,
        offset: int = 0,
        value: str | None = None,
    ) -> None:
        obj = value if value is not None else self.text[offset + a : offset + b]
        obj = obj.strip(" '’-.,")
        if predicate in ("likes", "dislikes"):
            obj = self.g.article.sub("", obj)
        if not obj:
            return
        self.out.append(FoundRelation(predicate, obj, offset + a, offset + b, subject, ended))

    def emit_all(self, subjects: list[str | None], pred: str, span: tuple[int, int], ended: bool, status: str) -> None:
        if status == "skip":
            return
        for subject in subjects:
            self.emit(subject, pred, *span, ended=ended or status == "ended")

    def introduce(self, name: str, word: str | None) -> None:
        w = (word or "").casefold()
        gender = "she" if w in self.g.she else "he" if w in self.g.he else None
        self.people = [p for p in self.people if fold(p[0]) != fold(name)] + [(name, gender)]

    def pronoun(self, word: str) -> str | None:
        fits = [n for n, g in self.people if g in (None, word.casefold())]
        return fits[-1] if len(fits) == 1 else None

    def name_at(self, s: str, pos: int, kind: str) -> tuple[int, int] | None:
        """A name (place, organisation, person) starting at `pos`: capitalised words (a leading "the" dropped),
        or a known name in any case."""
        g = self.g
        m = g.the.match(s, pos)
        at = m.end() if m else pos
        m = g.name_rx.match(s, at)
        if m:
            end = m.end()
            name = s[at:end]
            if kind == "person" and name.endswith(g.possessives):
                end -= 2
                name = name[:-2]
            name = name.rstrip(".")
            end = at + len(name)
            if kind != "person" and g.modified.match(s, end):
                return None  # "at the Berlin office", "in the London area"
            first = name.split()[0].casefold()
            if fold(name) in g.time_words or (len(name.split()) == 1 and self.ordinary(name) and kind != "person"):
                return None
            if first in g.self_words:
                return None
            return at, end
        if self.known:  # a known name written in lower case ("i live in berlin now")
            words = list(re.finditer(r"[\w'’.-]+", s[at : at + 80]))
            for n in range(min(4, len(words)), 0, -1):
                cand = s[at : at + words[n - 1].end()]
                t = self.known_type(cand)
                if t is not None and t not in ("date", "person") if kind != "person" else t == "person":
                    return at, at + words[n - 1].end()
        return None

    def corrected(self, s: str, span: tuple[int, int], kind: str, hi: int) -> tuple[int, int]:
        """ "I moved to Lisbon, no wait, Porto": the name after the correction."""
        m = self.g.correction.match(s, span[1], hi)
        if m and m.end() > span[1]:
            other = self.name_at(s, m.end(), kind)
            if other is not None:
                return self.corrected(s, other, kind, hi)
        return span
