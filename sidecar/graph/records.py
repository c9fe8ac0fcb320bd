"""The graph's records and the keys names are matched by (pure, at the bottom of graph/: every other module
may import it, it imports none of them): an entity, an episode, a relation, a trace; folding a name to its
key; an activation's decay; the stable ids rows are written under. One user's graph of them is `model.py`.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

HALF_LIFE_DAYS = 7.0  # activation loses half of what it has above FLOOR in a week without use
FLOOR = 0.1

_ACCENTS = re.compile("[\u0300-\u036f]+")


def fold_chars(text: str) -> str:
    """Case folded, compatibility forms unified and the accents of Latin, Greek and Cyrillic letters dropped
    ("Zoë" -> "zoe"), every other script's marks kept and recomposed (a Korean syllable stays one character,
    a Devanagari vowel sign or a Japanese voicing mark stays on its letter)."""
    if text.isascii():
        return text.casefold()
    return unicodedata.normalize("NFC", _ACCENTS.sub("", unicodedata.normalize("NFKD", text.casefold())))


def fold(name: str) -> str:
    """The key a name is matched by: case and diacritics folded (`fold_chars`), punctuation at the ends and
    repeated spaces dropped ("Zoë  O'Neil." -> "zoe o'neil")."""
    return re.sub(r"\s+", " ", fold_chars(name)).strip(" .,;:!?\"'’()[]{}")


def decayed(activation: float, since: float, now: float) -> float:
    days = max(0.0, now - since) / 86_400.0
    return FLOOR + (activation - FLOOR) * math.pow(2.0, -days / HALF_LIFE_DAYS)


def compact(key: str) -> str:
    """A folded name with a leading "the", spaces and punctuation dropped: "the Grand Canyon",
    "grand-canyon" and "Grand Canyon" are one name ("the" only when a name follows it)."""
    return re.sub(r"[\W_]+", "", re.sub(r"^the\s+(?=\S)", "", key))


def stable_id(*parts: str) -> str:
    return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=12).hexdigest()


@dataclass(slots=True)
class Entity:
    id: str
    name: str
    type: str
    aliases: set[str] = field(default_factory=set)
    activation: float = 0.5
    episodes: list[str] = field(default_factory=list)  # mentioning episodes, in arrival order

    def keys(self) -> set[str]:
        return {fold(self.name), *(fold(a) for a in self.aliases)}


@dataclass(slots=True)
class Episode:
    id: str  # the message id
    ts: float
    channel_id: str | None
    message_id: str | None
    reply_to: str | None
    quality: float
    low: bool  # a backchannel: kept and searchable, but makes no entities or traces
    entity_ids: list[str] = field(default_factory=list)
    trace_id: str | None = None


@dataclass(slots=True)
class Relation:
    id: str
    subject_id: str
    predicate: str
    object_id: str | None
    object_value: str
    valid_from: float
    valid_to: float | None
    episode_ids: list[str]
    confidence: float
    fact_id: str | None = None


@dataclass(slots=True)
class Trace:
    id: str
    summary: str
    episode_ids: list[str]
    entity_ids: list[str]
    activation: float
    start: float
    end: float
    created_at: float
    updated_at: float
    vector: np.ndarray | None = None  # (float16 in memory, half the bytes; float32 on disk), None until computed
