"""Facts: short, current, de-duplicated statements about a user, from inline tags, the host, or an
LLM; consolidated (duplicate rule, KEEP / INVALIDATE / MERGE), with history, and rendered as a
prompt-ready block. Stands on the messages domain through its `Companion` interface."""

from .companion import FactsCompanion
from .rules import (
    CANDIDATE_THRESHOLD,
    DEFAULT_CATEGORIES,
    DUPLICATE_THRESHOLD,
    parse_categories,
)
from .service import FactService
from .store import EVENT_COLUMNS, EVENTS, FACT_COLUMNS, FACTS, USERS, FactStore

__all__ = [
    "CANDIDATE_THRESHOLD",
    "DEFAULT_CATEGORIES",
    "DUPLICATE_THRESHOLD",
    "EVENTS",
    "EVENT_COLUMNS",
    "FACTS",
    "FACT_COLUMNS",
    "USERS",
    "FactService",
    "FactStore",
    "FactsCompanion",
    "parse_categories",
]
