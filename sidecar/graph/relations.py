"""The offline relation tier, pure: patterns for the common personal relations a user states about
themself ("I live in Lisbon", "my sister Ana", "I work at Acme"). Each found relation names the
predicate, the object as written, and whether the predicate holds one value at a time (a new one
closes the old: lives_in, works_at, partner), so history and "as of" questions stay answerable.

Only first-person statements are read: the subject is always the speaking user. Questions,
negations and hypotheticals ("do you live in...", "I don't work at...", "if I moved to...") are
skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# predicate -> (single-valued, the type of an object entity)
PREDICATES: dict[str, tuple[bool, str]] = {
    "lives_in": (True, "place"),
    "works_at": (True, "organisation"),
    "job_title": (True, "other"),
    "studies_at": (True, "organisation"),
    "partner": (True, "person"),
    "sister": (False, "person"),
    "brother": (False, "person"),
    "mother": (True, "person"),
    "father": (True, "person"),
    "son": (False, "person"),
    "daughter": (False, "person"),
    "friend": (False, "person"),
    "has_pet": (False, "other"),  # a named animal
    "likes": (False, "thing"),
    "dislikes": (False, "thing"),
    "born_in": (True, "place"),
    "birthday": (True, "date"),
}


# how a relation about the user reads as a fact (third person, no name), to find the same fact
AS_FACT = {"lives_in": "Lives in {}", "works_at": "Works at {}", "job_title": "Works as a {}",
           "studies_at": "Studies at {}", "partner": "Partner is {}", "sister": "Has a sister, {}",
           "brother": "Has a brother, {}", "mother": "Mother is {}", "father": "Father is {}", "son": "Has a son, {}",
           "daughter": "Has a daughter, {}", "friend": "Is friends with {}", "has_pet": "Has a pet named {}",
           "likes": "Likes {}", "dislikes": "Dislikes {}", "born_in": "Was born in {}", "birthday": "Birthday is {}"}


@dataclass(frozen=True)
class FoundRelation:
    predicate: str
    object: str
    start: int  # where the object starts in the text
    end: int

    @property
    def single_valued(self) -> bool:
        return PREDICATES[self.predicate][0]

    @property
    def object_type(self) -> str:
        return PREDICATES[self.predicate][1]


_NAME = r"(?P<obj>[A-Z][\w'’.-]*(?:\s+(?:of\s+|the\s+|de\s+|van\s+)?[A-Z][\w'’.-]*){0,3})"
_PLACE = r"(?P<obj>[A-Z][\w'’.-]*(?:\s+(?:of\s+|the\s+|de\s+)?[A-Z][\w'’.-]*){0,3})"
_THING = r"(?P<obj>[\w'’ -]{2,40}?)(?=[.,!?;]|\s+(?:and|but|because|so|too|when|lately|now)\b|$)"
# Where a first-person clause may start; every pattern that uses it goes on with "I", which the lookahead checks
# first (the lookbehinds tried at every position took about 0.3 ms per pattern over a 2,000-character text)
_I = r"(?=I)(?:^|(?<=[.!?]\s)|(?<=,\s)|(?<=\b[aA]nd\s)|(?<=\b[bB]ut\s)|(?<=\b[sS]o\s)|(?<=\b[nN]ow\s)|(?<=\b[tT]hen\s))"
_KIN = {"sister": "sister", "brother": "brother", "mom": "mother", "mum": "mother", "mother": "mother",
        "dad": "father", "father": "father", "son": "son", "daughter": "daughter", "wife": "partner",
        "husband": "partner", "partner": "partner", "boyfriend": "partner", "girlfriend": "partner",
        "fiance": "partner", "fiancé": "partner", "fiancée": "partner", "friend": "friend",
        "best friend": "friend", "buddy": "friend", "bff": "friend"}
_PETS = r"(?:dog|puppy|cat|kitten|pet|parrot|bird|hamster|rabbit|bunny|horse|turtle|fish|snake|guinea pig)"

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("lives_in", re.compile(_I + r"I(?:'ve| have)?\s+(?:just\s+|recently\s+|finally\s+)?(?:live|lived|living|"
                            r"moved|relocated)\s+(?:now\s+)?(?:in|to|into)\s+" + _PLACE)),
    ("lives_in", re.compile(_I + r"I'?m\s+(?:now\s+)?(?:living|based)\s+in\s+" + _PLACE)),
    ("works_at", re.compile(_I + r"I(?:'ve)?\s+(?:just\s+|now\s+|still\s+)?(?:work|worked|working|started(?: working)?|"
                            r"got a job|joined)\s+(?:at|for|with)?\s*" + _NAME)),
    ("job_title", re.compile(_I + r"I(?:'m| am)\s+(?:now\s+)?(?:a|an)\s+(?P<obj>(?:[a-z]+\s+){0,2}(?:engineer|developer|"
                             r"teacher|nurse|doctor|designer|manager|student|artist|writer|lawyer|chef|accountant|"
                             r"scientist|researcher|consultant|programmer|photographer|musician|counselor|therapist|"
                             r"firefighter|pilot|mechanic|architect|analyst|journalist|professor|entrepreneur))\b")),
    ("studies_at", re.compile(_I + r"I(?:'m| am)?\s+(?:studying|study|enrolled)\s+(?:\w+\s+){0,2}at\s+" + _NAME)),
    ("born_in", re.compile(_I + r"I\s+was\s+born\s+in\s+" + _PLACE)),
    ("birthday", re.compile(r"\b(?i:my)\s+birthday\s+is\s+(?:on\s+)?(?P<obj>[A-Z][a-z]+\s+\d{1,2}(?:st|nd|rd|th)?|"
                            r"\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?[A-Z][a-z]+)")),
    ("kin", re.compile(r"\b(?i:my|our)\s+(?P<kin>best friend|" + "|".join(sorted(_KIN, key=len, reverse=True)) +
                       r")(?:,)?\s+(?:is\s+(?:called|named)\s+|named\s+|called\s+)?" + _NAME)),
    ("has_pet", re.compile(r"\b(?i:my|our)\s+(?:\w+\s+)?" + _PETS + r"(?:,)?\s+(?:is\s+)?(?:called\s+|named\s+)?" + _NAME)),
    ("has_pet", re.compile(_I + r"I\s+(?:have|got|adopted)\s+(?:a|an|another)\s+(?:\w+\s+)?" + _PETS +
                           r"\s+(?:called|named)\s+" + _NAME)),
    ("likes", re.compile(_I + r"I\s+(?:really\s+|absolutely\s+|just\s+)?(?:love|like|enjoy|adore)\s+" + _THING)),
    ("dislikes", re.compile(_I + r"I\s+(?:really\s+)?(?:hate|dislike|can't stand|cannot stand|detest)\s+" + _THING)),
]
_SKIP = re.compile(r"\b(?:don't|do not|didn't|never|not|won't|wouldn't|if|maybe|might|would|wish|hope to|want to|"
                   r"going to|gonna|plan to|planning to)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\bI\b|\b(?i:my|our)\b")
_VAGUE = {"it", "that", "this", "them", "you", "him", "her", "to", "the", "a", "an", "my", "your", "when", "how",
          "what", "so", "too", "there", "here", "lot", "all"}


def _clause_around(text: str, start: int) -> str:
    lo = max(text.rfind(c, 0, start) for c in ".!?;") + 1
    return text[lo:start]


def find_relations(text: str) -> list[FoundRelation]:
    """First-person relations stated in `text`, in order of appearance."""
    if not _FIRST_PERSON.search(text):
        return []  # every pattern needs "I" or "my"/"our": most messages stop here
    out: list[FoundRelation] = []
    for kind, rx in _PATTERNS:
        for m in rx.finditer(text):
            obj = m.group("obj").strip(" '’-.,")
            start = m.start("obj")
            if not obj or obj.casefold() in _VAGUE or obj.split()[0].casefold() in _VAGUE:
                continue
            if _SKIP.search(_clause_around(text, start)) or text[m.end():m.end() + 1] == "?":
                continue
            predicate = _KIN[m.group("kin").casefold()] if kind == "kin" else kind
            out.append(FoundRelation(predicate, obj, start, start + len(obj)))
    seen: set[tuple[str, str]] = set()
    unique = []
    for r in sorted(out, key=lambda r: r.start):
        if (r.predicate, r.object.casefold()) not in seen:
            seen.add((r.predicate, r.object.casefold()))
            unique.append(r)
    return unique
