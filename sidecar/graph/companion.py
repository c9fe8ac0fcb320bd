"""Graph memory beside the messages: every stored message is queued for the builder, deleted
messages leave the graph, a forgotten user's graph is deleted, and `stats` shows the graph's counts.
Implements the messages domain's `Companion` interface."""

from __future__ import annotations

from typing import Any

from .service import GraphService


class GraphCompanion:
    def __init__(self, graph: GraphService):
        self.graph = graph

    def on_stored(self, rows: list[dict[str, Any]], vectors: Any, extract: bool | None) -> None:
        self.graph.builder.submit(rows, vectors)

    def on_deleted(self, ids: list[str]) -> None:
        self.graph.builder.wait_rows(ids, 30.0)  # an episode of theirs queued or being built is removed too
        self.graph.on_deleted(ids)

    def on_query(self, user_id: str, username: str | None) -> None:
        pass

    def forget_user(self, user_id: str) -> dict[str, int]:
        self.graph.builder.wait_built(30.0)  # nothing queued for the user comes back after
        return {"graph_episodes_deleted": self.graph.forget_user(user_id)}

    def stats(self) -> dict[str, Any]:
        return {
            "graph": {k: v for k, v in self.graph.health().items() if k not in ("last_consolidation", "lag_seconds")}
        }
