"""The inspector: a read-only web page over a data dir (users, messages and search, facts and their
history, the entity graph, stats and health), safe beside the running sidecar that owns it. Reads the
domains' tables through their packages' interfaces; only runtime starts it (`memory-sidecar inspect`)."""

from .reader import InspectorError, ReadOnlyData
from .server import InspectorServer

__all__ = ["InspectorError", "InspectorServer", "ReadOnlyData"]
