"""Per-language lexicons for the graph, as data (spaCy keeps `lang/<code>/` beside a language-free pipeline the
same way): `types.py` says what a lexicon holds, `<code>.py` holds one language's words. graph/relations/ is the
engine that reads them; a language with no lexicon yields no relations.

A lexicon's module is imported at its first use (its patterns compile then, in the graph builder's thread after
`ready`, not at start-up)."""

from __future__ import annotations

import importlib

from .types import Lexicon

LANGUAGES = ("en",)  # the languages with a lexicon


def lexicon(code: str) -> Lexicon | None:
    """The lexicon of a language (ISO 639-1), None when it has none."""
    if code not in LANGUAGES:
        return None
    lex: Lexicon = importlib.import_module(f"{__name__}.{code}").LEXICON
    return lex
