"""Reading a relation's subject: sentences, openers, "I" / "we" / a person introduced ("my sister Alice",
"Ana, my sister,") or known by name, he/she, a subjectless chat line; the introductions' own relations
(pure)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .predicates import FoundRelation
from .words import (
    ANCHORS,
    BARE,
    BARE_START,
    BARE_VERB,
    BE_NEXT,
    BLOCK,
    CLAUSE_END,
    CLAUSE_WINDOW,
    CUTS,
    DATE,
    FILL,
    HE,
    HYPOTHETICAL_START,
    KIN,
    KIN_RX,
    NAME,
    NAME_NEXT,
    OPENERS,
    PERSON_RX,
    QUESTION_START,
    SHE,
    TIME_WORDS,
    compiled,
    conjunction_before,
    dashes_between,
    find_clause_end,
    find_clause_start,
    fold,
    ordinary,
    split_sentences,
    verb_at,
)

# the words after which "X and I" still opens its clause (beside openers and the names of times)
_PAIR_AFTER = frozenset(
    "and but so then now also plus because cause while though although yesterday tonight today recently finally "
    "lately last this next year years week weeks month months weekend night morning evening ago".split()
)


@dataclass
class Subject:
    names: list[str | None]  # None: the speaker
    kind: str  # "i", "we", "person"
    start: int  # where the subject's words start (for the clause check)
    end: int  # where its verb may start


class Subjects:
    """The subject side of the reader (graph/relations/__init__.py puts the two sides together)."""

    if TYPE_CHECKING:  # the predicate side's (objects.py), the other half of reader.py's _Reader

        def predicates(self, s: str, subj: Subject, lo: int, hi: int) -> int: ...

    def __init__(self, text: str, known: Mapping[str, str] | None):
        self.text = text
        self.known = known
        self.out: list[FoundRelation] = []
        self.people: list[tuple[str, str | None]] = []  # persons introduced in this message: (name, "he"/"she"/None)
        self.block_starts: list[int] = []  # the current sentence's blocking words (`BLOCK`): where they start
        self.block_ends: list[int] = []  # and end
        self.span = (0, 0)  # the current sentence; its clauses' punctuation (found once per sentence: `clause_start`)
        self.cuts: list[int] = []  # after each , ; : ( ) — –
        self.dashes: list[int] = []  # after each " - "
        self.ends: list[int] = []  # where each clause end (`CLAUSE_END`) starts

    def clause_start(self, s: str, lo: int, pos: int) -> int:
        """`find_clause_start` from the sentence's punctuation found once (a look-up, not a search back per subject)."""
        if s is not self.text or not (self.span[0] <= lo <= pos <= self.span[1]):
            return find_clause_start(s, lo, pos)
        if pos - lo > CLAUSE_WINDOW:
            space = s.find(" ", pos - CLAUSE_WINDOW, pos)
            lo = space + 1 if space >= 0 else pos - CLAUSE_WINDOW
        i = bisect.bisect_right(self.cuts, pos) - 1
        cut = self.cuts[i] if i >= 0 else 0
        j = bisect.bisect_right(self.dashes, pos) - 1
        cut = max(cut, self.dashes[j] - 1 if j >= 0 else 0, lo)
        return conjunction_before(s, cut, pos)

    def clause_end(self, s: str, pos: int, hi: int) -> int:
        """`find_clause_end` from the sentence's clause ends found once."""
        if s is not self.text or not (self.span[0] <= pos <= hi <= self.span[1]):
            return find_clause_end(s, pos, hi)
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
            obj = re.sub(r"^(?i:the|a|an)\s+", "", obj)
        if not obj:
            return
        self.out.append(FoundRelation(predicate, obj, offset + a, offset + b, subject, ended))

    def introduce(self, name: str, word: str | None) -> None:
        w = (word or "").casefold()
        gender = "she" if w in SHE else "he" if w in HE else None
        self.people = [p for p in self.people if fold(p[0]) != fold(name)] + [(name, gender)]

    def pronoun(self, word: str) -> str | None:
        fits = [n for n, g in self.people if g in (None, word.casefold())]
        return fits[-1] if len(fits) == 1 else None

    def read(self) -> list[FoundRelation]:
        for lo, hi, question in split_sentences(self.text):
            self.sentence(self.text, lo, hi, question)
        return self.out

    def sentence(self, s: str, lo: int, hi: int, question: bool) -> None:
        spans = [m.span() for m in BLOCK.finditer(s, lo, hi)]
        self.block_starts, self.block_ends = [a for a, _ in spans], [b for _, b in spans]
        self.span = (lo, hi)
        self.cuts = [m.end() for m in CUTS.finditer(s, lo, hi)]
        self.dashes = [k + 3 for k in dashes_between(s, lo, hi)]
        self.ends = [m.start() for m in CLAUSE_END.finditer(s, lo, hi)]
        opener = OPENERS.match(s, lo, hi)
        body = opener.end() if opener else lo
        while body < hi and s[body] in " \t\n\"'“(*_~":
            body += 1
        question = question or bool(
            QUESTION_START.match(s, body, hi)
            and not compiled(r"(?i:have|has|had)\s+(?:a|an|two|three|\d+)\b").match(s, body, hi)
        )
        hypothetical = bool(HYPOTHETICAL_START.match(s, body, hi))
        taken = body
        if not question and not hypothetical:
            taken = self.bare(s, body, lo, hi)
        pos = lo
        while (m := ANCHORS.search(s, pos, hi)) is not None:
            pos = m.end()
            if m.group("pair") and " " in m.group("pname") and ordinary(m.group("pname").split()[0]):
                pos = m.start() + len(m.group("pname").split()[0])  # "Yesterday Tom and I": read on from Tom
                continue
            if m.group("pair") and (m.start() < taken or not self.pair_opens(s, lo, m.start())):
                pos = m.end("pname")  # "I moved to Paris and I work at Google": Paris an object, "I" read on its own
                continue
            if m.group("name") and " " in m.group("name") and ordinary(m.group("name").split()[0]):
                pos = m.start() + len(m.group("name").split()[0])  # "Since I ...": read on from the next word
                continue
            if m.start() < taken and not (m.group("kin") or m.group("pet") or m.group("appos")):
                continue
            if m.group("name") and not NAME_NEXT.match(s, m.end(), hi):
                fill = FILL.match(s, m.end(), hi)
                assert fill is not None  # FILL matches the empty string too
                if verb_at(s, fill.end(), fill) is None and (
                    fill.group("be") is None or not BE_NEXT.match(s, fill.end(), hi)
                ):
                    continue
            subject = self.anchor(s, m, lo, hi, question or hypothetical)
            if subject is None or question or hypothetical:
                continue
            taken = max(taken, self.predicates(s, subject, lo, hi))

    def pair_opens(self, s: str, lo: int, at: int) -> bool:
        """Whether "X and I" at `at` is the subject of its clause: nothing before it in the clause but an opener,
        a conjunction or a time ("Yesterday Tom and I ..."); after a verb or a preposition X is its object ("I
        visited Paris and I live in Oslo": not Paris living in Oslo)."""
        clause = self.clause_start(s, lo, at)
        words = s[clause:at].split()
        if not words or OPENERS.fullmatch(s[clause:at].strip()):
            return True
        last = words[-1].casefold().strip("\"'“(*_~")
        return last in _PAIR_AFTER or last in TIME_WORDS or last.isdigit()

    def bare(self, s: str, body: int, lo: int, hi: int) -> int:
        """A chat line without a subject: "Just moved to Dublin!", "Starting as a data analyst at Spotify".
        Returns where its reading stopped (`body` when it is not one)."""
        if not BARE_VERB.match(s, body, hi):
            return body
        m = BARE_START.match(s, body, hi)
        found = verb_at(s, m.end() if m else body)
        if found is None or found[0] not in BARE:
            return body
        return self.predicates(s, Subject([None], "i", body, body), lo, hi)

    def anchor(self, s: str, m: re.Match[str], lo: int, hi: int, blocked: bool) -> Subject | None:
        """The subject a match names (and the relations an introduction states, even in a question: "have you
        met my sister Ana?" still says she is my sister); None when it is not one."""
        if m.group("kin"):
            return self.kin(s, m, hi)
        if m.group("pet"):
            self.pet(s, m, hi)
            return None
        if m.group("bday"):
            if not blocked and self.first_block(self.clause_start(s, lo, m.start()), m.start()) is None:
                self.birthday(s, m.end(), None, hi)
            return None
        if m.group("appos"):
            name, word = m.group("aname"), m.group("akin")
            if ordinary(name.split()[0]):
                km = KIN_RX.match(
                    s,
                    m.start("aname")
                    + s[m.start("aname") : m.end()]
                    .casefold()
                    .rfind("my" if "my" in s[m.start("aname") : m.end()].casefold() else "our"),
                    hi,
                )
                return self.kin(s, km, hi) if km else None
            w = word.casefold()
            if w in KIN:
                self.emit(None, KIN[w], *m.span("aname"), offset=0)
                self.introduce(name, w)
            else:
                self.emit(None, "has_pet", *m.span("aname"))
                return None
            after = compiled(r"[ \t]*,[ \t]*").match(s, m.end(), hi)
            if s[m.start("aname") + len(name) : m.start("aname") + len(name) + 1] == "," and after:
                return Subject([name], "person", m.start(), after.end())
            return None
        if m.group("pair") or m.group("pair2"):
            name = m.group("pname") or m.group("p2name")
            if ordinary(name.split()[0]):
                return None
            return Subject([name, None], "i", m.start(), m.end())
        if m.group("i"):
            if (m.group("ic") or "").casefold().replace("’", "'") in ("'d", "'ll"):
                return None
            end = m.end() if (m.group("ic") or "").casefold().replace("’", "'") in ("", "'s") else m.start("ic")
            return Subject([None], "i", m.start(), end)
        if m.group("we"):
            if (m.group("wec") or "").casefold().replace("’", "'") in ("'d", "'ll"):
                return None
            return Subject([None], "we", m.start(), m.start("wec") if m.group("wec") else m.end())
        if m.group("pron"):
            if (m.group("pc") or "").casefold().replace("’", "'") in ("'d", "'ll"):
                return None
            name = self.pronoun(m.group("pronw"))
            if name is None:
                return None
            return Subject([name], "person", m.start(), m.start("pc") if m.group("pc") else m.end())
        return self.named(s, m.group("name"), m, lo, hi)

    def named(self, s: str, name: str | None, m: re.Match[str], lo: int, hi: int) -> Subject | None:
        """A capitalised name as a subject: a person the graph knows or this message introduced, or (for a few
        unambiguous verbs) an unknown one; "Tom's birthday is ..." states Tom's birthday."""
        if not name or ordinary(name.split()[0]):
            return None
        possessive = name.endswith(("'s", "’s"))
        base = name[:-2] if possessive else name
        t = self.known_type(base) or self.known_type(base.split()[0])
        if t is not None and t != "person":
            return None
        if possessive:
            if t == "person" or any(fold(p) == fold(base) for p, _ in self.people):
                bday = compiled(r"[ \t]+birthday\b").match(s, m.end(), hi)
                if bday and self.first_block(self.clause_start(s, lo, m.start()), m.start()) is None:
                    self.birthday(s, bday.end(), base, hi)
            return None
        known = t == "person" or any(fold(p) == fold(base) for p, _ in self.people)
        return Subject([base], "person" if known else "unknown", m.start(), m.end())

    def kin(self, s: str, m: re.Match[str], hi: int) -> Subject | None:
        word = m.group("kinword").casefold()
        pred = KIN.get(re.sub(r"\s+", " ", word))
        after = m.end()
        named = compiled(
            r"(?:['’]s[ \t]+name[ \t]+is|[ \t]+is[ \t]+(?:called|named)|[ \t]*,?[ \t]+(?:called|named)|"
            r"[ \t]*,)?[ \t]+"
        ).match(s, after, hi)
        if not named:
            return None
        at = named.end()
        people = []
        while True:
            pm = PERSON_RX.match(s, at, hi)
            if not pm:
                break
            name = pm.group(0)
            if name.endswith(("'s", "’s")):
                name = name[:-2]
            if not name or (ordinary(name.split()[0]) and name.split()[0].casefold() not in ("will", "may")):
                break
            people.append((at, at + len(name)))
            at = at + len(name)
            more = compiled(r"[ \t]+(?:and|&)[ \t]+(?=[A-Z])").match(s, at, hi) if m.group("plural") else None
            if not more:
                break
            at = more.end()
        if not people:
            return None
        names: list[str | None] = []
        for a, b in people:
            name = s[a:b]
            if pred is not None:
                self.emit(None, pred, a, b)
            self.introduce(name, word)
            names.append(name)
        end = people[-1][1]
        if s[end : end + 2] in ("'s", "’s"):
            bday = compiled(r"[ \t]+birthday\b").match(s, end + 2, hi)
            if bday:
                self.birthday(s, bday.end(), names[-1], hi)
            return None
        rest = compiled(r"[ \t]*,[ \t]*(?:who[ \t]+)?|[ \t]+who[ \t]+").match(s, end, hi)
        pair = compiled(r"[ \t]+(?:and|&)[ \t]+(?:I|me)\b(?!['’])").match(s, end, hi)
        if pair:
            return Subject([*names, None], "i", m.start(), pair.end())
        if rest and "who" in rest.group(0):
            return Subject(names, "person", m.start(), rest.end())
        if rest:  # "My dad, Frank, was born in Glasgow"
            return Subject(names, "person", m.start(), rest.end())
        return Subject(names, "person", m.start(), end)

    def pet(self, s: str, m: re.Match[str], hi: int) -> None:
        named = compiled(
            rf"(?:['’]s[ \t]+name(?:[ \t]+is|['’]s)|[ \t]+is[ \t]+(?:called|named)|[ \t]*,?[ \t]+"
            rf"(?:called|named)|[ \t]*,)?[ \t]+(?P<o>{NAME})"
        ).match(s, m.end(), hi)
        if not named:
            return
        a, b = named.span("o")
        name = s[a:b]
        if name.endswith(("'s", "’s")):
            b -= 2
        if ordinary(s[a:b].split()[0]):
            return
        self.emit(None, "has_pet", a, b)

    def birthday(self, s: str, pos: int, subject: str | None, hi: int) -> None:
        m = compiled(r"(?:['’]s|[ \t]+(?:is|was))?[ \t]+(?:(?i:on|the)[ \t]+)?").match(s, pos, hi)
        if not m:
            return
        at = m.end()
        d = DATE.match(s, at, hi)
        if d:
            self.emit(subject, "birthday", d.start(), d.end())
