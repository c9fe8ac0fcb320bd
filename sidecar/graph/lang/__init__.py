"""Per-language lexicons for the graph, as data (spaCy keeps `lang/<code>/` beside a language-free pipeline the
same way): `types.py` says what a lexicon holds; `en.py` is English, read clause by clause; `de.py`, `es.py`,
`fr.py`, `pt.py`, `it.py`, `zh.py`, `ja.py` are read by cue (`latin.py`: what the Latin-script ones share).
graph/relations/ is the engine that reads them; a language with no lexicon yields no relations.

A memory's language is the one keyword search decides (`sidecar.text.language_of`), or for a text without
spaces its script's (kana: Japanese, Han: Chinese). A lexicon's module is imported at its first use (its
patterns compile then, in the graph builder's thread after `ready`, not at start-up)."""

from __future__ import annotations

import importlib

from ...text import language_of, letters_by_script
from .types import Lexicon

LANGUAGES = ("en", "de", "es", "fr", "pt", "it", "zh", "ja")  # the languages with a lexicon
LATIN = ("en", "de", "es", "fr", "pt", "it")
SHORT = 6  # words: fewer, and the detector's decision is a guess (a Latin lexicon of another language may read it)


def lexicon(code: str | None) -> Lexicon | None:
    """The lexicon of a language (ISO 639-1), None when it has none."""
    if code not in LANGUAGES:
        return None
    lex: Lexicon = importlib.import_module(f"{__name__}.{code}").LEXICON
    return lex


def language(text: str) -> str | None:
    """The language of a memory for the graph: keyword search's decision; for a text in a script without spaces,
    the script's (kana: Japanese; Han alone: Chinese)."""
    found = language_of(text)
    if found is not None:
        return found
    letters = letters_by_script(text)
    if letters.get("Hiragana") or letters.get("Katakana"):
        return "ja"
    if letters.get("Han"):
        return "zh"
    return None


def others(text: str, decided: str | None) -> tuple[str, ...]:
    """The other Latin-script lexicons worth a try when the decided language read nothing, in a text in Latin
    letters: English (its reader needs English words, "I", "my", an English verb, so it reads nothing in another
    language: "I study computer science at MIT" is German to the detector), and when the text is short (the
    detector's guess) or decided as a language without a lexicon, every other one."""
    if not any("a" <= c.casefold() <= "z" for c in text[:200]):
        return ()
    if decided in LANGUAGES and len(text.split()) >= SHORT:
        return () if decided == "en" else ("en",)
    return tuple(code for code in LATIN if code != decided)
