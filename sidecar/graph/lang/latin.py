"""What the Latin-script lexicons share: how a name, a word and a clause's end are written (pure data)."""

from __future__ import annotations

import re

UPPER = "A-ZÀ-ÖØ-ÞĀ-Ž"  # a capital (Latin-1 and Latin Extended-A; a few lower-case letters there too: harmless)
WORD = r"[\w'’-]+"
CAP = rf"(?:[{UPPER}][\w'’&.-]*)"
SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s|$)|\n+")
QUESTION = re.compile(r"[?¿]")


def name(joiners: str) -> str:
    """A name: up to four capitalised words, with the language's joiners between them ("Frankfurt am Main",
    "Universidad de Granada")."""
    return rf"{CAP}(?:[ \t]+(?:(?:{joiners})[ \t]+)?{CAP}){{0,3}}"


def thing(stops: str) -> str:
    """A thing liked or disliked: one to four words, up to punctuation or one of the language's `stops`."""
    return rf"{WORD}(?:[ \t]+(?!(?:{stops})\b){WORD}){{0,3}}(?=[ \t]*(?:[,.;:!?…)(\"”]|$|\n)|[ \t]+(?:{stops})\b)"


def gendered(*stems: str, suffix: str) -> list[str]:
    """Job words and their feminine forms ("Lehrer", "Lehrerin")."""
    return [w for s in stems for w in (s, s + suffix)]
