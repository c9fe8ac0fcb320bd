"""The MCP face's stdio streams, given to the SDK's `stdio_server` in place of its own: lines in from
the duplicated stdin, lines out to the guarded real stdout. They keep count of the requests read and
not yet answered, so that at the end of input every request already sent is answered before the
server stops (the NDJSON face's rule; the SDK alone would drop calls still running). A line the SDK
cannot take (not JSON, not an object, a batch, a string holding a lone surrogate) is answered here with a
JSON-RPC error and never reaches the SDK, which would drop it without an answer and leave the client
waiting: -32700 for what is not JSON (id null), -32600 for what is not one JSON-RPC message, -32602 for a
request whose params are not Unicode text (with the request's id, so its caller is answered)."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import anyio
import mcp_types as types
from pydantic import ValidationError

from ..wire.errors import clip

log = logging.getLogger("sidecar.mcp")

DRAIN_SECONDS = 30.0  # at the end of input, the longest wait for answers to requests already read


def _message(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _request_id(msg: Any) -> str | int | None:
    """The message's id when it has one JSON-RPC allows (a string or an integer), else None."""
    ident = msg.get("id") if isinstance(msg, dict) else None
    return ident if isinstance(ident, str | int) and not isinstance(ident, bool) else None


def _has_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def refusal(line: str) -> dict[str, Any] | None:
    """The JSON-RPC error answering a line the SDK cannot take, or None when it is a message it reads."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValidationError as exc:
        reason = clip(str(exc.errors(include_url=False, include_input=False)[0].get("msg", exc)), 200)
    msg = _message(line)
    ident = _request_id(msg)
    if msg is None:
        code, text, ident = types.PARSE_ERROR, f"Parse error: the line is not JSON ({reason})", None
    elif isinstance(msg, list):
        code, text = types.INVALID_REQUEST, "Invalid request: batches are not supported; send one message a line"
    elif not isinstance(msg, dict):
        code, text = types.INVALID_REQUEST, "Invalid request: a JSON-RPC message is a JSON object"
    elif _has_lone_surrogate(msg):
        code = types.INVALID_PARAMS if "method" in msg and ident is not None else types.PARSE_ERROR
        text = (
            "Invalid params: a string holds a lone surrogate (such as \\ud800), which is not Unicode text"
            if code == types.INVALID_PARAMS
            else "Parse error: a string holds a lone surrogate (such as \\ud800), which is not Unicode text"
        )
    else:
        code, text = types.INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request, notification or response"
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": text}}


class Wire:
    def __init__(self, stdin: io.TextIOWrapper, stdout: io.TextIOWrapper):
        self.stdin = stdin
        self.stdout = stdout
        self.pending: set[Any] = set()  # ids of requests read and not answered yet
        self.writing = anyio.Lock()  # the SDK's answers and this face's refusals, one line at a time

    # -- the SDK reads: `async for line in stdin`

    def __aiter__(self) -> Wire:
        return self

    async def __anext__(self) -> str:
        while True:
            # abandon_on_cancel: a read blocked on a quiet stdin must not keep a stopping server alive
            line = await anyio.to_thread.run_sync(self.stdin.readline, abandon_on_cancel=True)
            if not line:
                await self._drain()
                raise StopAsyncIteration
            if not line.strip():
                continue  # a blank line is no message
            error = refusal(line)
            if error is None:
                break
            log.warning("MCP input refused (%d): %s", error["error"]["code"], error["error"]["message"])
            await self.write(json.dumps(error, separators=(",", ":")) + "\n")
        msg = _message(line)
        if isinstance(msg, dict) and "method" in msg and msg.get("id") is not None:
            self.pending.add(msg["id"])
        return line

    async def _drain(self) -> None:
        with anyio.move_on_after(DRAIN_SECONDS):
            while self.pending:
                await anyio.sleep(0.02)
        if self.pending:
            log.warning("end of input: %d requests still unanswered after %.0f s", len(self.pending), DRAIN_SECONDS)

    # -- the SDK writes: `await stdout.write(json + "\n"); await stdout.flush()`

    async def write(self, text: str) -> None:
        async with self.writing:
            await anyio.to_thread.run_sync(self.stdout.write, text)  # write-through: on the pipe once written
        msg = _message(text)
        if isinstance(msg, dict) and ("result" in msg or "error" in msg):
            self.pending.discard(msg.get("id"))

    async def flush(self) -> None:
        await anyio.to_thread.run_sync(self.stdout.flush)


def open_wire(proto_in: int, proto_out: int) -> Wire:
    stdin = io.TextIOWrapper(open(proto_in, "rb", buffering=1 << 16), encoding="utf-8", errors="replace")
    stdout = io.TextIOWrapper(open(proto_out, "wb", buffering=0), encoding="utf-8", newline="\n", write_through=True)
    return Wire(stdin, stdout)
