"""Portability: one user's memory, or everyone's, exported to a JSON Lines file (messages, facts with their
history, display names, graph rows; vectors marked with the model digest) and imported back, or into
another data dir on another machine; plain JSON Lines of messages import too. Stands on the messages,
facts and graph domains through their package interfaces. The format: protocol/export.schema.json."""

from .records import FORMAT, FORMAT_VERSION
from .service import PortableService, Stores

__all__ = ["FORMAT", "FORMAT_VERSION", "PortableService", "Stores"]
