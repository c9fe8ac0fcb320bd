"""The users' graphs held in memory: least recently used first, with a running count of their bytes.

Graphs that only background work has used (the builder, consolidation, deletes) can be held to a
share of the budget of their own (`evict`'s `background_budget`, set by the graph service): a bulk
import or a burst of stores by many users no longer fills the budget with graphs that no command reads,
and a user's graph counts as used by the host from its first graph command or recall on.

The count is kept per user and corrected each time a graph is used (`touch`) or changed by the
builder (`measure`), so eviction costs nothing per graph held. It used to be summed over every cached
graph on every use: with 300 graphs cached, 6% of a soak's CPU (the maintenance thread's consolidation
and the builder, under the GIL) went to that sum by the end of a 100,000-request run.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator

from .model import UserGraph


class GraphCache:
    def __init__(self, budget: int):
        self.budget = budget
        self._graphs: OrderedDict[str, UserGraph] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self._used: set[str] = set()  # users whose graphs a command or recall has used since they were loaded
        self.total = 0  # bytes of the graphs held, as last measured
        self.background = 0  # of which graphs only background work has used

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

    def put(self, user_id: str, g: UserGraph) -> int:
        """Hold the graph; returns its bytes as measured."""
        self.pop(user_id)
        self._graphs[user_id] = g
        self.measure(user_id)
        return self._sizes[user_id]

    def touch(self, user_id: str, foreground: bool = True) -> None:
        """The user's graph was used (by a command or recall when `foreground`, else by background work):
        it is the newest, and its size is measured again."""
        self._graphs.move_to_end(user_id)
        if foreground and user_id not in self._used:
            self._used.add(user_id)
            self.background -= self._sizes.get(user_id, 0)
        self.measure(user_id)

    def measure(self, user_id: str) -> None:
        g = self._graphs.get(user_id)
        if g is not None:
            size = g.approx_bytes()
            change = size - self._sizes.get(user_id, 0)
            self.total += change
            if user_id not in self._used:
                self.background += change
            self._sizes[user_id] = size

    def pop(self, user_id: str) -> UserGraph | None:
        size = self._sizes.pop(user_id, 0)
        self.total -= size
        if user_id in self._used:
            self._used.discard(user_id)
        else:
            self.background -= size
        return self._graphs.pop(user_id, None)

    def keep_only(self, keep: Callable[[str], bool]) -> None:
        for user_id in [u for u in self._graphs if not keep(u)]:
            self.pop(user_id)

    def evict(self, protected: Callable[[str], bool], background_budget: int | None = None) -> None:
        """The least recently used graphs leave until the rest fit the budget, and those only background work
        used fit `background_budget` (None: the whole budget); `protected` ones stay."""
        share = self.budget if background_budget is None else background_budget
        if self.background > share:
            for user_id in [u for u in self._graphs if u not in self._used and not protected(u)]:
                if self.background <= share:
                    break
                self.pop(user_id)
        if self.total <= self.budget:
            return
        for user_id in [u for u in self._graphs if not protected(u)]:  # oldest first
            if self.total <= self.budget:
                break
            self.pop(user_id)
