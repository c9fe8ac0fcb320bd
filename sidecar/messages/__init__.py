"""Messages: every stored message of every user, per-user search (semantic, keyword, hybrid), expiry
and forgetting. The base domain: facts, conversation and graph stand on it through `interface.py`."""

from .interface import Companion, GraphSearch, MessageReader, Replaced, Supersession
from .padding import drop_padding
from .padding import fetch as padding_fetch
from .schema import MESSAGES, RESULT_COLUMNS
from .search import search_table
from .service import MemoryService, content_over_limit
from .store import MessageStore
from .supersession import supersede
from .timewords import named_window

__all__ = [
    "MESSAGES",
    "RESULT_COLUMNS",
    "Companion",
    "GraphSearch",
    "MemoryService",
    "MessageReader",
    "MessageStore",
    "Replaced",
    "Supersession",
    "content_over_limit",
    "drop_padding",
    "named_window",
    "padding_fetch",
    "search_table",
    "supersede",
]
