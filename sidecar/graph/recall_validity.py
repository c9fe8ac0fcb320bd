"""Recall by validity, pure: whether a question asks what is true now or what was true before, which
relations it asks about, and so which episodes recall ranks first (those stating the relations valid
when the question asks) and which it ranks below them (those stating the others).

- **The present**: "now", "currently", "these days", "at the moment", "still", ...; or, with no such
  word, a present-tense question about a relation ("where does Sam live?", "what's her job?").
- **The past**: "before", "used to", "previously", "formerly", "my old job", ...; or a past-tense
  question about a relation ("where did Sam live?"; but "where did Sam move to?" asks for the
  destination: the present).
- **A time the question names** ("in 2022", "last year", "as of May 2023": messages/timewords.py,
  read by the caller): the relations valid at some point inside it.
- Words of both the present and the past ("where does Sam live now, and where before?"): both are
  asked for, neither ranks above the other (with a relation word, the episodes of both seed recall);
  nothing is reordered when the question names no relation word and no time word.

Which relations: those of the predicates the question's words point at ("live", "moved", "home" ->
lives_in; "work", "job" -> works_at and job_title; ...), or every predicate when it names none; of the
people it names that have relations, else of the user themself (the entity with the alias "me"). A
question about a known person with no relation answers nothing here (the user's own home is not an
answer to "where does Ana live now?"). Within one subject and predicate, only when both kinds exist
(a current and a closed relation) is anything reordered: a user who only ever lived in Paris has no
"before", and one whose relations were all closed has nothing current, so recall ranks as without
this.

In the other languages with a lexicon (graph/lang/) their own words of the present, the past and the predicates
("Wo wohnt Lena jetzt?", "¿Dónde vivía antes?", "她以前住在哪里？"), read when the question is in that language
and names one of them (else the English reading, for an English line the detector took for another language);
in a language with no lexicon nothing is reordered.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter

from .lang import language, lexicon
from .lang.types import Validity
from .model import UserGraph
from .records import Relation
from .relations import AS_FACT, PREDICATES

PRESENT, PAST, BOTH = "present", "past", "both"
SEEDED_PER_RELATION = 5  # a relation stated again and again: its latest episodes seed recall

_PRESENT_WORDS = re.compile(
    r"\b(?:now|nowadays|currently|current|these days|at the moment|at present|presently|"
    r"right now|still|anymore|any more|today|latest|new)\b"
)
_PAST_WORDS = re.compile(
    r"\b(?:before|used to|use to|previously|previous|formerly|former|earlier|in the past|"
    r"back then|back in|back when|originally|prior)\b|(?<!how )\bold\b"
)
# a relation word's tense, from the auxiliary before it or its own form ("'s" is also a possessive: weaker)
_PRESENT_AUX = re.compile(r"\b(?:does|do|is|are|am|has|have|lives|works|studies|living|working|studying)\b")
_PAST_AUX = re.compile(r"\b(?:did|was|were|had|lived|worked|studied)\b")
_MOVED_TO = re.compile(r"\b(?:move|moved|moving|relocate|relocated|relocating)\s+(?:back\s+)?(?:to|into)\b")
_MOVED_FROM = re.compile(r"\b(?:move|moved|moving|relocate|relocated|relocating)\s+(?:away\s+)?from\b")

# the words of a question that point at a predicate (relations.py's names): the first tuple names it plainly
# (a tense alone is read with these), the second only with a word of time ("his old office", "home now")
_PREDICATE_WORDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "lives_in": (
        (
            "live",
            "lives",
            "living",
            "lived",
            "reside",
            "resides",
            "residing",
            "resided",
            "move",
            "moved",
            "moving",
            "relocate",
            "relocated",
            "based",
        ),
        ("home", "city", "town", "country", "address", "apartment", "flat", "house", "place"),
    ),
    "works_at": (
        ("work", "works", "working", "worked", "job", "jobs", "employer", "employed", "hired", "joined", "quit"),
        ("company", "office", "firm", "boss", "colleague", "colleagues", "workplace"),
    ),
    "job_title": (
        ("job", "jobs", "profession", "occupation", "career", "for a living", "work as", "works as", "worked as"),
        ("role", "position", "title"),
    ),
    "studies_at": (
        ("study", "studies", "studying", "studied", "school", "university", "college", "student", "enrolled"),
        ("uni", "degree", "major"),
    ),
    "partner": (
        (
            "partner",
            "wife",
            "husband",
            "girlfriend",
            "boyfriend",
            "married",
            "marry",
            "dating",
            "spouse",
            "fiance",
            "fiancé",
            "fiancee",
            "fiancée",
        ),
        ("seeing",),
    ),
}


def _words(ws: Iterable[str]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in sorted(ws, key=len, reverse=True)) + r")\b")


_PLAIN = {p: _words(plain) for p, (plain, _weak) in _PREDICATE_WORDS.items()}
_ANY = {p: _words(plain + weak) for p, (plain, weak) in _PREDICATE_WORDS.items()}


def _fold(question: str) -> str:
    return question.casefold().replace("’", "'")


def _words_of(question: str) -> Validity | None:
    """The validity words of the question's language, when it has a lexicon with them and is not English."""
    lex = lexicon(language(question))
    return lex.validity if lex is not None else None


def _theirs(v: Validity, q: str) -> tuple[set[str], str | None]:
    asked = {p for p, rx in v.predicates.items() if rx.search(q)}
    present, past = bool(v.present.search(q)), bool(v.past.search(q))
    return asked, (BOTH if present and past else PRESENT if present else PAST if past else None)


def predicates(question: str, plain: bool = False) -> set[str]:
    """The predicates the question's words point at (empty: it names none); `plain`: only by the words
    that name one plainly ("live", "job"), not those that only hint at one ("home", "office")."""
    q = _fold(question)
    v = _words_of(q)
    if v is not None and (found := _theirs(v, q)) != (set(), None):
        return found[0]
    return {p for p, rx in (_PLAIN if plain else _ANY).items() if rx.search(q)}


def tense(question: str) -> str | None:
    """PRESENT, PAST, BOTH (words of both) or None (neither)."""
    q = _fold(question)
    v = _words_of(q)
    if v is not None and (found := _theirs(v, q)) != (set(), None):
        return found[1]
    present, past = bool(_PRESENT_WORDS.search(q)), bool(_PAST_WORDS.search(q))
    if present or past:
        return BOTH if present and past else PRESENT if present else PAST
    if not predicates(q, plain=True):
        return None  # a tense alone ("what did we do?") says nothing of validity
    if _MOVED_TO.search(q) and not _MOVED_FROM.search(q):
        return PRESENT  # "where did she move to?": the destination, what is true since
    past = bool(_PAST_AUX.search(q) or _MOVED_FROM.search(q))
    present = bool(_PRESENT_AUX.search(q)) or ("'s " in q and not past)
    return PRESENT if present and not past else PAST if past and not present else None


def _valid(r: Relation, when: str | tuple[float, float]) -> bool:
    if when == PRESENT:
        return r.valid_to is None
    if when == PAST:
        return r.valid_to is not None
    assert not isinstance(when, str)  # (BOTH is never asked here)
    start, end = when  # valid at some point inside the window
    return r.valid_from <= end and (r.valid_to is None or r.valid_to > start)


def _subjects(g: UserGraph, named: Iterable[str], by_subject: Mapping[str, list[Relation]]) -> set[str]:
    me = g.by_key.get("me")
    people = {n for n in named if n in g.entities and g.entities[n].type == "person" and n != me}
    if people:  # the question is about someone the user knows: their relations, or none
        return {n for n in people if n in by_subject}
    if me is not None and me in by_subject:
        return {me}
    return set(by_subject)


@dataclass
class Order:
    """What recall does with a question's validity: `favoured` episodes (those stating the relations valid
    when it asks; each relation's latest SEEDED_PER_RELATION) rank above the `disfavoured` ones (those
    stating the other relations of the same subject and predicate); with `seed`, the favoured ones also
    seed recall (the question names the relation, so they answer it even when unlike it in words)."""

    favoured: set[str] = field(default_factory=set)
    disfavoured: set[str] = field(default_factory=set)
    seed: bool = False

    def __bool__(self) -> bool:
        return bool(self.favoured and (self.disfavoured or self.seed))


def order(g: UserGraph, question: str, named: Iterable[str], window: tuple[float, float] | None) -> Order:
    """The order by validity of the user's episodes for this question (empty: none)."""
    when: str | tuple[float, float] | None = window if window is not None else tense(question)
    if when is None or not g.relations:
        return Order()
    asked = predicates(question)
    by_subject: dict[str, list[Relation]] = {}
    for r in g.relations.values():
        if not asked or r.predicate in asked:
            by_subject.setdefault(r.subject_id, []).append(r)
    favoured: set[str] = set()
    disfavoured: set[str] = set()
    for subject in _subjects(g, named, by_subject):
        groups: dict[str, list[Relation]] = {}
        for r in by_subject[subject]:
            groups.setdefault(r.predicate, []).append(r)
        for rels in groups.values():
            good = [r for r in rels if when == BOTH or _valid(r, when)]
            if (when == BOTH and all(r.valid_to is None for r in rels)) or (
                when != BOTH and len(good) in (0, len(rels))
            ):
                continue  # one kind only: nothing to rank above anything
            for r in good:
                stated = sorted((e for e in r.episode_ids if e in g.episodes), key=lambda e: -g.episodes[e].ts)
                favoured.update(stated[:SEEDED_PER_RELATION])
            kept = {r.id for r in good}
            disfavoured.update(e for r in rels if r.id not in kept for e in r.episode_ids if e in g.episodes)
    if when == BOTH and not asked:
        return Order()  # "what's new now compared to before?": nothing to seed, nothing to rank below
    return Order(favoured, disfavoured - favoured, bool(asked)) if favoured else Order()


def rank_below(
    scores: dict[str, float], favoured: set[str], disfavoured: set[str], factor: float, lift: bool = False
) -> dict[str, float]:
    """Scores with every disfavoured key capped below the lowest favoured one (times `factor`), so what the
    question asks for ranks above what it does not; `lift`: the favoured ones also rise to the best score
    (the question names the relation: the episodes stating it answer it; the caller breaks the tie in
    their favour). Other scores are left as they are."""
    floor = min((scores[k] for k in favoured if k in scores), default=None)
    if floor is None:
        return scores
    out = {k: min(v, floor * factor) if k in disfavoured else v for k, v in scores.items()}
    if lift:
        top = max(out.values())
        out = {k: max(v, top) if k in favoured else v for k, v in out.items()}
    return out


# ---------------------------------------------------------------- what is true now (context)

# predicates whose value changes over a life: their sentence carries the time it has been true since
CHANGING = ("lives_in", "works_at", "job_title", "studies_at", "partner")
_WORD = re.compile(r"\w+")
_FROM = attrgetter("valid_from")
_VERB_FIRST = re.compile(r"^(?:Lives|Works|Studies|Has|Is|Likes|Dislikes|Was)\b")


def sentence(predicate: str, obj: str, subject: str | None = None, words: Validity | None = None) -> str:
    """A relation as a plain sentence: about the user with no name ("Lives in Paris", relations.AS_FACT),
    about someone else with theirs ("Ana lives in Rome", "Ana's partner is Tom"); `words`: in that language's
    sentences ("Wohnt in Köln", "Lena wohnt in Köln", "Lena: Schwester: Anna")."""
    if words is not None and predicate in words.sentences:
        if subject is None:
            return words.sentences[predicate].format(o=obj)
        if predicate in words.others:
            return words.others[predicate].format(s=subject, o=obj)
        return f"{subject}: {words.sentences[predicate].format(o=obj)}"
    template = AS_FACT.get(predicate)
    text = template.format(obj) if template else f"{predicate.replace('_', ' ').capitalize()}: {obj}"
    if subject is None:
        return text
    if _VERB_FIRST.match(text):
        return f"{subject} {text[0].lower()}{text[1:]}"
    return f"{subject}'s {text[0].lower()}{text[1:]}"


def _said_in(g: UserGraph, folded: str) -> Validity | None:
    """The words "what is true now" is said in: the language most of the user's memories built this run are in,
    else the text's; None (English) when that language has no sentences of its own."""
    if g.languages:
        lex = lexicon(max(g.languages, key=lambda code: (g.languages[code], code == "en")))
        return lex.validity if lex is not None else None
    return _words_of(folded) if folded else None


def true_now(g: UserGraph, text: str | None, named: Iterable[str], limit: int) -> list[dict[str, object]]:
    """The user's current relations (and those of the people `text` names), as `context` shows them:
    {sentence, object, predicate, since (None: a relation whose start says nothing, a sister), fact_id},
    at most `limit`. First the relations the text asks about (validity.predicates) or whose object it
    names, then those that change over a life (where they live, work, study, their partner), then the rest,
    each kind most recently stated first. The sentences are in the language of the user's memories (those built
    since the start; else the text's) when it has a lexicon with sentences, English otherwise."""
    if limit <= 0 or not g.relations:
        return []
    me = g.by_key.get("me")
    named = set(named)
    others = {n for n in named if n != me and n in g.entities and g.entities[n].type == "person"}
    asked = predicates(text) if text else set()
    folded = _fold(text) if text else ""
    language_words = _said_in(g, folded)
    words = " " + " ".join(_WORD.findall(folded)) + " "
    rank = {p: i for i, p in enumerate(dict.fromkeys((*CHANGING, *PREDICATES)))}
    groups: dict[tuple[str, bool], list[Relation]] = {}
    for r in g.relations.values():
        if r.valid_to is None and (r.subject_id == me or r.subject_id in others):
            groups.setdefault((r.predicate, r.subject_id == me), []).append(r)

    def obj(r: Relation) -> str:
        entity = g.entities.get(r.object_id) if r.object_id else None
        return entity.name if entity is not None else r.object_value

    def named_obj(r: Relation) -> bool:  # the text names the object, as whole words
        return f" {' '.join(_WORD.findall(obj(r).casefold()))} " in words

    # the candidates: each group's latest `limit`, and those whose object the text may name (cheap tests first:
    # 10,000 relations of one user are looked at in a few milliseconds)
    pool = {r.id: r for rels in groups.values() for r in heapq.nlargest(limit, rels, key=_FROM)}
    if folded:
        pool.update(
            (r.id, r)
            for rels in groups.values()
            for r in rels
            if (r.object_id in named or r.object_value.casefold() in folded) and named_obj(r)
        )
    hits = {rid for rid, r in pool.items() if folded and named_obj(r)}

    def key(r: Relation) -> tuple:
        return (
            r.predicate not in asked and r.id not in hits,
            r.subject_id != me,
            rank.get(r.predicate, len(rank)),
            -r.valid_from,
            r.id,
        )

    out: list[dict[str, object]] = []
    for r in sorted(pool.values(), key=key)[:limit]:
        subject = (
            None if r.subject_id == me else (g.entities[r.subject_id].name if r.subject_id in g.entities else None)
        )
        if r.subject_id != me and subject is None:
            continue  # a relation of an entity gone meanwhile: nothing to say it of
        out.append(
            {
                "sentence": sentence(r.predicate, obj(r), subject, language_words),
                "object": obj(r),
                "predicate": r.predicate,
                "since": r.valid_from if r.predicate in CHANGING else None,
                "fact_id": r.fact_id,
            }
        )
    return out
