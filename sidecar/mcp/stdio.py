"""The MCP face's stdio streams, given to the SDK's `stdio_server` in place of its own: lines in from
the duplicated stdin, lines out to the guarded real stdout. They keep count of the requests read and
not yet answered, so that at the end of input every request already sent is answered before the
server stops (the NDJSON face's rule; the SDK alone would drop calls still running)."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import anyio

log = logging.getLogger("sidecar.mcp")

DRAIN_SECONDS = 30.0  # at the end of input, the longest wait for answers to requests already read


def _message(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


class Wire:
    def __init__(self, stdin: io.TextIOWrapper, stdout: io.TextIOWrapper):
        self.stdin = stdin
        self.stdout = stdout
        self.pending: set[Any] = set()  # ids of requests read and not answered yet

    # -- the SDK reads: `async for line in stdin`

    def __aiter__(self) -> Wire:
        return self

    async def __anext__(self) -> str:
        # abandon_on_cancel: a read blocked on a quiet stdin must not keep a stopping server alive
        line = await anyio.to_thread.run_sync(self.stdin.readline, abandon_on_cancel=True)
        if not line:
            await self._drain()
            raise StopAsyncIteration
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
