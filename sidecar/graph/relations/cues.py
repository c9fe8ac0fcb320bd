"""Reading relations by cue (every language with a lexicon but English): each of the language's cues matched in
each clause, its object taken from its group, its subject the speaker or the person named or introduced before
it; nothing read in a question, or in a clause with a word that makes it not current (negation, a wish, a
plan, a hypothetical). Matched by pattern, not by words between spaces, so it reads Chinese and Japanese as it
reads German (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..lang.types import Cue, CueGrammar
from .predicates import FoundRelation


@dataclass
class _Person:
    name: str
    start: int  # where its mention starts
    end: int  # and ends (an honorific or a "called" included)
    gender: str | None


class _CueReading:
    """One text read by cue."""

    def __init__(self, text: str, known: Mapping[str, str] | None, g: CueGrammar):
        self.text, self.known, self.g = text, known or {}, g
        self.out: list[FoundRelation] = []
        self.people: list[_Person] = []  # introduced in this message, in order

    def read(self) -> list[FoundRelation]:
        for lo, hi in self.sentences():
            self.sentence(lo, hi)
        # a change and a statement of the same relation in one text ("quit my job at X" reads "job at X" too): the
        # change
        ended = {(r.subject, r.predicate, r.object) for r in self.out if r.ended}
        return [r for r in self.out if r.ended or (r.subject, r.predicate, r.object) not in ended]

    def sentences(self) -> list[tuple[int, int]]:
        out, start = [], 0
        for m in self.g.sentence_end.finditer(self.text):
            out.append((start, m.end()))
            start = m.end()
        if start < len(self.text):
            out.append((start, len(self.text)))
        return out

    def clauses(self, lo: int, hi: int) -> list[tuple[int, int]]:
        out, start = [], lo
        for m in self.g.clause_cut.finditer(self.text, lo, hi):
            out.append((start, m.start()))
            start = m.end()
        out.append((start, hi))
        return out

    def name_ok(self, name: str) -> bool:
        folded = name.casefold()
        if not name or folded in self.g.not_names or folded in self.g.kin or folded in self.g.pronouns:
            return False
        return not self.g.cased or name[0].isupper() or self.known.get(folded) is not None

    def sentence(self, lo: int, hi: int) -> None:
        s, g = self.text, self.g
        mentions: list[_Person] = []
        for rx in g.introductions:  # an introduction says who a person is even in a question
            for m in rx.finditer(s, lo, hi):
                name = g.honorifics.sub("", m.group("n")).strip()
                if not self.name_ok(name):
                    continue
                word = " ".join(m.group("k").casefold().split())
                gender = "she" if word in g.she else "he" if word in g.he else None
                person = _Person(name, m.start(), m.end(), gender)
                if g.kin.get(word):
                    self.emit(None, g.kin[word], m.start("n"), m.start("n") + len(name))
                self.people = [p for p in self.people if p.name != name] + [person]
                mentions.append(person)
        if g.question.search(s, lo, hi):
            return
        for a, b in self.clauses(lo, hi):
            for cue in g.cues:
                for m in cue.pattern.finditer(s, a, b):
                    if g.block.search(s[a : m.start()] + " " + s[m.end() : b]):
                        continue  # "No vivo en Toledo", "もし京都に住んでいたら"
                    self.cue(cue, m.start(), m.start("o"), m.end("o"), lo, a, mentions)

    def cue(self, cue: Cue, at: int, oa: int, ob: int, lo: int, clause: int, mentions: list[_Person]) -> None:
        s, g = self.text, self.g
        obj = s[oa:ob]
        if cue.thing:
            art = g.article.match(obj)
            if art:
                oa, obj = oa + art.end(), obj[art.end() :]
        else:
            obj = g.honorifics.sub("", obj)
            if not self.name_ok(obj) and cue.predicate != "job_title":
                return
        obj = obj.strip(" '’-.,")
        if not obj:
            return
        subject: str | None = None
        if cue.subject != "self":
            person = self.person_before(at, lo, mentions)
            if person is not None:
                subject = person
            elif cue.subject == "person" or not g.self_before.fullmatch(s, clause, at):
                return
        if subject is not None and subject == obj:
            return
        self.emit(subject, cue.predicate, oa, oa + len(obj), cue.ended)

    def person_before(self, at: int, lo: int, mentions: list[_Person]) -> str | None:
        """The person a cue at `at` is about: one introduced, a pronoun for the one introduced, a known person,
        or (where case marks names) a name, right before it (what lies between: the language's `link`)."""
        s, g = self.text, self.g
        for p in reversed(mentions):
            if p.end <= at and g.link.fullmatch(s, p.end, at):
                return p.name
        for e in range(at, max(lo, at - 12) - 1, -1):  # a known person's name, in any script
            if g.link.fullmatch(s, e, at):
                for n in range(1, min(24, e - lo) + 1):
                    if self.known.get(s[e - n : e].casefold()) == "person":
                        return s[e - n : e]
        for m in g.name.finditer(s, lo, at):
            if not g.link.fullmatch(s, m.end(), at):
                continue
            word = m.group(0)
            gender = g.pronouns.get(word.casefold())
            if gender is not None:
                fits = [p.name for p in self.people if p.gender in (None, gender)]
                return fits[-1] if len(fits) == 1 else None
            name = g.honorifics.sub("", word)
            if self.known.get(name.casefold()) == "person" or any(p.name == name for p in self.people):
                return name
            if g.cased and self.name_ok(name) and self.known.get(name.casefold()) in (None, "person"):
                return name
        return None

    def emit(self, subject: str | None, predicate: str, a: int, b: int, ended: bool = False) -> None:
        self.out.append(FoundRelation(predicate, self.text[a:b], a, b, subject, ended))


def read_cues(text: str, known: Mapping[str, str] | None, grammar: CueGrammar) -> list[FoundRelation]:
    """The relations a text states in a language read by cue."""
    return _CueReading(text, known, grammar).read()
