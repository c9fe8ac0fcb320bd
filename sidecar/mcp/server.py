"""The MCP server over stdio (official `mcp` SDK, low-level server): tools/list from tools.py, and
tools/call turned into the wire request the NDJSON face would decode, answered by the sidecar's own
request handler in a worker thread, one call at a time (the order the services expect)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

import anyio
import jsonschema
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from .. import __version__
from ..wire import validate_request
from ..wire.errors import MAX_QUOTE, SidecarError, clip, quote
from .render import RENDER
from .stdio import open_wire
from .tools import TOOLS, TOOLS_BY_NAME, ForgetTarget, Settings, ToolSpec

log = logging.getLogger("sidecar.mcp")

POLL_SECONDS = 0.25  # how often the server checks whether it should stop (signal, dead parent)
INSTRUCTIONS = (
    "Long-term memory of the user, kept on this machine. Call `context` before answering to recall what "
    "is known; `remember` what the user tells you that is worth keeping, `remember_fact` for short durable "
    "facts; `search` and `graph_recall` to look things up; `forget` when asked to."
)

Handle = Callable[[Any], BaseModel]  # a typed wire request -> its response; raises SidecarError


def _tool(spec: ToolSpec, settings: Settings) -> types.Tool:
    hints = types.ToolAnnotations(
        title=spec.title,
        read_only_hint=spec.read_only,
        destructive_hint=spec.destructive if not spec.read_only else None,
        open_world_hint=False,
    )
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema(settings),
        annotations=hints,
    )


def _schema_message(exc: jsonschema.ValidationError) -> str:
    """jsonschema's sentence with the offending value (which it repeats whole) quoted at most MAX_QUOTE
    characters, e.g. "'xxx...'... (5242880 characters) is too long"."""
    msg = exc.message
    shown = repr(exc.instance)
    if len(shown) > MAX_QUOTE and shown in msg:
        msg = msg.replace(shown, quote(exc.instance) if isinstance(exc.instance, str) else clip(shown))
    return clip(msg, MAX_QUOTE + 100)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


class Tools:
    """The two tool handlers, bound to the sidecar's request handler and settings."""

    def __init__(self, handle: Handle, settings: Settings):
        self.handle = handle
        self.settings = settings
        self.tools = [_tool(spec, settings) for spec in TOOLS]
        self.schemas = {t.name: t.input_schema for t in self.tools}
        self.limiter = anyio.CapacityLimiter(1)

    async def list_tools(self, _ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def call_tool(self, _ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = TOOLS_BY_NAME.get(params.name)
        if spec is None:
            raise MCPError(
                types.INVALID_PARAMS, f"unknown tool {quote(params.name)}; known tools: {', '.join(TOOLS_BY_NAME)}"
            )
        args = dict(params.arguments or {})
        try:
            jsonschema.validate(args, self.schemas[spec.name])
        except jsonschema.ValidationError as exc:
            # jsonschema's message repeats the offending value whole: at most MAX_QUOTE characters of it here
            where = ".".join(clip(str(p)) for p in exc.absolute_path)
            return _error(f"invalid arguments for `{spec.name}`: {f'{where}: ' if where else ''}{_schema_message(exc)}")
        user = str(args.pop("user_id", None) or self.settings.user)
        try:
            request = validate_request(spec.to_request(args, user))
            response = await anyio.to_thread.run_sync(self.handle, request, limiter=self.limiter)
        except ForgetTarget as exc:
            return _error(f"invalid arguments for `forget`: {exc}")
        except SidecarError as exc:
            return _error(f"{exc.code}: {exc.message}")
        data = response.model_dump(exclude_none=True, exclude={"request_id"})
        return types.CallToolResult(
            content=[types.TextContent(text=RENDER[spec.name](response, user))], structured_content=data
        )


def build_server(handle: Handle, settings: Settings) -> Server:
    tools = Tools(handle, settings)
    return Server(
        "memory-sidecar",
        version=__version__,
        title="memory-sidecar",
        instructions=INSTRUCTIONS,
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
    )


async def _watch(should_stop: Callable[[], bool], scope: anyio.CancelScope) -> None:
    while not should_stop():
        await anyio.sleep(POLL_SECONDS)
    log.info("stopping the MCP server")
    scope.cancel()


async def _serve(server: Server, proto_in: int, proto_out: int, should_stop: Callable[[], bool]) -> None:
    # Explicit streams: the stdout guard (wire/transport.py) already owns fd 1; the SDK then leaves fds alone.
    wire = open_wire(proto_in, proto_out)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_watch, should_stop, tg.cancel_scope)
        async with stdio_server(wire, wire) as (read_stream, write_stream):  # type: ignore[arg-type]
            await server.run(read_stream, write_stream, server.create_initialization_options())
        log.info("end of input, shutting down")
        tg.cancel_scope.cancel()


def serve(handle: Handle, settings: Settings, proto_in: int, proto_out: int, should_stop: Callable[[], bool]) -> None:
    """Serve MCP on the given descriptors until the input ends or `should_stop()` turns true.
    A tool call in progress finishes first (worker threads are not abandoned)."""
    anyio.run(partial(_serve, build_server(handle, settings), proto_in, proto_out, should_stop))
