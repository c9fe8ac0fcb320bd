"""The users' graphs held in memory: least recently used first, with a running count of their bytes.

The count is kept per user and corrected each time a graph is used (`touch`) or changed by the
builder (`measure`), so eviction costs nothing per graph held. It used to be summed over every cached
graph on every use: with 300 graphs cached, 6% of a soak's CPU (the maintenance thread's consolidation
and the builder, under the GIL) went to that sum by the end of a 100,000-request run.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Iterator

from .model import UserGraph


class GraphCache:
    def __init__(self, budget: int):
        self.budget = budget
        self._graphs: "OrderedDict[str, UserGraph]" = OrderedDict()
        self._sizes: dict[str, int] = {}
        self.total = 0  # bytes of the graphs held, as last measured

    def __len__(self) -> int:
        return len(self._graphs)

    def __contains__(self, user_id: object) -> bool:
        return user_id in self._graphs

    def __iter__(self) -> Iterator[str]:  # oldest first
        return iter(self._graphs)

    def values(self):
        return self._graphs.values()

    def get(self, user_id: str) -> UserGraph | None:
        return self._graphs.get(user_id)

    def mean(self) -> int:
        return self.total // max(1, len(self._graphs))

    def put(self, user_id: str, g: UserGraph) -> None:
        self._graphs[user_id] = g
        self.measure(user_id)

    def touch(self, user_id: str) -> None:
        """The user's graph was used: it is the newest, and its size is measured again."""
        self._graphs.move_to_end(user_id)
        self.measure(user_id)

    def measure(self, user_id: str) -> None:
        g = self._graphs.get(user_id)
        if g is not None:
            size = g.approx_bytes()
            self.total += size - self._sizes.get(user_id, 0)
            self._sizes[user_id] = size

    def pop(self, user_id: str) -> UserGraph | None:
        self.total -= self._sizes.pop(user_id, 0)
        return self._graphs.pop(user_id, None)

    def keep_only(self, keep: Callable[[str], bool]) -> None:
        for user_id in [u for u in self._graphs if not keep(u)]:
            self.pop(user_id)

    def evict(self, protected: Callable[[str], bool], room: int = 0) -> None:
        """The least recently used graphs leave until the rest and `room` fit the budget; `protected` ones stay."""
        if self.total + room <= self.budget:
            return
        for user_id in [u for u in self._graphs if not protected(u)]:  # oldest first
            if self.total + room <= self.budget:
                break
            self.pop(user_id)
