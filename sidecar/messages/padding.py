"""No padding, pure: the step after ranking that keeps a result list from being filled with what does not
answer the question. A result is dropped when

- it is small talk: a backchannel ("lol", "haha nice", "gn", emoji only; sidecar/text's `is_backchannel`),
  which carries nothing a prompt can use, whatever it shares with the question; or
- it shares no term with the question and its cosine `similarity` is below the floor. A hybrid ranking
  marks the rows its keyword lists found (`keyword_match`: a term of the text in the row, or in the
  messages before it that its search text borrows, so "yes, last Tuesday" answering "did you visit the
  museum?" shares "museum"); other rows are analysed here (sidecar/text: stems, and bigrams of the scripts
  written without spaces).

So a query may answer fewer than `limit` results, or none. The floor is the request's `min_score` (default
wire's MIN_SCORE, calibrated on the tuning split of tests/fixtures/prompt_recall: docs/protocol.md,
"Why 0.13"); 0 switches the step off (every result returned, as before it existed). The caller asks the
ranking for more rows than it will return (`fetch`), so that what is dropped is replaced by the next
results that answer. A long memory is judged by the chunk that matched (`span`), else by its first
MAX_CHARS characters, which bounds the analysis of one result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..text import analyse, is_backchannel, query_terms

MAX_CHARS = 4000  # characters of a result analysed for shared terms (a long memory's matching chunk is shorter)


def fetch(limit: int, floor: float) -> int:
    """How many ranked rows to ask for so that `limit` remain after the step: the limit itself when the step
    is off, else twice it and ten more."""
    return limit if floor <= 0 else 2 * limit + 10


def _text_of(row: dict[str, Any]) -> str:
    content: str = row["content"]
    span = row.get("span")
    if span:
        return content[span[0] : span[1]]
    return content[:MAX_CHARS]


def shares_term(question: str) -> Callable[[str], bool]:
    """A test of a text: does it share a term with `question`? The question is analysed in the language of
    each text tested (as the keyword index analyses a query in its memories' languages), once per language."""
    asked: dict[str | None, frozenset[str]] = {}

    def test(text: str) -> bool:
        language, found = analyse(text)
        if language not in asked:
            asked[language] = frozenset(query_terms(question, [language] if language else []))
        return not asked[language].isdisjoint(found)

    return test


def drop_padding(
    rows: Iterable[dict[str, Any]], question: str, floor: float, likeness: bool = True
) -> list[dict[str, Any]]:
    """`rows` (ranked, best first, each with `content` and `similarity`) without the ones that would pad the
    list: backchannels, and (with `likeness`, for rankings by likeness to the question) those below `floor`
    cosine that share no term with `question`. Order kept; `floor` <= 0 returns every row."""
    rows = list(rows)
    if floor <= 0:
        return rows
    shares = shares_term(question)
    kept = []
    for row in rows:
        content = row["content"]
        if len(content) <= MAX_CHARS and is_backchannel(content):
            continue
        if likeness and row["similarity"] < floor and not row.get("keyword_match", False) and not shares(_text_of(row)):
            continue
        kept.append(row)
    return kept
