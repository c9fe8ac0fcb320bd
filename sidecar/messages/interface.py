"""The small, named interfaces between the messages domain and the domains that stand on it.

- `MessageReader`: what a reader of stored messages (conversation context, graph building) may
  call on the message store: windows of rows by filter, newest first, and plain row reads.
- `Companion`: what a domain that keeps its own memory beside the messages (facts; graph) hears
  from the messages domain: every committed store, every forgotten user, and what it adds to `stats`.
"""

from __future__ import annotations

from typing import Any, Protocol


class MessageReader(Protocol):
    def latest(self, where: str, limit: int, user_id: str | None = None) -> list[dict[str, Any]]: ...

    def rows(self, where: str, user_id: str | None = None) -> list[dict[str, Any]]: ...


class Companion(Protocol):
    def on_stored(self, rows: list[dict[str, Any]], extract: bool | None) -> None:
        """Rows just committed (ids, user, content, times, channel); `extract` as the request asked."""

    def on_query(self, user_id: str, username: str | None) -> None:
        """A query named its user (and maybe a display name)."""

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete everything kept for the user; returns counts added to the `ok` answer."""

    def stats(self) -> dict[str, Any]:
        """Fields added to the `stats` answer."""
