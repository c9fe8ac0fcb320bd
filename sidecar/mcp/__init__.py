"""The Model Context Protocol face (`memory-sidecar mcp`), beside the NDJSON transport: the tools and
their schemas (tools.py), their results as text (render.py), and the SDK's stdio server (server.py).
Needs the optional `mcp` extra. Imports only `wire`: the runtime hands it the dispatcher's request
handler, so every tool call is the same typed request, handled the same way, as an NDJSON line."""

from .server import serve
from .tools import TOOLS, Settings

__all__ = ["TOOLS", "Settings", "serve"]
