"""Keyword search over facts in every script: each fact carries its text analysed by sidecar/text (the
same terms the messages' keyword index makes: CJK bigrams, words stemmed in the fact's language) in a
derived column, `terms` (joined by spaces), and its `language`; LanceDB's full-text index covers `terms`
with a whitespace tokenizer and no analysis of its own. A query is analysed the same way, in every
language the facts table holds.

Schema version 7 added both columns: data dirs from before get them as the fact store opens (`migrate`),
computed from each fact's text, and the English-only index on `text` is replaced."""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa

from ..text import analyse, query_terms

log = logging.getLogger("sidecar.fact_store")

DERIVED = ("terms", "language")
FIELDS = [pa.field("terms", pa.string(), nullable=False), pa.field("language", pa.string())]


def fts_config() -> Any:
    """LanceDB's full-text index over the terms as they are: split at spaces, nothing else done."""
    from lancedb.index import FTS

    return FTS(base_tokenizer="whitespace", lower_case=False, stem=False, remove_stop_words=False,
               ascii_folding=False, max_token_length=None)


def analysed(texts: list[str]) -> tuple[list[str], list[str | None]]:
    """The `terms` and `language` columns of facts with these texts."""
    terms, languages = [], []
    for text in texts:
        language, found = analyse(text)
        terms.append(" ".join(found))
        languages.append(language or "")  # "": no language (LanceDB's update takes no None)
    return terms, languages


def query_text(text: str, languages: set[str]) -> str:
    """A query's terms in every language of the facts, joined for LanceDB's match query ('' when none)."""
    return " ".join(dict.fromkeys(query_terms(text, sorted(languages))))


def table_languages(table: Any) -> set[str]:
    """The languages the facts table holds."""
    column = table.search().select(["language"]).limit(None).to_arrow().column("language")
    return {v for v in pa.compute.unique(column).to_pylist() if v}


def migrate(db: Any, table: Any, name: str, schema: pa.Schema) -> Any:
    """The facts table with `terms` and `language` computed for every fact (a data dir of schema version 6
    or before); returned rewritten, or as it is when it has them."""
    if "terms" in table.schema.names:
        return table
    data = table.to_arrow()
    log.warning("facts: analysing %d facts for keyword search in every language", data.num_rows)
    terms, languages = analysed(data.column("text").to_pylist())
    data = data.append_column(FIELDS[0], pa.array(terms, pa.string())).append_column(
        FIELDS[1], pa.array(languages, pa.string()))
    data = data.select(schema.names).cast(schema)
    return db.create_table(name, data=data, schema=schema, mode="overwrite")
