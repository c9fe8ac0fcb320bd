"""Text analysis for keyword search, the same for every index and every script: normalisation and cutting
by Unicode script (tokens.py), the language decision and the Snowball stemmers (languages.py), stop words
(stopwords.py), the terms of a memory or of a query (analysis.py), and small talk: is a message a
backchannel ("lol", "gn", emoji only; smalltalk.py); and what a text becomes before it is stored: private spans
dropped, secrets replaced by a placeholder (secrets.py). Pure; imports no other part of
the sidecar."""

from .analysis import (
    GRAM_MARK,
    UNIGRAM_WEIGHT,
    analyse,
    analyse_fields,
    configure,
    language_of,
    parse_languages,
    query_fields,
    query_terms,
    settings,
    terms,
)
from .languages import KNOWN_LANGUAGES, LANGUAGES, STEMMERS
from .secrets import KINDS as SECRET_KINDS
from .secrets import REDACT_ON, Redaction, parse_redact, redact, strip_private
from .secrets import warm as warm_redaction
from .smalltalk import is_backchannel
from .tokens import letters_by_script, nfkc_size, written_in, written_without_spaces

__all__ = [
    "GRAM_MARK",
    "KNOWN_LANGUAGES",
    "LANGUAGES",
    "REDACT_ON",
    "SECRET_KINDS",
    "STEMMERS",
    "UNIGRAM_WEIGHT",
    "Redaction",
    "analyse",
    "analyse_fields",
    "configure",
    "is_backchannel",
    "language_of",
    "letters_by_script",
    "nfkc_size",
    "parse_languages",
    "parse_redact",
    "query_fields",
    "query_terms",
    "redact",
    "settings",
    "strip_private",
    "terms",
    "warm_redaction",
    "written_in",
    "written_without_spaces",
]
