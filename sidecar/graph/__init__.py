"""Graph memory: every stored message is an episode of its user's graph; entities (people, places,
organisations, things, events) are found in episodes by a fast rule tier and resolved per user;
relations the user states carry their validity in time; related episodes are consolidated into
traces. Stands on the messages domain through its `Companion` and `MessageReader` interfaces, and on
the conversation domain for the pyramid's word cut."""

from .companion import GraphCompanion
from .names import NameMatcher
from .service import GraphService
from .store import GraphStore
from .tables import TABLES as GRAPH_TABLES
from .tables import read_graphs

__all__ = ["GRAPH_TABLES", "GraphCompanion", "GraphService", "GraphStore", "NameMatcher", "read_graphs"]
