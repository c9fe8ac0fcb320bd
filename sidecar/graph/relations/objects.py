"""Reading what a subject says: the verb phrase, whether it holds (negations, hypotheticals, reported
speech, "no longer"), its objects and those coordinated with them, corrections (pure)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from .words import (
    ANCHOR_HERE,
    AND_NAME,
    AND_VERB,
    ANYMORE,
    BE_TITLE,
    BINOMIALS,
    BLOCK,
    CLAUSE_AFTER,
    CORRECTION,
    DATE,
    FILL,
    FUTURE,
    LIGHT,
    MODIFIED,
    NAME_RX,
    NAMED_LATER,
    NEG_ONLY,
    NOT_JOB,
    PET_NAMES,
    PLACE_INNER,
    PLATFORMS,
    PRONOUN_AFTER,
    THEN_AT,
    THEN_BASED,
    THING,
    TIME_WORDS,
    TITLE_ANY,
    UNKNOWN_NAME_KINDS,
    VAGUE,
    VERB_BY_KIND,
    WE_KINDS,
    compiled,
    fold,
    ordinary,
    verb_at,
)

_THE = re.compile(r"(?i:the)[ \t]+")

if TYPE_CHECKING:
    from .subjects import Subject


class _Phrase(NamedTuple):
    """One verb phrase being read: the text, its subjects, the verb's kind, where its object starts, the
    sentence's end, the clause's end, whether it holds, and the words between subject and verb."""

    s: str
    subjects: list
    kind: str
    at: int
    hi: int
    stop: int
    status: str
    ended: bool
    perfect: bool
    fill: re.Match


class Objects:
    """The predicate side of the reader."""

    if TYPE_CHECKING:  # the subject side's (subjects.py), the other half of reader.py's _Reader
        known: Mapping[str, str] | None

        def known_type(self, name: str) -> str | None: ...
        def clause_start(self, s: str, lo: int, pos: int) -> int: ...
        def clause_end(self, s: str, pos: int, hi: int) -> int: ...
        def first_block(self, a: int, b: int) -> int | None: ...
        def introduce(self, name: str, word: str | None) -> None: ...
        def emit(
            self,
            subject: str | None,
            predicate: str,
            a: int,
            b: int,
            ended: bool = False,
            offset: int = 0,
            value: str | None = None,
        ) -> None: ...

    def name_at(self, s: str, pos: int, kind: str) -> tuple[int, int] | None:
        """A name (place, organisation, person) starting at `pos`: capitalised words (a leading "the" dropped),
        or a known name in any case."""
        m = _THE.match(s, pos)
        at = m.end() if m else pos
        m = NAME_RX.match(s, at)
        if m:
            end = m.end()
            name = s[at:end]
            if kind == "person" and name.endswith(("'s", "’s")):
                end -= 2
                name = name[:-2]
            name = name.rstrip(".")
            end = at + len(name)
            if kind != "person" and MODIFIED.match(s, end):
                return None  # "at the Berlin office", "in the London area"
            first = name.split()[0].casefold()
            if fold(name) in TIME_WORDS or (len(name.split()) == 1 and ordinary(name) and kind != "person"):
                return None
            if first in ("i", "i'm", "i've", "i'd", "i'll"):
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

    def things_at(self, s: str, pos: int, stop: int) -> list[tuple[int, int]]:
        """Coordinated noun or gerund phrases from `pos` ("hiking and climbing", "jazz, sushi and long walks").
        A phrase followed by a verb is a clause's subject ("the effects are so cool"), not an object: it and
        what follows are left out."""
        out = []
        while True:
            m = THING.match(s, pos, stop)
            if not m:
                break
            a, b = m.span("o")
            phrase = re.sub(r"(?:[ \t]+(?i:of))+$", "", s[a:b])  # "awesome food of this city": "awesome food"
            b = a + len(phrase)
            words = phrase.casefold().split()
            if (
                not words
                or not words[0][0].isalpha()
                or "'" in words[0]
                or "’" in words[0]
                or words[0] in VAGUE
                or " ".join(words[:2]) in VAGUE
                or words[-1] in VAGUE
                or phrase.casefold() in LIGHT
                or CLAUSE_AFTER.match(s, b, stop)
            ):
                break
            if len(words) == 1 and words[0].endswith("ing") and PRONOUN_AFTER.match(s, b, stop):
                break  # "I like holding them"
            nxt = compiled(r"[ \t]+(?:and|or|&)[ \t]+([\w'’-]+(?:[ \t]+[\w'’-]+)?)").match(s, b, stop)
            if nxt and f"{phrase} and {nxt.group(1)}".casefold() in BINOMIALS:
                b = nxt.end()
            out.append((a, b))
            pos = b
            more = compiled(r"[ \t]*(?:,[ \t]*(?:and[ \t]+|or[ \t]+)?|[ \t]+(?:and|or|&)[ \t]+)").match(s, pos, stop)
            if not more:
                break
            after = more.end()
            if verb_at(s, after) is not None or ANCHOR_HERE.match(s, after):
                break  # "and hate running", "and I ...": another clause, not another object
            pos = after
        return out

    def predicates(self, s: str, subj: Subject, lo: int, hi: int) -> int:
        """The verb phrases after a subject, and those coordinated with them; returns where reading stopped."""
        clause = -1  # where the subject's clause starts: found once a verb is
        pos, first = subj.end, True
        while True:
            fill = FILL.match(s, pos, hi)
            assert fill is not None  # FILL matches the empty string too
            at = fill.end()
            found = verb_at(s, at, fill)
            if found is None:
                if first and fill.group("be") is not None:
                    found = self.be_phrase(s, at, hi)
                if found is None:
                    return pos
            kind, vend = found
            verb_start = at
            if clause < 0:
                clause = self.clause_start(s, lo, subj.start)
            status = self.status(s, clause, subj, verb_start, hi)
            end = self.objects(s, subj, kind, vend, status, fill, hi)
            if end is None:
                return pos
            pos = end
            first = False
            more = AND_VERB.match(s, pos, hi)
            if not more:
                return pos
            nxt = FILL.match(s, more.end(), hi)
            assert nxt is not None
            if verb_at(s, nxt.end(), nxt) is None:
                return pos
            pos = more.end()

    def be_phrase(self, s: str, at: int, hi: int) -> tuple[str, int] | None:
        """After "I'm" / "is": "a nurse", "a student at", "into climbing", "a huge fan of"."""
        for kind in ("student", "likes_be"):
            m = VERB_BY_KIND[kind].match(s, at, hi)
            if m:
                return kind, m.end()
        if BE_TITLE.match(s, at, hi):
            return "title_be", at
        return None

    def status(self, s: str, clause: int, subj: Subject, verb_start: int, hi: int) -> str:
        """ "ok", "ended" (no longer / not ... anymore) or "skip" for the words from the clause start to the verb
        (the subject's own words aside: "my husband Will", "my aunt May")."""
        fill = s[max(subj.end, clause) : verb_start]
        first = self.first_block(clause, subj.start)
        if first is None and not BLOCK.search(fill):
            return "ok"
        # the clause from the word of its first blocking word on: what comes before it blocks nothing (the
        # sentence's blocking words are found once: searching the whole clause again for every subject of a
        # long one was quadratic)
        start = clause if first is None else max(clause, s.rfind(" ", max(clause, first - 24), first) + 1)
        before = s[start : subj.start] + " " + fill
        if BLOCK.search(before):
            if NEG_ONLY.search(before) and not BLOCK.search(NEG_ONLY.sub(" ", before)):
                end = self.clause_end(s, verb_start, hi)
                if ANYMORE.search(s, verb_start, end) or re.search(r"\bno\s+longer\b", before, re.IGNORECASE):
                    return "ended"
            return "skip"
        return "ok"

    def objects(
        self, s: str, subj: Subject, kind: str, at: int, status: str, fill: re.Match[str], hi: int
    ) -> int | None:
        """Read the object(s) of one verb phrase; emit its relations unless `status` is "skip". Returns where
        the phrase ends, None when it has no object the tier takes."""
        perfect = fill.group("have") is not None
        subjects = subj.names
        if subj.kind == "we" and kind not in WE_KINDS:
            status = "skip"
        if subj.kind == "unknown" and kind not in UNKNOWN_NAME_KINDS:
            status = "skip"
        ended = status == "ended"
        stop = self.clause_end(s, at, hi)
        c = _Phrase(s, subjects, kind, at, hi, stop, status, ended, perfect, fill)
        for kinds, read in _READERS:
            if kind in kinds:
                return read(self, c)
        return None

    def _places(self, c: _Phrase) -> int | None:
        s, subjects, kind, at, hi, stop, status, ended, perfect, fill = c
        span = self.name_at(s, at, "place")
        if span is None:
            inner = PLACE_INNER.match(s, at, stop)
            span = self.name_at(s, inner.end(), "place") if inner and kind != "born" else None
        if span is None:
            return None
        span = self.corrected(s, span, "place", hi)
        if (kind == "lives_past" and not perfect) or kind == "lives_used":
            ended = True
        pred = "born_in" if kind == "born" else "lives_in"
        self.emit_all(subjects, pred, span, ended, status)
        return span[1]

    def _moved_from(self, c: _Phrase) -> int | None:
        s, subjects, kind, at, hi, stop, status, ended, perfect, fill = c
        first = self.name_at(s, at, "place")
        if first is None:
            return None
        to = compiled(r"[ \t]+(?:to|into)[ \t]+").match(s, first[1], hi)
        second = self.name_at(s, to.end(), "place") if to else None
        self.emit_all(subjects, "lives_in", first, True, status)
        if second is not None:
            second = self.corrected(s, second, "place", hi)
            self.emit_all(subjects, "lives_in", second, ended, status)
            return second[1]
        return first[1]

    def _organisations(self, c: _Phrase) -> int | None:
        s, subjects, kind, at, hi, stop, status, ended, perfect, fill = c
        span = self.name_at(s, at, "organisation")
        if span is None:
            return None
        name = s[span[0] : span[1]]
        if kind == "joined" and (
            name.casefold() in PLATFORMS
            or compiled(
                r"[ \t]+(?i:group|club|team|class|community|forum|gym|league|server|channel|program|band|choir|"
                r"crew|chat)\b"
            ).match(s, span[1], hi)
        ):
            return None
        if kind == "left" and not self.left_job(s, name, span[1], hi):
            return None
        span = self.corrected(s, span, "organisation", hi)
        if kind in ("quit", "laid_off", "left", "works_used") or (
            kind in ("works_past", "studies_past") and not perfect
        ):
            ended = True
        if kind in ("works", "joined") and self.progressive(s, at, fill) and FUTURE.search(s, span[1], stop):
            status = "skip"
        pred = "studies_at" if kind in ("studies", "studies_past", "student") else "works_at"
        self.emit_all(subjects, pred, span, ended, status)
        return span[1]

    def _titles(self, c: _Phrase) -> int | None:
        s, subjects, kind, at, hi, stop, status, ended, perfect, fill = c
        m = TITLE_ANY.match(s, at, hi) if kind == "title" else BE_TITLE.match(s, at, hi)
        if not m or any(w in NOT_JOB for w in m.group("o").casefold().split()[:-1]):
            return None
        if kind == "title_be" and fill.group("be") and fill.group("be").casefold() in ("was", "were") and not perfect:
            ended = True
        if kind == "title" and self.progressive(s, at, fill) and FUTURE.search(s, m.end(), stop):
            status = "skip"
        self.emit_all(subjects, "job_title", m.span("o"), ended, status)
        end = m.end()
        then = THEN_AT.match(s, end, hi)
        if then:
            span = self.name_at(s, then.end(), "organisation")
            if span is not None:
                self.emit_all(subjects, "works_at", span, ended, status)
                return span[1]
        based = THEN_BASED.match(s, end, hi)
        if based:
            span = self.name_at(s, based.end(), "place")
            if span is not None:
                self.emit_all(subjects, "lives_in", span, ended, status)
                return span[1]
        return end

    def _partners(self, c: _Phrase) -> int | None:
        s, subjects, kind, at, hi, stop, status, ended, perfect, fill = c
        span = self.name_at(s, at, "person")
        if span is None or s[span[0] : span[1]].split()[0].casefold() in ("him", "her", "them"):
            return None
        self.emit_all(subjects, "partner", span, ended or kind == "divorced", status)
        for n in subjects:
            if n is None:
                self.introduce(s[span[0] : span[1]], None)
        return span[1]

    def _pets(self, c: _Phrase) -> int | None:
        s, subjects, kind, at, hi, stop, status, ended, perfect, fill = c
        names = []
        m = PET_NAMES.match(s, at, hi)
        if m:
            names.append(m.span("o"))
            pos = m.end()
            while (more := AND_NAME.match(s, pos, hi)) is not None:
                names.append(more.span("o"))
                pos = more.end()
        else:
            later = NAMED_LATER.match(s, at, hi)
            if later:
                names.append(later.span("o"))
        names = [(a, b) for a, b in names if not ordinary(s[a:b].split()[0])]
        if not names:
            return None
        for span in names:
            self.emit_all(subjects, "has_pet", span, ended, status)
        return names[-1][1]

    def _things(self, c: _Phrase) -> int | None:
        s, subjects, kind, at, hi, stop, status, ended, perfect, fill = c
        things = self.things_at(s, at, stop)
        if not things:
            return None
        pred = "dislikes" if kind == "dislikes" else "likes"
        for span in things:
            self.emit_all(subjects, pred, span, ended or kind == "likes_used", status)
        return things[-1][1]

    def _born_on(self, c: _Phrase) -> int | None:
        s, subjects, kind, at, hi, stop, status, ended, perfect, fill = c
        d = DATE.match(s, at, hi)
        if not d:
            return None
        self.emit_all(subjects, "birthday", d.span(), False, status)
        return d.end()
        return None

    def progressive(self, s: str, at: int, fill: re.Match[str]) -> bool:
        words = s[max(0, at - 40) : at].split()
        return bool(words) and any(w.casefold().endswith("ing") for w in words[-3:])

    def left_job(self, s: str, name: str, end: int, hi: int) -> bool:
        """ "left X" is a job only for a known organisation or when a job follows ("left X and joined Y")."""
        if self.known_type(name) == "organisation":
            return True
        return bool(
            compiled(
                r"[ \t]+(?:(?:and|to)[ \t]+(?:\w+[ \t]+)?(?:join|joined|start|started|work|working)\b|"
                r"for[ \t]+[A-Z])"
            ).match(s, end, hi)
        )

    def corrected(self, s: str, span: tuple[int, int], kind: str, hi: int) -> tuple[int, int]:
        """ "I moved to Lisbon, no wait, Porto": the name after the correction."""
        m = CORRECTION.match(s, span[1], hi)
        if m and m.end() > span[1]:
            other = self.name_at(s, m.end(), kind)
            if other is not None:
                return self.corrected(s, other, kind, hi)
        return span

    def emit_all(self, subjects: list[str | None], pred: str, span: tuple[int, int], ended: bool, status: str) -> None:
        if status == "skip":
            return
        for subject in subjects:
            self.emit(subject, pred, *span, ended=ended or status == "ended")


# verb kinds -> the method that reads their objects
_READERS = [
    (("lives", "lives_past", "lives_used", "born"), Objects._places),
    (("moved_from",), Objects._moved_from),
    (
        (
            "works",
            "works_past",
            "works_used",
            "joined",
            "quit",
            "laid_off",
            "left",
            "studies",
            "studies_past",
            "student",
        ),
        Objects._organisations,
    ),
    (("title", "title_be"), Objects._titles),
    (("married", "divorced"), Objects._partners),
    (("has_pet",), Objects._pets),
    (("likes", "likes_be", "likes_used", "dislikes"), Objects._things),
    (("born_on",), Objects._born_on),
]
