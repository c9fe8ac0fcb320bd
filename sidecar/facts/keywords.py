"""Keyword search over facts in every script: each fact carries its text analysed by sidecar/text (the
same terms the messages' keyword index makes: CJK bigrams, words stemmed in the fact's language) in a
derived column, `terms` (joined by spaces), and its `language`; LanceDB's full-text index covers `terms`
with a whitespace tokenizer and no analysis of its own. A query is analysed the same way, in every
language the facts table holds. The words' grams (sidecar/text: the fallback field that meets the forms of
one word a stemmer leaves apart) are in `terms` too, marked, and so are the unigrams of Han, Kana and Hangul
runs; a query's grams are matched at a lower weight beside its terms, its unigrams at UNIGRAM_WEIGHT
(`query`).

Schema version 7 added both columns: data dirs from before get them as the fact store opens (`migrate`),
computed from each fact's text, and the English-only index on `text` is replaced. The analysis that made
`terms` is recorded in the table's schema metadata (ANALYSIS): a table made by an older one has its
`terms` computed again as the store opens, so the stored text is all that counts and nothing is lost."""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa

from ..text import UNIGRAM_WEIGHT, analyse_fields, query_fields

log = logging.getLogger("sidecar.fact_store")

DERIVED = ("terms", "language")
FIELDS = [pa.field("terms", pa.string(), nullable=False), pa.field("language", pa.string())]
# the version of the analysis behind `terms`, in the facts table's schema metadata (1, implied: no grams;
# 2: grams; 3: the unigrams of Han, Kana and Hangul runs)
ANALYSIS_KEY, ANALYSIS = b"terms_analysis", b"3"
GRAM_WEIGHT = 0.3  # a query's grams against its terms (as messages/keywords.py)


def fts_config() -> Any:
    """LanceDB's full-text index over the terms as they are: split at spaces, nothing else done."""
    from lancedb.index import FTS

    return FTS(
        base_tokenizer="whitespace",
        lower_case=False,
        stem=False,
        remove_stop_words=False,
        ascii_folding=False,
        max_token_length=None,
    )


def analysed(texts: list[str]) -> tuple[list[str], list[str]]:
    """The `terms` and `language` columns of facts with these texts."""
    terms, languages = [], []
    for text in texts:
        language, found, grams = analyse_fields(text)
        terms.append(" ".join(found + grams))
        languages.append(language or "")  # "": no language (LanceDB's update takes no None)
    return terms, languages


def query(text: str, languages: set[str]) -> Any:
    """LanceDB's full-text query of a text against `terms`: its terms, its words' grams at GRAM_WEIGHT
    shared by each word's grams, its unigrams at UNIGRAM_WEIGHT (None: nothing to look for, stop words alone)."""
    from lancedb.query import BooleanQuery, FullTextQuery, MatchQuery, Occur

    terms, words, singles = query_fields(text, sorted(languages))
    grams = list(dict.fromkeys(g for _, found in words for g in found))
    clauses: list[tuple[Occur, FullTextQuery]] = []
    # the ignores below: mypy reads MatchQuery's kw_only pydantic.Field defaults as required arguments
    if terms:
        clauses.append((Occur.SHOULD, MatchQuery(" ".join(dict.fromkeys(terms)), "terms")))  # type: ignore[call-arg]
    if grams:
        boost = GRAM_WEIGHT * len(words) / len(grams)
        clauses.append((Occur.SHOULD, MatchQuery(" ".join(grams), "terms", boost=boost)))  # type: ignore[call-arg]
    if singles:
        unigrams = " ".join(dict.fromkeys(singles))
        clauses.append((Occur.SHOULD, MatchQuery(unigrams, "terms", boost=UNIGRAM_WEIGHT)))  # type: ignore[call-arg]
    if not clauses:
        return None
    return clauses[0][1] if len(clauses) == 1 else BooleanQuery(clauses)


def table_languages(table: Any) -> set[str]:
    """The languages the facts table holds."""
    column = table.search().select(["language"]).limit(None).to_arrow().column("language")
    return {v for v in pa.compute.unique(column).to_pylist() if v}


def migrate(db: Any, table: Any, name: str, schema: pa.Schema) -> Any:
    """The facts table with `terms` and `language` computed for every fact by this analysis (a data dir of
    schema version 6 or before has neither, one of version 7 may have them from an older analysis); returned
    rewritten, or as it is when they are current."""
    if "terms" in table.schema.names and (table.schema.metadata or {}).get(ANALYSIS_KEY) == ANALYSIS:
        return table
    data = table.to_arrow()
    log.warning("facts: analysing %d facts for keyword search in every language", data.num_rows)
    terms, languages = analysed(data.column("text").to_pylist())
    data = data.drop_columns([c for c in DERIVED if c in data.column_names])
    data = data.append_column(FIELDS[0], pa.array(terms, pa.string())).append_column(
        FIELDS[1], pa.array(languages, pa.string())
    )
    data = data.select(schema.names).cast(schema)
    return db.create_table(name, data=data, schema=schema, mode="overwrite")
