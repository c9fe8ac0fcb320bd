"""The relation tier's predicates and what it returns (pure)."""

from __future__ import annotations

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
    "relative": (False, "person"),  # cousin, aunt, uncle, grandparent, niece, nephew
    "friend": (False, "person"),
    "colleague": (False, "person"),
    "has_pet": (False, "other"),  # a named animal
    "likes": (False, "thing"),
    "dislikes": (False, "thing"),
    "born_in": (True, "place"),
    "birthday": (True, "date"),
}


def single_valued(predicate: str) -> bool:
    """Whether a predicate holds one value at a time (a new one closes the old); an unknown one (the LLM
    tier's) does not."""
    return PREDICATES.get(predicate, (False, "other"))[0]


# how a relation reads as a fact (third person, no name), to find the same fact among the user's
AS_FACT = {
    "lives_in": "Lives in {}",
    "works_at": "Works at {}",
    "job_title": "Works as a {}",
    "studies_at": "Studies at {}",
    "partner": "Partner is {}",
    "sister": "Has a sister, {}",
    "brother": "Has a brother, {}",
    "mother": "Mother is {}",
    "father": "Father is {}",
    "son": "Has a son, {}",
    "daughter": "Has a daughter, {}",
    "relative": "Has a relative, {}",
    "friend": "Is friends with {}",
    "colleague": "Works with {}",
    "has_pet": "Has a pet named {}",
    "likes": "Likes {}",
    "dislikes": "Dislikes {}",
    "born_in": "Was born in {}",
    "birthday": "Birthday is {}",
}


@dataclass(frozen=True)
class FoundRelation:
    predicate: str
    object: str
    start: int  # where the object starts in the text
    end: int
    subject: str | None = None  # None: the speaker; else a person's name as written
    ended: bool = False  # the statement says it no longer holds ("I quit X", "I used to live in X")

    @property
    def single_valued(self) -> bool:
        return PREDICATES[self.predicate][0]

    @property
    def object_type(self) -> str:
        return PREDICATES[self.predicate][1]
