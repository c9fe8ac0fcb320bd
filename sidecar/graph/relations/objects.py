"""Reading what a subject says: the verb phrase, whether it holds (negations, hypotheticals, reported
speech, "no longer"), its objects and those coordinated with them, corrections. Every word comes from the
language's grammar (`r.g`); a verb's kind (lives, works_past, quit, ...) names how its objects are read (pure)."""

from __future__ import annotations

import re
from collections.abc import Callable

from .clauses import verb_at
from .state import Phrase, Reading, Subject


def things_at(r: Reading, s: str, pos: int, stop: int) -> list[tuple[int, int]]:
    """Coordinated noun or gerund phrases from `pos` ("hiking and climbing", "jazz, sushi and long walks").
    A phrase followed by a verb is a clause's subject ("the effects are so cool"), not an object: it and
    what follows are left out."""
    out = []
    while True:
        m = r.g.thing.match(s, pos, stop)
        if not m:
            break
        a, b = m.span("o")
        phrase = r.g.thing_tail.sub("", s[a:b])  # "awesome food of this city": "awesome food"
        b = a + len(phrase)
        words = phrase.casefold().split()
        if (
            not words
            or not words[0][0].isalpha()
            or "'" in words[0]
            or "’" in words[0]
            or words[0] in r.g.vague
            or " ".join(words[:2]) in r.g.vague
            or words[-1] in r.g.vague
            or phrase.casefold() in r.g.light
            or r.g.clause_after.match(s, b, stop)
        ):
            break
        if len(words) == 1 and words[0].endswith(r.g.gerund) and r.g.pronoun_after.match(s, b, stop):
            break  # "I like holding them"
        nxt = r.g.thing_pair.match(s, b, stop)
        if nxt and f"{phrase} {r.g.and_word} {nxt.group(1)}".casefold() in r.g.binomials:
            b = nxt.end()
        out.append((a, b))
        pos = b
        more = r.g.thing_more.match(s, pos, stop)
        if not more:
            break
        after = more.end()
        if verb_at(r.g, s, after) is not None or r.g.anchor_here.match(s, after):
            break  # "and hate running", "and I ...": another clause, not another object
        pos = after
    return out


def predicates(r: Reading, s: str, subj: Subject, lo: int, hi: int) -> int:
    """The verb phrases after a subject, and those coordinated with them; returns where reading stopped."""
    clause = -1  # where the subject's clause starts: found once a verb is
    pos, first = subj.end, True
    while True:
        fill = r.g.fill.match(s, pos, hi)
        assert fill is not None  # the fill pattern matches the empty string too
        at = fill.end()
        found = verb_at(r.g, s, at, fill)
        if found is None:
            if first and fill.group("be") is not None:
                found = be_phrase(r, s, at, hi)
            if found is None:
                return pos
        kind, vend = found
        verb_start = at
        if clause < 0:
            clause = r.clause_start(s, lo, subj.start)
        status = holds(r, s, clause, subj, verb_start, hi)
        end = objects(r, s, subj, kind, vend, status, fill, hi)
        if end is None:
            return pos
        pos = end
        first = False
        more = r.g.and_verb.match(s, pos, hi)
        if not more:
            return pos
        nxt = r.g.fill.match(s, more.end(), hi)
        assert nxt is not None
        if verb_at(r.g, s, nxt.end(), nxt) is None:
            return pos
        pos = more.end()


def be_phrase(r: Reading, s: str, at: int, hi: int) -> tuple[str, int] | None:
    """After "I'm" / "is": "a nurse", "a student at", "into climbing", "a huge fan of"."""
    for kind in ("student", "likes_be"):
        m = r.g.verb_by_kind[kind].match(s, at, hi)
        if m:
            return kind, m.end()
    if r.g.be_title.match(s, at, hi):
        return "title_be", at
    return None


def holds(r: Reading, s: str, clause: int, subj: Subject, verb_start: int, hi: int) -> str:
    """ "ok", "ended" (no longer / not ... anymore) or "skip" for the words from the clause start to the verb
    (the subject's own words aside: "my husband Will", "my aunt May")."""
    fill = s[max(subj.end, clause) : verb_start]
    first = r.first_block(clause, subj.start)
    if first is None and not r.g.block.search(fill):
        return "ok"
    # the clause from the word of its first blocking word on: what comes before it blocks nothing (the
    # sentence's blocking words are found once: searching the whole clause again for every subject of a
    # long one was quadratic)
    start = clause if first is None else max(clause, s.rfind(" ", max(clause, first - 24), first) + 1)
    before = s[start : subj.start] + " " + fill
    if r.g.block.search(before):
        if r.g.neg_only.search(before) and not r.g.block.search(r.g.neg_only.sub(" ", before)):
            end = r.clause_end(s, verb_start, hi)
            if r.g.anymore.search(s, verb_start, end) or r.g.no_longer.search(before):
                return "ended"
        return "skip"
    return "ok"


def objects(
    r: Reading, s: str, subj: Subject, kind: str, at: int, status: str, fill: re.Match[str], hi: int
) -> int | None:
    """Read the object(s) of one verb phrase; emit its relations unless `status` is "skip". Returns where
    the phrase ends, None when it has no object the tier takes."""
    perfect = fill.group("have") is not None
    subjects = subj.names
    if subj.kind == "we" and kind not in r.g.we_kinds:
        status = "skip"
    if subj.kind == "unknown" and kind not in r.g.unknown_name_kinds:
        status = "skip"
    ended = status == "ended"
    stop = r.clause_end(s, at, hi)
    c = Phrase(s, subjects, kind, at, hi, stop, status, ended, perfect, fill)
    for kinds, read in _READERS:
        if kind in kinds:
            return read(r, c)
    return None


def _places(r: Reading, c: Phrase) -> int | None:
    span = r.name_at(c.s, c.at, "place")
    if span is None:
        inner = r.g.place_inner.match(c.s, c.at, c.stop)
        span = r.name_at(c.s, inner.end(), "place") if inner and c.kind != "born" else None
    if span is None:
        return None
    span = r.corrected(c.s, span, "place", c.hi)
    if (c.kind == "lives_past" and not c.perfect) or c.kind == "lives_used":
        c.ended = True
    pred = "born_in" if c.kind == "born" else "lives_in"
    r.emit_all(c.subjects, pred, span, c.ended, c.status)
    return span[1]


def _moved_from(r: Reading, c: Phrase) -> int | None:
    first = r.name_at(c.s, c.at, "place")
    if first is None:
        return None
    to = r.g.to_place.match(c.s, first[1], c.hi)
    second = r.name_at(c.s, to.end(), "place") if to else None
    r.emit_all(c.subjects, "lives_in", first, True, c.status)
    if second is not None:
        second = r.corrected(c.s, second, "place", c.hi)
        r.emit_all(c.subjects, "lives_in", second, c.ended, c.status)
        return second[1]
    return first[1]


def _organisations(r: Reading, c: Phrase) -> int | None:
    span = r.name_at(c.s, c.at, "organisation")
    if span is None:
        return None
    name = c.s[span[0] : span[1]]
    if c.kind == "joined" and (name.casefold() in r.g.platforms or r.g.joined_group.match(c.s, span[1], c.hi)):
        return None
    if c.kind == "left" and not left_job(r, c.s, name, span[1], c.hi):
        return None
    span = r.corrected(c.s, span, "organisation", c.hi)
    if c.kind in ("quit", "laid_off", "left", "works_used") or (
        c.kind in ("works_past", "studies_past") and not c.perfect
    ):
        c.ended = True
    if c.kind in ("works", "joined") and progressive(r, c.s, c.at, c.fill) and r.g.future.search(c.s, span[1], c.stop):
        c.status = "skip"
    pred = "studies_at" if c.kind in ("studies", "studies_past", "student") else "works_at"
    r.emit_all(c.subjects, pred, span, c.ended, c.status)
    return span[1]


def _titles(r: Reading, c: Phrase) -> int | None:
    m = r.g.title_any.match(c.s, c.at, c.hi) if c.kind == "title" else r.g.be_title.match(c.s, c.at, c.hi)
    if not m or any(w in r.g.not_job for w in m.group("o").casefold().split()[:-1]):
        return None
    if c.kind == "title_be" and c.fill.group("be") and c.fill.group("be").casefold() in r.g.past_be and not c.perfect:
        c.ended = True
    if c.kind == "title" and progressive(r, c.s, c.at, c.fill) and r.g.future.search(c.s, m.end(), c.stop):
        c.status = "skip"
    r.emit_all(c.subjects, "job_title", m.span("o"), c.ended, c.status)
    end = m.end()
    then = r.g.then_at.match(c.s, end, c.hi)
    if then:
        span = r.name_at(c.s, then.end(), "organisation")
        if span is not None:
            r.emit_all(c.subjects, "works_at", span, c.ended, c.status)
            return span[1]
    based = r.g.then_based.match(c.s, end, c.hi)
    if based:
        span = r.name_at(c.s, based.end(), "place")
        if span is not None:
            r.emit_all(c.subjects, "lives_in", span, c.ended, c.status)
            return span[1]
    return end


def _partners(r: Reading, c: Phrase) -> int | None:
    span = r.name_at(c.s, c.at, "person")
    if span is None or c.s[span[0] : span[1]].split()[0].casefold() in r.g.pronoun_objects:
        return None
    r.emit_all(c.subjects, "partner", span, c.ended or c.kind == "divorced", c.status)
    for n in c.subjects:
        if n is None:
            r.introduce(c.s[span[0] : span[1]], None)
    return span[1]


def _pets(r: Reading, c: Phrase) -> int | None:
    names = []
    m = r.g.pet_names.match(c.s, c.at, c.hi)
    if m:
        names.append(m.span("o"))
        pos = m.end()
        while (more := r.g.and_name.match(c.s, pos, c.hi)) is not None:
            names.append(more.span("o"))
            pos = more.end()
    else:
        later = r.g.named_later.match(c.s, c.at, c.hi)
        if later:
            names.append(later.span("o"))
    names = [(a, b) for a, b in names if not r.ordinary(c.s[a:b].split()[0])]
    if not names:
        return None
    for span in names:
        r.emit_all(c.subjects, "has_pet", span, c.ended, c.status)
    return names[-1][1]


def _things(r: Reading, c: Phrase) -> int | None:
    things = things_at(r, c.s, c.at, c.stop)
    if not things:
        return None
    pred = "dislikes" if c.kind == "dislikes" else "likes"
    for span in things:
        r.emit_all(c.subjects, pred, span, c.ended or c.kind == "likes_used", c.status)
    return things[-1][1]


def _born_on(r: Reading, c: Phrase) -> int | None:
    d = r.g.date.match(c.s, c.at, c.hi)
    if not d:
        return None
    r.emit_all(c.subjects, "birthday", d.span(), False, c.status)
    return d.end()
    return None


def progressive(r: Reading, s: str, at: int, fill: re.Match[str]) -> bool:
    words = s[max(0, at - 40) : at].split()
    return bool(words) and any(w.casefold().endswith(r.g.gerund) for w in words[-3:])


def left_job(r: Reading, s: str, name: str, end: int, hi: int) -> bool:
    """ "left X" is a job only for a known organisation or when a job follows ("left X and joined Y")."""
    if r.known_type(name) == "organisation":
        return True
    return bool(r.g.left_job.match(s, end, hi))


# verb kinds -> the function that reads their objects
_READERS: list[tuple[tuple[str, ...], Callable[[Reading, Phrase], int | None]]] = [
    (("lives", "lives_past", "lives_used", "born"), _places),
    (("moved_from",), _moved_from),
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
        _organisations,
    ),
    (("title", "title_be"), _titles),
    (("married", "divorced"), _partners),
    (("has_pet",), _pets),
    (("likes", "likes_be", "likes_used", "dislikes"), _things),
    (("born_on",), _born_on),
]
