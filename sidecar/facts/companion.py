"""The facts domain beside the messages: display names from stored messages and queries, background
extraction of facts from stored messages (with an LLM), forgetting a user's facts, and the fact
counts in `stats`. Implements the messages domain's `Companion` interface."""

from __future__ import annotations

from typing import Any

from ..wire import SyncedResponse, SyncRequest
from .service import FactService


class FactsCompanion:
    def __init__(self, facts: FactService, extractor: Any = None, extract_by_default: bool = True):
        self.facts = facts
        self.extractor = extractor  # an ExtractionWorker, only with an LLM configured
        self.extract_by_default = extract_by_default

    def on_stored(self, rows: list[dict[str, Any]], vectors: Any, extract: bool | None) -> None:
        """Display names (last one per user wins), then background extraction when asked for."""
        self.facts.set_names({r["user_id"]: r["username"] for r in rows if r["username"]})
        want = extract if extract is not None else self.extract_by_default
        if self.extractor is None or not want:
            return
        from .extraction import (
            Job,  # only with an LLM configured; extraction is never imported otherwise
        )

        for r in rows:
            if self.extractor.wanted(r["content"], r["is_bot"]):
                self.extractor.submit(Job(r["user_id"], r["content"], r["message_id"] or r["id"]))

    def on_deleted(self, ids: list[str]) -> None:
        """Facts outlive the messages they came from (their history keeps the message id)."""

    def on_query(self, user_id: str, username: str | None) -> None:
        if username:
            self.facts.set_names({user_id: username})

    def forget_user(self, user_id: str) -> dict[str, int]:
        if self.extractor is not None:
            self.extractor.forget(user_id)  # no background job may bring a fact back
        return {"facts_deleted": self.facts.forget_user(user_id)}

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"facts": self.facts.active_count()}
        if self.extractor is not None:
            x = self.extractor
            out["extraction"] = {"pending": x.pending(), "done": x.done, "failed": x.failed, "dropped": x.dropped}
        return out

    def sync(self, req: SyncRequest) -> SyncedResponse:
        """Wait for background extraction (or the request's timeout)."""
        if self.extractor is None:
            return SyncedResponse(pending=0, done=0, failed=0)
        pending = self.extractor.sync(float(req.timeout))
        return SyncedResponse(pending=pending, done=self.extractor.done, failed=self.extractor.failed)
