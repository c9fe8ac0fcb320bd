"""What a language's lexicon holds (pure data, no words of any language): the clause grammar the relation
reader walks (graph/relations/), the cues it matches in languages read by cue, and the words the rest of the
graph asks of a language (first person, validity, "what is true now")."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

Pattern = re.Pattern[str]


@dataclass(frozen=True)
class ClauseGrammar:
    """A language read clause by clause: subject, the words a subject and its verb may have between them, the
    verb phrase (its kind names how its objects are read: graph/relations/objects.py), its objects. Each
    pattern's named groups are the ones the reader asks for (see lang/en.py, the one language read this way)."""

    # vocabulary
    kin: Mapping[str, str]  # word -> predicate ("sister" -> sister, "wife" -> partner)
    she: frozenset[str]  # kin words that a "she" may refer back to
    he: frozenset[str]
    not_job: frozenset[str]  # modifiers that make "a ___ <job>" something else than a job
    platforms: frozenset[str]  # "joined X" where X is a platform, not an employer
    binomials: frozenset[str]  # "mac and cheese": one object, not two
    vague: frozenset[str]  # a likes/dislikes object that says nothing on its own
    light: frozenset[str]  # light verbs' gerunds ("going", "doing"): no object
    time_words: frozenset[str]
    common: frozenset[str]  # ordinary words: never a name
    pair_after: frozenset[str]  # the words after which "X and I" still opens its clause
    abbreviations: frozenset[str]  # a full stop after one does not end a sentence
    self_words: frozenset[str]  # "i", "i'm": never a name
    pronoun_objects: frozenset[str]  # "him", "her", "them": not a partner's name
    name_words: frozenset[str]  # words that are names too ("will", "may")
    ignore_contractions: frozenset[str]  # "'d", "'ll": a subject whose contraction makes nothing current
    subject_keeps: frozenset[str]  # the contractions that stay part of an "I" ("", "'s")
    and_word: str  # how a binomial is written ("mac and cheese")
    # patterns: names, dates, sentences and clauses
    name: str  # a name's pattern (capitalised words; a script without case)
    name_rx: Pattern
    person_rx: Pattern
    date: Pattern
    sentence_end: Pattern
    clause_end: Pattern
    conjunction_before: Pattern  # a conjunction right before a subject starts its clause
    conjunction_chars: int
    # subjects
    anchors: Pattern  # every subject: kin, pet, birthday, apposition, pair, I, we, he/she, a name
    kin_rx: Pattern
    any_subject: Pattern  # no reading without one of these
    openers: Pattern
    question_start: Pattern
    question_not: Pattern  # a question word that opens a statement ("Have two cats")
    hypothetical_start: Pattern
    bare: frozenset[str]  # verb kinds a chat line without a subject may open with
    bare_verb: Pattern
    bare_start: Pattern
    name_next: Pattern
    be_next: Pattern
    kin_named: Pattern  # "'s name is", ", called"
    kin_more: Pattern  # "and" before another name
    kin_rest: Pattern  # ", who"
    kin_pair: Pattern  # "and I"
    pet_named: Pattern
    birthday_after: Pattern
    birthday_is: Pattern
    comma: Pattern
    possessives: tuple[str, ...]  # "'s" endings
    kin_owner: tuple[str, str]  # "my", "our": where an apposition's kin phrase starts
    we_kinds: frozenset[str]  # verb kinds "we" may take (the household's)
    unknown_name_kinds: frozenset[str]  # verb kinds an unknown name may take
    # between a subject and its verb, and the verb phrases
    fill: Pattern  # groups: have, neg, be, did, now
    verbs: tuple[tuple[str, Pattern], ...]  # (kind, pattern), the first listed first
    be_kinds: tuple[str, ...]  # verb kinds that only follow a form of "to be"
    be_title: Pattern
    title_any: Pattern
    # objects
    the: Pattern  # a leading article before a name
    modified: Pattern  # "the Berlin office": not the name of a place
    place_inner: Pattern
    correction: Pattern
    pet_names: Pattern
    named_later: Pattern
    and_name: Pattern
    then_at: Pattern
    then_based: Pattern
    and_verb: Pattern
    to_place: Pattern  # "moved from X to Y"
    joined_group: Pattern  # "joined X club": not an employer
    left_job: Pattern  # "left X and joined Y": X an employer
    thing: Pattern
    thing_tail: Pattern  # a trailing "of"
    thing_more: Pattern
    thing_pair: Pattern
    article: Pattern  # a leading article dropped from likes/dislikes
    gerund: str  # the ending of a gerund ("ing")
    past_be: frozenset[str]  # "was", "were": "I was a nurse" no longer holds
    clause_after: Pattern
    pronoun_after: Pattern
    anchor_here: Pattern
    # whether it holds
    block: Pattern
    neg_only: Pattern
    anymore: Pattern
    no_longer: Pattern
    future: Pattern
    # derived
    verb_by_kind: dict[str, Pattern] = field(init=False)
    verb_all: Pattern = field(init=False)
    verb_not_be: Pattern = field(init=False)

    def __post_init__(self) -> None:
        by_kind: dict[str, Pattern] = {}
        for kind, rx in self.verbs:
            by_kind.setdefault(kind, rx)
        every = "|".join(f"(?P<v{i}>{rx.pattern})" for i, (_k, rx) in enumerate(self.verbs))
        not_be = "|".join(f"(?P<v{i}>{rx.pattern})" for i, (k, rx) in enumerate(self.verbs) if k not in self.be_kinds)
        object.__setattr__(self, "verb_by_kind", by_kind)
        object.__setattr__(self, "verb_all", re.compile(every))  # one match in C instead of forty in Python
        object.__setattr__(self, "verb_not_be", re.compile(not_be))


@dataclass(frozen=True)
class Cue:
    """One way a language states a relation: a pattern whose group `o` is the object (and `k` a kin word, for the
    predicate the kin word makes: "Meine Schwester ist mit Jan verheiratet"), matched anywhere in a clause (so it
    works in scripts written without spaces: "搬到了上海", "大阪に引っ越しました")."""

    predicate: str  # a graph predicate (relations/predicates.py)
    pattern: Pattern
    subject: str = "self"  # "self": a first-person form; "person": a third-person form (a person named before
    # it, or the one introduced in the sentence); "any": the person before it, else the speaker
    ended: bool = False  # it says the relation no longer holds ("quit", "no longer", "moved away from")
    thing: bool = False  # its object is a thing (likes/dislikes): not a name, its article dropped


@dataclass(frozen=True)
class CueGrammar:
    """A language read by cue (every language but English): the cues, the introductions of people ("meine
    Schwester Lena", "我妹妹叫小红", "友達の田中さん"), and what stops a reading."""

    cues: tuple[Cue, ...]
    introductions: tuple[Pattern, ...]  # groups `k` (a kin word of `kin`) and `n` (the person's name)
    kin: Mapping[str, str]  # kin word (casefolded) -> predicate; "" for people kept without one
    she: frozenset[str]  # kin words a "she" refers back to
    he: frozenset[str]
    pronouns: Mapping[str, str]  # a third-person pronoun (casefolded) -> "she" / "he"
    sentence_end: Pattern
    clause_cut: Pattern  # where a clause ends inside a sentence (a comma, "aber", "但是")
    question: Pattern  # a sentence that asks (searched in the sentence)
    block: Pattern  # what makes a clause say nothing current: negation, modality, wishes, plans, hypotheticals
    self_before: Pattern  # what may come before an "any" cue for the speaker to be its subject (fullmatch)
    link: Pattern  # what may come between a person's name and their cue (fullmatch)
    name: Pattern  # a name where the language marks one (a capital, or a script's run); for unknown subjects
    not_names: frozenset[str]  # words that are never a name (casefolded): nouns, food, days, common words
    article: Pattern  # a leading article dropped from an object
    honorifics: Pattern  # a title or honorific after a name, dropped ("さん")
    cased: bool = True  # the script has case: a name object starts with a capital


@dataclass(frozen=True)
class Validity:
    """A language's words for recall by validity and `context`'s "what is true now" (English keeps its own, richer
    reading in graph/recall_validity.py)."""

    present: Pattern  # a question about what is true now ("jetzt", "ahora", "现在")
    past: Pattern  # about what was ("früher", "antes", "以前")
    predicates: Mapping[str, Pattern]  # the words of a question that point at a predicate
    sentences: Mapping[str, str]  # predicate -> a relation of the user as a sentence ("Wohnt in {o}")
    others: Mapping[str, str]  # predicate -> a relation of someone else ("{s} wohnt in {o}")


@dataclass(frozen=True)
class Lexicon:
    """One language's words for the graph."""

    code: str  # ISO 639-1, as sidecar/text decides a memory's language
    clauses: ClauseGrammar | None = None  # read clause by clause (English)
    cues: CueGrammar | None = None  # read by cue (the other languages)
    capitalised_nouns: bool = False  # every noun is capitalised (German): a capital is no evidence of a name
    first_person: Pattern | None = None  # the speaker speaking of themself: what sends a memory to the LLM tier
    validity: Validity | None = None  # its words for "now" and "before", and its "what is true now" sentences


def expand(pattern: str, parts: Mapping[str, str]) -> Pattern:
    """A lexicon's pattern with its `{PART}` placeholders filled ({NAME}, {KIN}, {TITLE}, ...), compiled."""
    for key, value in parts.items():
        pattern = pattern.replace("{" + key + "}", value)
    return re.compile(pattern)


def cue_maker(parts: Mapping[str, str], **defaults: bool | str) -> Callable[..., Cue]:
    """A lexicon's cue builder: `cue(predicate, pattern, **kw)` with the pattern's `{PART}`s filled from `parts` and
    `defaults` (e.g. `subject="any"`) under the cue's own keywords."""

    def cue(predicate: str, pattern: str, **kw: bool | str) -> Cue:
        return Cue(predicate, expand(pattern, parts), **{**defaults, **kw})  # type: ignore[arg-type]

    return cue


def alternation(words: Iterable[str]) -> str:
    """A regex alternation of words, longest first (a space matches any run of spaces)."""
    items = sorted(set(words), key=len, reverse=True)
    return "(?:" + "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in items) + ")"
