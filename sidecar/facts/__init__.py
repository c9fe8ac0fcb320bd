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

__all__ = ["FactsCompanion", "FactService", "FactStore", "CANDIDATE_THRESHOLD", "DEFAULT_CATEGORIES",
           "DUPLICATE_THRESHOLD", "parse_categories", "FACTS", "EVENTS", "USERS", "FACT_COLUMNS", "EVENT_COLUMNS"]
