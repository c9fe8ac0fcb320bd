"""`memory-sidecar mcp`: the MCP face, driven over real stdio by the SDK's own client
(`stdio_client` + `ClientSession`), with the real model and a real data dir; plus raw JSON-RPC
through pipes for the stdout rule and the shutdown paths."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

pytest.importorskip("mcp", reason="the MCP extra is not installed (pip install -e '.[test]')")

import anyio
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

TOOLS = {"remember", "search", "facts", "remember_fact", "forget", "context", "graph_recall", "entities"}
TIMEOUT = 120


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_SIDECAR_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


@asynccontextmanager
async def client(data_dir: Path, *args: str):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "sidecar", "mcp", "--data-dir", str(data_dir), *args],
        env=_env(),
        cwd=str(ROOT),
    )
    with open(data_dir.parent / f"{data_dir.name}-stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> tuple[str, Any]:
    """A tool call that must succeed: its text and structured content."""
    result = await session.call_tool(tool, arguments)
    text = "\n".join(c.text for c in result.content)
    assert not result.is_error, f"{tool}({arguments}) failed: {text}"
    return text, result.structured_content


async def fails(session: ClientSession, tool: str, **arguments: Any) -> str:
    """A tool call that must come back as a tool error (isError), not a crash: its text."""
    result = await session.call_tool(tool, arguments)
    text = "\n".join(c.text for c in result.content)
    assert result.is_error, f"{tool}({arguments}) should fail, got: {text}"
    return text


# ---------------------------------------------------------------- through the SDK's client


def test_tools_are_listed_with_schemas(tmp_path):
    async def main():
        async with client(tmp_path / "data") as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            schema = tool.input_schema
            assert tool.description and len(tool.description) > 40, tool.name
            assert schema["type"] == "object" and schema["additionalProperties"] is False
            assert schema["properties"]["user_id"]["type"] == "string", tool.name
            assert "user_id" not in schema["required"]
        assert tools["remember"].input_schema["required"] == ["content"]
        assert tools["search"].input_schema["required"] == ["query"]
        search = tools["search"].input_schema["properties"]
        assert search["mode"]["enum"] == ["hybrid", "semantic", "keyword", "graph"]
        assert search["limit"]["maximum"] == 100 and search["limit"]["minimum"] == 1
        assert (search["min_score"]["minimum"], search["min_score"]["maximum"]) == (0, 1)
        fact = tools["remember_fact"].input_schema
        assert fact["required"] == ["text", "category"]
        assert fact["properties"]["category"]["enum"] == ["preference", "company", "pattern", "answer"]
        assert set(tools["forget"].input_schema["properties"]) == {"message_id", "fact_id", "everything", "user_id"}
        assert tools["forget"].annotations.destructive_hint is True
        assert tools["search"].annotations.read_only_hint is True

    anyio.run(main)


def test_each_tool_does_its_job(tmp_path):
    async def main():
        async with client(tmp_path / "data", "--user", "uma") as session:
            before = time.time()
            _, stored = await call(session, "remember", content="My cat Miso hates the vacuum cleaner")
            await call(session, "remember", content="I went hiking with Ana at Mount Tamalpais on Saturday")
            await call(session, "remember", content="The quarterly report is due on Friday")

            text, found = await call(session, "search", query="tell me about pets", limit=1)
            assert found["messages"][0]["id"] == stored["id"] and "Miso" in text
            assert found["messages"][0]["user_id"] == "uma"  # --user is the default scope
            _, keyword = await call(session, "search", query="quarterly report", mode="keyword")
            assert keyword["messages"][0]["content"] == "The quarterly report is due on Friday"
            # no padding: small talk is left out unless min_score 0 asks for it
            await call(session, "remember", content="haha nice")
            _, found = await call(session, "search", query="what is my cat called?", limit=4)
            assert "haha nice" not in [m["content"] for m in found["messages"]]
            _, padded = await call(session, "search", query="what is my cat called?", limit=4, min_score=0)
            assert "haha nice" in [m["content"] for m in padded["messages"]]

            text, fact = await call(session, "remember_fact", text="Prefers window seats", category="preference")
            assert fact["action"] == "added" and "Prefers window seats" in text
            text, facts = await call(session, "facts")
            assert [f["text"] for f in facts["facts"]] == ["Prefers window seats"] and fact["fact"]["id"] in text
            _, again = await call(session, "remember_fact", text="Prefers window seats", category="preference")
            assert again["action"] == "duplicate"
            # as_of: what was known then (nothing, before the first call)
            assert (await call(session, "facts", as_of=before - 1))[1]["facts"] == []
            text, then = await call(
                session, "context", text="what should I get my cat?", as_of=before - 1, history=False
            )
            assert then["facts"] == 0 and then["memories"] == 0 and "Prefers window seats" not in text
            assert "as_of" in await fails(session, "facts", as_of=-5)

            text, ctx = await call(session, "context", text="what should I get my cat?")
            assert "Prefers window seats" in text and "Miso" in text  # the facts block and the history block
            assert ctx["facts"] == 1

            names = []
            for _ in range(100):  # the graph is built in the background
                text, entities = await call(session, "entities")
                names = [e["name"] for e in entities["entities"]]
                if "Ana" in names:
                    break
                await anyio.sleep(0.1)
            assert "Ana" in names and "Ana" in text
            text, recalled = await call(session, "graph_recall", query="where did Ana go hiking?")
            assert recalled["known"] is True and "Mount Tamalpais" in text
            _, unknown = await call(session, "graph_recall", query="what did Zebulon cook?")
            assert unknown["known"] is False
            _, then = await call(session, "graph_recall", query="where did Ana go hiking?", as_of=before - 1)
            assert then["traces"] == []

            text, gone = await call(session, "forget", message_id=stored["id"])
            assert gone["deleted"] == 1
            _, found = await call(session, "search", query="tell me about pets", mode="keyword")
            assert stored["id"] not in [m["id"] for m in found["messages"]]
            _, gone = await call(session, "forget", fact_id=fact["fact"]["id"])
            assert gone["deleted"] == 1
            assert (await call(session, "facts"))[1]["facts"] == []
            text, gone = await call(session, "forget", everything=True)
            assert gone["deleted"] == 3 and "uma" in text and "tombstone" in text
            assert gone["removed"]["memories"] == 3 and gone["tombstone"]["id"] == "uma"
            assert (await call(session, "search", query="hiking"))[1]["messages"] == []

    anyio.run(main)


def test_a_replaced_memory_says_so_in_search(tmp_path):
    async def main():
        async with client(tmp_path / "data", "--user", "uma") as session:
            _, paris = await call(session, "remember", content="I live in Paris, near the Canal Saint-Martin.")
            await anyio.sleep(1.1)  # a later second: the move comes after
            _, rome = await call(session, "remember", content="I moved to Rome.")
            for _ in range(100):  # the graph is built in the background
                text, found = await call(session, "search", query="Canal Saint-Martin")
                if any(m.get("superseded") for m in found["messages"]):
                    break
                await anyio.sleep(0.1)
            old = next(m for m in found["messages"] if m["id"] == paris["id"])
            assert old["superseded"]["id"] == rome["id"]
            assert [m["id"] for m in found["messages"]][:2] == [rome["id"], paris["id"]]  # what is true now first
            line = next(x for x in text.splitlines() if "Canal Saint-Martin" in x)
            assert f"outdated: replaced by {rome['id']}" in line
            text, _ = await call(session, "context", text="Canal Saint-Martin")  # (the history block shows it as said)
            assert all("outdated" in x for x in text.splitlines() if x.startswith("- ") and "Saint-Martin" in x)

    anyio.run(main)


def test_user_id_scopes_each_call(tmp_path):
    async def main():
        async with client(tmp_path / "data") as session:
            _, cello = await call(session, "remember", content="I play the cello", user_id="alice")
            await call(session, "remember", content="I play the drums")
            _, fact = await call(session, "remember_fact", text="Plays the cello", category="pattern", user_id="alice")
            # forget scopes too: alice's ids, asked for by the default user (or bob), are not found
            for who in ({}, {"user_id": "bob"}):
                assert (
                    await fails(session, "forget", message_id=cello["id"], **who)
                    == f"not_found: no memory with id '{cello['id']}'"
                )
                assert (
                    await fails(session, "forget", fact_id=fact["fact"]["id"], **who)
                    == f"not_found: no fact with id '{fact['fact']['id']}'"
                )
            _, mine = await call(session, "search", query="music instrument")
            assert [m["content"] for m in mine["messages"]] == ["I play the drums"]
            assert mine["messages"][0]["user_id"] == "default"
            _, hers = await call(session, "search", query="music instrument", user_id="alice")
            assert [m["content"] for m in hers["messages"]] == ["I play the cello"]
            assert (await call(session, "facts"))[1]["facts"] == []
            assert len((await call(session, "facts", user_id="alice"))[1]["facts"]) == 1
            await call(session, "forget", everything=True, user_id="alice")
            assert (await call(session, "search", query="music instrument", user_id="alice"))[1]["messages"] == []
            assert len((await call(session, "search", query="music instrument"))[1]["messages"]) == 1

    anyio.run(main)


def test_errors_are_mcp_errors_and_the_server_lives_on(tmp_path):
    async def main():
        async with client(tmp_path / "data", "--graph", "false") as session:
            assert "query" in await fails(session, "search")
            assert "minimum" in await fails(session, "search", query="x", limit=0)
            assert "mode" in await fails(session, "search", query="x", mode="psychic")
            assert "maximum" in await fails(session, "search", query="x", min_score=1.5)
            assert "minimum" in await fails(session, "search", query="x", min_score=-0.1)
            assert "Additional properties" in await fails(session, "remember", content="x", colour="red")
            assert "not one of" in await fails(session, "remember_fact", text="x", category="mood")
            assert "content must not be empty" in await fails(session, "remember", content="   ")
            assert "exactly one" in await fails(session, "forget")
            assert "exactly one" in await fails(session, "forget", message_id="a", fact_id="b")
            assert (
                await fails(session, "forget", message_id="no-such-id") == "not_found: no memory with id 'no-such-id'"
            )
            assert (await fails(session, "forget", fact_id="no-such-fact")).startswith("not_found:")
            assert (await fails(session, "search", query="x", limit=101)).startswith("invalid arguments")
            huge = await fails(session, "search", query="x", user_id="u" * (5 << 20))  # 5 MiB: a short answer
            assert "is too long" in huge and "u" * 201 not in huge and len(huge) < 400, huge[:500]
            assert (await fails(session, "entities")).startswith("disabled:")  # --graph false reaches the dispatcher
            # the pipe's limits, measured after NFKC (U+FDFA: 3 bytes, 33 after): issue 64
            assert "65536" in await fails(session, "search", query="\ufdfa" * 4000)
            assert "65536" in await fails(session, "facts", query="\ufdfa" * 4000)
            assert "--max-content-bytes" in await fails(session, "remember", content="\ufdfa" * 60_000)
            with pytest.raises(MCPError, match="unknown tool 'recall_everything'"):
                await session.call_tool("recall_everything", {})
            text, _ = await call(session, "remember", content="still here")
            assert text.startswith("Remembered")

    anyio.run(main)


# ---------------------------------------------------------------- raw pipes: stdout and shutdown


def _spawn(data_dir: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "sidecar", "mcp", "--data-dir", str(data_dir), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        cwd=str(ROOT),
    )


def _rpc(id_: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = params
    return (json.dumps(msg) + "\n").encode()


INITIALIZE = _rpc(
    1,
    "initialize",
    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


def _call(id_: int, tool: str, **arguments: Any) -> bytes:
    return _rpc(id_, "tools/call", {"name": tool, "arguments": arguments})


def test_stdout_carries_only_json_rpc_and_end_of_input_answers_everything(tmp_path):
    data = tmp_path / "data"
    requests = [
        INITIALIZE,
        INITIALIZED,
        _rpc(2, "tools/list"),
        *(_call(10 + i, "remember", content=f"note number {i} about the garden") for i in range(5)),
        _call(20, "search", query="garden", limit=10),
        b"this is not json\n",
    ]
    proc = _spawn(data, "--log-level", "debug")  # debug: plenty of logging, none of it on stdout
    out, err = proc.communicate(b"".join(requests), timeout=TIMEOUT)  # stdin closes after the last line
    assert proc.returncode == 0, err.decode(errors="replace")
    lines = out.decode().splitlines()
    messages = [json.loads(line) for line in lines]  # every stdout line is JSON ...
    assert all(m["jsonrpc"] == "2.0" and ("result" in m or "error" in m) for m in messages)  # ... and JSON-RPC
    answers = {m["id"]: m for m in messages if m["id"] is not None}
    assert set(answers) == {1, 2, 10, 11, 12, 13, 14, 20}  # requests in flight at EOF still get their answer
    assert [m["error"]["code"] for m in messages if m["id"] is None] == [-32700]  # the line that is not JSON
    assert all(not answers[i]["result"]["isError"] for i in range(10, 15))
    assert b"sidecar" in err  # the logs went to stderr
    # the store was closed cleanly: a new server opens the same data dir and finds every write
    proc = _spawn(data)
    out, err = proc.communicate(
        INITIALIZE + INITIALIZED + _call(2, "search", query="garden", limit=10), timeout=TIMEOUT
    )
    found = {json.loads(line)["id"]: json.loads(line) for line in out.decode().splitlines()}
    assert len(found[2]["result"]["structuredContent"]["messages"]) == 5, err.decode(errors="replace")


def test_what_it_cannot_parse_is_answered_and_it_keeps_serving(tmp_path):
    """Each line the SDK cannot take gets its JSON-RPC error (the SDK alone dropped them: the client waited
    forever), a call whose arguments hold a lone surrogate is answered under its own id, and the server
    serves on: the call after them succeeds."""
    proc = _spawn(tmp_path / "data")
    assert proc.stdin is not None and proc.stdout is not None
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()

    def answer(line: bytes) -> dict[str, Any]:
        proc.stdin.write(line)
        proc.stdin.flush()
        try:
            return json.loads(lines.get(timeout=TIMEOUT))
        except queue.Empty:
            raise AssertionError(f"no answer to {line!r} within {TIMEOUT} s") from None

    try:
        assert "result" in answer(INITIALIZE)
        proc.stdin.write(INITIALIZED)
        cases = [
            (b"not json\n", -32700, None),
            (b"\xff\xfe{\n", -32700, None),
            (b"[]\n", -32600, None),
            (b'[{"jsonrpc":"2.0","id":5,"method":"tools/list"}]\n', -32600, None),
            (b"42\n", -32600, None),
            (b'{"jsonrpc":"2.0","id":6}\n', -32600, 6),
            (_call(7, "remember", content="a\ud800b"), -32602, 7),
            (
                b'{"jsonrpc":"2.0","id":"q","method":"tools/call","params":{"name":"search",'
                b'"arguments":{"query":"\\ud800"}}}\n',
                -32602,
                "q",
            ),
        ]
        for line, code, ident in cases:
            got = answer(line)
            assert got["jsonrpc"] == "2.0" and got["id"] == ident and got["error"]["code"] == code, (line, got)
            assert got["error"]["message"], got
        ok = answer(_call(9, "remember", content="still serving after the bad lines"))
        assert ok["id"] == 9 and not ok["result"]["isError"], ok
        proc.stdin.close()
        assert proc.wait(TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_closes_the_store_and_exits_0(tmp_path):
    data = tmp_path / "data"
    proc = _spawn(data)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INITIALIZE + INITIALIZED + _call(2, "remember", content="the spare key is under the pot"))
    proc.stdin.flush()
    answers = [json.loads(proc.stdout.readline()) for _ in range(2)]
    assert answers[1]["id"] == 2 and not answers[1]["result"]["isError"]
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)  # stdin stays open: the signal alone ends it
    assert proc.wait(30) == 0, proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    assert time.monotonic() - t0 < 10
    proc = _spawn(data)
    out, _ = proc.communicate(INITIALIZE + INITIALIZED + _call(2, "search", query="where is the key?"), timeout=TIMEOUT)
    assert "spare key" in out.decode()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process state from /proc")
def test_exits_when_the_parent_dies_even_if_stdin_stays_open(tmp_path):
    pid_file = tmp_path / "server.pid"
    wrapper = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-m', 'sidecar', 'mcp', '--data-dir', {str(tmp_path / 'd')!r}])\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(600)\n"
    )
    # the wrapper's child inherits our stdin pipe, which we keep open: no EOF will come
    parent = subprocess.Popen(
        [sys.executable, "-c", wrapper],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
        cwd=str(ROOT),
    )
    assert parent.stdin is not None and parent.stdout is not None
    parent.stdin.write(INITIALIZE)
    parent.stdin.flush()
    assert json.loads(parent.stdout.readline())["id"] == 1  # serving
    child = int(pid_file.read_text())
    parent.kill()
    parent.wait(10)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 10:
        try:  # gone, or a zombie waiting for its new parent to reap it
            with open(f"/proc/{child}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    break
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.05)
    else:
        os.kill(child, signal.SIGKILL)
        raise AssertionError("MCP server still running 10 s after its parent died")
    assert time.monotonic() - t0 < 2.0
    parent.stdin.close()


# ---------------------------------------------------------------- the command line


def test_help_and_bad_flags():
    out = subprocess.run(
        [sys.executable, "-m", "sidecar", "mcp", "--help"], capture_output=True, text=True, timeout=60, cwd=str(ROOT)
    )
    assert out.returncode == 0 and "--user" in out.stdout and "MEMORY_SIDECAR_USER" in out.stdout
    assert "--data-dir" in out.stdout and "--graph" in out.stdout  # the sidecar's options apply here too
    bad = subprocess.run(
        [sys.executable, "-m", "sidecar", "mcp", "--user", " "],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(ROOT),
        stdin=subprocess.DEVNULL,
    )
    assert bad.returncode == 2 and "--user" in bad.stderr and bad.stdout == ""


def test_missing_extra_exits_2_with_the_pip_command(tmp_path, monkeypatch, capsys):
    import importlib.util

    from sidecar.runtime import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a))
    assert cli.main(["mcp", "--data-dir", str(tmp_path / "data")]) == 2
    captured = capsys.readouterr()
    # the package is on no index yet: the command names this checkout, and the release's wheel
    assert f"pip install '{ROOT}[mcp]'" in captured.err and captured.out == ""
    assert "py3-none-any.whl[mcp]'" in captured.err and "not on PyPI yet" in captured.err
    assert not (tmp_path / "data").exists()  # nothing was started
