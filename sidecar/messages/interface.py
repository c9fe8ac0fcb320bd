"""The small, named interfaces between the messages domain and the domains that stand on it.

- `MessageReader`: what a reader of stored messages (conversation context, graph building) may
  call on the message store: windows of rows by filter, newest first, and plain row reads.
- `Companion`: what a domain that keeps its own memory beside the messages (facts; graph) hears
  from the messages domain: every committed store, every forgotten user, and what it adds to `stats`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, Protocol

import numpy as np
import pyarrow as pa


class MessageReader(Protocol):
    dim: int

    def latest(self, where: str, limit: int, user_id: str | None = None) -> list[dict[str, Any]]: ...

    def rows(self, where: str, user_id: str | None = None) -> list[dict[str, Any]]: ...

    def embedded(self, ids: list[str], user_id: str | None = None) -> tuple[list[dict[str, Any]], np.ndarray]:
        """The rows of these ids that exist, and their vectors (float32, row-aligned). user_id (the ids are
        all that user's): read from memory when the messages domain holds them, at its precision (int8 with a
        scale per row, messages/quantized.py) either way."""

    def embedded_by_user(self, ids: dict[str, list[str]]) -> dict[str, tuple[list[dict[str, Any]], np.ndarray]]:
        """`embedded(ids, user_id)` for several users at once (user -> their ids), in few reads."""

    def search(
        self,
        vector: Any,
        user_id: str,
        limit: int,
        include_bot: bool = True,
        since: float | None = None,
        until: float | None = None,
        text: str | None = None,
        mode: str = "semantic",
    ) -> list[dict[str, Any]]:
        """The user's best messages for a query (rows with `similarity`), best first."""

    def missing_by_users(self, done: Callable[[list[str]], pa.Array]) -> Iterator[tuple[pa.Array, int, int, int]]:
        """The ids of stored messages that `done(users)` does not name (Arrow string arrays), user by user,
        oldest first, a group of users at a time: (ids, the group's first and last user by number, users in
        all)."""


class Companion(Protocol):
    def on_stored(self, rows: list[dict[str, Any]], vectors: np.ndarray, extract: bool | None) -> None:
        """Rows just made durable (ids, user, content, times, channel) and their vectors; `extract` as
        the request asked."""

    def on_deleted(self, ids: list[str]) -> None:
        """Messages deleted (one by one, by expiry; not by forget_user, which has its own hook)."""

    def on_query(self, user_id: str, username: str | None) -> None:
        """A query named its user (and maybe a display name)."""

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete everything kept for the user; returns counts added to the `ok` answer."""

    def stats(self) -> dict[str, Any]:
        """Fields added to the `stats` answer."""


class GraphSearch(Protocol):
    def __call__(
        self, user_id: str, text: str, vector: np.ndarray, limit: int, since: float | None, until: float | None
    ) -> list[dict[str, Any]]:
        """Message rows (with `similarity`) ranked by the graph's activation for the query."""


class Replaced(NamedTuple):
    """A memory whose statement a later memory replaced: `by` the memory that replaced it (its direct
    successor), `at` when that one was said (unix seconds), `current` the latest of the chain (what is true
    now: `by` itself, or the memory that replaced `by`, and so on)."""

    by: str
    at: float
    current: str


class Supersession(Protocol):
    def __call__(self, user_id: str, ids: list[str]) -> dict[str, Replaced]:
        """Which of these memories of the user were replaced by a later one of theirs, and by which (ids not
        replaced, or not known, are absent). Answers at once with what is known: it never waits for a
        background builder."""
