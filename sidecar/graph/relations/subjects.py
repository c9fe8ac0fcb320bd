"""Reading a relation's subject: sentences, openers, "I" / "we" / a person introduced ("my sister Alice",
"Ana, my sister,") or known by name, he/she, a subjectless chat line; the introductions' own relations. Every
word comes from the language's grammar (`r.g`, lang/<code>.py); the predicate side is objects.py (pure)."""

from __future__ import annotations

import re

from .clauses import CUTS, dashes_between, fold, split_sentences, verb_at
from .objects import predicates
from .predicates import FoundRelation
from .state import Reading, Subject


def read(r: Reading) -> list[FoundRelation]:
    for lo, hi, question in split_sentences(r.g, r.text):
        sentence(r, r.text, lo, hi, question)
    return r.out


def sentence(r: Reading, s: str, lo: int, hi: int, question: bool) -> None:
    spans = [m.span() for m in r.g.block.finditer(s, lo, hi)]
    r.block_starts, r.block_ends = [a for a, _ in spans], [b for _, b in spans]
    r.span = (lo, hi)
    r.cuts = [m.end() for m in CUTS.finditer(s, lo, hi)]
    r.dashes = [k + 3 for k in dashes_between(s, lo, hi)]
    r.ends = [m.start() for m in r.g.clause_end.finditer(s, lo, hi)]
    opener = r.g.openers.match(s, lo, hi)
    body = opener.end() if opener else lo
    while body < hi and s[body] in " \t\n\"'“(*_~":
        body += 1
    question = question or bool(r.g.question_start.match(s, body, hi) and not r.g.question_not.match(s, body, hi))
    hypothetical = bool(r.g.hypothetical_start.match(s, body, hi))
    taken = body
    if not question and not hypothetical:
        taken = bare(r, s, body, lo, hi)
    pos = lo
    while (m := r.g.anchors.search(s, pos, hi)) is not None:
        pos = m.end()
        if m.group("pair") and " " in m.group("pname") and r.ordinary(m.group("pname").split()[0]):
            pos = m.start() + len(m.group("pname").split()[0])  # "Yesterday Tom and I": read on from Tom
            continue
        if m.group("pair") and (m.start() < taken or not pair_opens(r, s, lo, m.start())):
            pos = m.end("pname")  # "I moved to Paris and I work at Google": Paris an object, "I" read on its own
            continue
        if m.group("name") and " " in m.group("name") and r.ordinary(m.group("name").split()[0]):
            pos = m.start() + len(m.group("name").split()[0])  # "Since I ...": read on from the next word
            continue
        if m.start() < taken and not (m.group("kin") or m.group("pet") or m.group("appos")):
            continue
        if m.group("name") and not r.g.name_next.match(s, m.end(), hi):
            fill = r.g.fill.match(s, m.end(), hi)
            assert fill is not None  # the fill pattern matches the empty string too
            if verb_at(r.g, s, fill.end(), fill) is None and (
                fill.group("be") is None or not r.g.be_next.match(s, fill.end(), hi)
            ):
                continue
        subject = anchor(r, s, m, lo, hi, question or hypothetical)
        if subject is None or question or hypothetical:
            continue
        taken = max(taken, predicates(r, s, subject, lo, hi))


def pair_opens(r: Reading, s: str, lo: int, at: int) -> bool:
    """Whether "X and I" at `at` is the subject of its clause: nothing before it in the clause but an opener,
    a conjunction or a time ("Yesterday Tom and I ..."); after a verb or a preposition X is its object ("I
    visited Paris and I live in Oslo": not Paris living in Oslo)."""
    clause = r.clause_start(s, lo, at)
    words = s[clause:at].split()
    if not words or r.g.openers.fullmatch(s[clause:at].strip()):
        return True
    last = words[-1].casefold().strip("\"'“(*_~")
    return last in r.g.pair_after or last in r.g.time_words or last.isdigit()


def bare(r: Reading, s: str, body: int, lo: int, hi: int) -> int:
    """A chat line without a subject: "Just moved to Dublin!", "Starting as a data analyst at Spotify".
    Returns where its reading stopped (`body` when it is not one)."""
    if not r.g.bare_verb.match(s, body, hi):
        return body
    m = r.g.bare_start.match(s, body, hi)
    found = verb_at(r.g, s, m.end() if m else body)
    if found is None or found[0] not in r.g.bare:
        return body
    return predicates(r, s, Subject([None], "i", body, body), lo, hi)


def anchor(r: Reading, s: str, m: re.Match[str], lo: int, hi: int, blocked: bool) -> Subject | None:
    """The subject a match names (and the relations an introduction states, even in a question: "have you
    met my sister Ana?" still says she is my sister); None when it is not one."""
    if m.group("kin"):
        return kin(r, s, m, hi)
    if m.group("pet"):
        pet(r, s, m, hi)
        return None
    if m.group("bday"):
        if not blocked and r.first_block(r.clause_start(s, lo, m.start()), m.start()) is None:
            birthday(r, s, m.end(), None, hi)
        return None
    if m.group("appos"):
        name, word = m.group("aname"), m.group("akin")
        if r.ordinary(name.split()[0]):
            km = r.g.kin_rx.match(
                s,
                m.start("aname")
                + s[m.start("aname") : m.end()]
                .casefold()
                .rfind(
                    owner
                    if (owner := r.g.kin_owner[0]) in s[m.start("aname") : m.end()].casefold()
                    else r.g.kin_owner[1]
                ),
                hi,
            )
            return kin(r, s, km, hi) if km else None
        w = word.casefold()
        if w in r.g.kin:
            r.emit(None, r.g.kin[w], *m.span("aname"), offset=0)
            r.introduce(name, w)
        else:
            r.emit(None, "has_pet", *m.span("aname"))
            return None
        after = r.g.comma.match(s, m.end(), hi)
        if s[m.start("aname") + len(name) : m.start("aname") + len(name) + 1] == "," and after:
            return Subject([name], "person", m.start(), after.end())
        return None
    if m.group("pair") or m.group("pair2"):
        name = m.group("pname") or m.group("p2name")
        if r.ordinary(name.split()[0]):
            return None
        return Subject([name, None], "i", m.start(), m.end())
    if m.group("i"):
        if (m.group("ic") or "").casefold().replace("’", "'") in r.g.ignore_contractions:
            return None
        end = m.end() if (m.group("ic") or "").casefold().replace("’", "'") in r.g.subject_keeps else m.start("ic")
        return Subject([None], "i", m.start(), end)
    if m.group("we"):
        if (m.group("wec") or "").casefold().replace("’", "'") in r.g.ignore_contractions:
            return None
        return Subject([None], "we", m.start(), m.start("wec") if m.group("wec") else m.end())
    if m.group("pron"):
        if (m.group("pc") or "").casefold().replace("’", "'") in r.g.ignore_contractions:
            return None
        name = r.pronoun(m.group("pronw"))
        if name is None:
            return None
        return Subject([name], "person", m.start(), m.start("pc") if m.group("pc") else m.end())
    return named(r, s, m.group("name"), m, lo, hi)


def named(r: Reading, s: str, name: str | None, m: re.Match[str], lo: int, hi: int) -> Subject | None:
    """A capitalised name as a subject: a person the graph knows or this message introduced, or (for a few
    unambiguous verbs) an unknown one; "Tom's birthday is ..." states Tom's birthday."""
    if not name or r.ordinary(name.split()[0]):
        return None
    possessive = name.endswith(r.g.possessives)
    base = name[:-2] if possessive else name
    t = r.known_type(base) or r.known_type(base.split()[0])
    if t is not None and t != "person":
        return None
    if possessive:
        if t == "person" or any(fold(p) == fold(base) for p, _ in r.people):
            bday = r.g.birthday_after.match(s, m.end(), hi)
            if bday and r.first_block(r.clause_start(s, lo, m.start()), m.start()) is None:
                birthday(r, s, bday.end(), base, hi)
        return None
    known = t == "person" or any(fold(p) == fold(base) for p, _ in r.people)
    return Subject([base], "person" if known else "unknown", m.start(), m.end())


def kin(r: Reading, s: str, m: re.Match[str], hi: int) -> Subject | None:
    word = m.group("kinword").casefold()
    pred = r.g.kin.get(re.sub(r"\s+", " ", word))
    after = m.end()
    named = r.g.kin_named.match(s, after, hi)
    if not named:
        return None
    at = named.end()
    people = []
    while True:
        pm = r.g.person_rx.match(s, at, hi)
        if not pm:
            break
        name = pm.group(0)
        if name.endswith(r.g.possessives):
            name = name[:-2]
        if not name or (r.ordinary(name.split()[0]) and name.split()[0].casefold() not in r.g.name_words):
            break
        people.append((at, at + len(name)))
        at = at + len(name)
        more = r.g.kin_more.match(s, at, hi) if m.group("plural") else None
        if not more:
            break
        at = more.end()
    if not people:
        return None
    names: list[str | None] = []
    for a, b in people:
        name = s[a:b]
        if pred is not None:
            r.emit(None, pred, a, b)
        r.introduce(name, word)
        names.append(name)
    end = people[-1][1]
    if s[end : end + 2] in r.g.possessives:
        bday = r.g.birthday_after.match(s, end + 2, hi)
        if bday:
            birthday(r, s, bday.end(), names[-1], hi)
        return None
    rest = r.g.kin_rest.match(s, end, hi)
    pair = r.g.kin_pair.match(s, end, hi)
    if pair:
        return Subject([*names, None], "i", m.start(), pair.end())
    if rest:  # "my best friend Priya, who ...", "My dad, Frank, was born in Glasgow"
        return Subject(names, "person", m.start(), rest.end())
    return Subject(names, "person", m.start(), end)


def pet(r: Reading, s: str, m: re.Match[str], hi: int) -> None:
    named = r.g.pet_named.match(s, m.end(), hi)
    if not named:
        return
    a, b = named.span("o")
    name = s[a:b]
    if name.endswith(r.g.possessives):
        b -= 2
    if r.ordinary(s[a:b].split()[0]):
        return
    r.emit(None, "has_pet", a, b)


def birthday(r: Reading, s: str, pos: int, subject: str | None, hi: int) -> None:
    m = r.g.birthday_is.match(s, pos, hi)
    if not m:
        return
    at = m.end()
    d = r.g.date.match(s, at, hi)
    if d:
        r.emit(subject, "birthday", d.start(), d.end())
