"""Secrets never stored, private spans dropped (docs/privacy.md), through the real process: a secret sent in a
`store`, a batch, `remember`, `extract_inline` or an imported file is in no query result, no export, no request to
the LLM and no byte of the data dir; a `<private>` span neither; `--redact` turns it off or keeps kinds; the MCP
face does the same."""

from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from conftest import ROOT, files_containing

# made-up secrets in their providers' shapes, each written once below
OPENAI = "sk-proj-Qz4xW8vB2nM6kL0pR3tY7uI1oA5sD9fG2hJ"
AWS_ID, AWS_SECRET = "AKIAZ3QW7ERTY2UIOP4A", "Jx8Kq2Lm5Np9Rs3Tv6Wy1Za4Bc7De0Fg2Hi5Jk8L"
GITHUB = "ghp_Zq9Wx8Vc7Bn6Mm5Ll4Kk3Jj2Hh1Gg0Ff9Ee8Dd"
SLACK = "xoxb-3051283746-9182736450-QwErTy12UiOp34AsDf56"
CARD = "5425 2334 3010 9903"
IBAN = "GB33BUKB20201555555555"
PASSWORD = "Tangerine!47"
PRIVATE = "my therapist Dr Okonkwo"
SECRETS = (OPENAI, AWS_ID, AWS_SECRET, GITHUB, SLACK, CARD, IBAN, PASSWORD, PRIVATE)


def _no_secret_in(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} in {text[:500]!r}"


def test_secrets_and_private_spans_reach_no_result_export_llm_or_byte_of_the_data_dir(spawn, llm, tmp_path):
    data = tmp_path / "data"
    sc = spawn("--llm-base-url", llm.url, "--llm-model", "scripted", "--ttl-days", "0", data_dir=data)
    r = sc.request(
        {
            "type": "store",
            "user_id": "u1",
            "content": f"for the deploy use {OPENAI} and {AWS_ID} {AWS_SECRET}; "
            f"<private>I see {PRIVATE} on Tuesdays</private> back on Monday",
            "extract": True,
        }
    )
    assert r["type"] == "ok" and r["redacted"] == 3, r
    # batches, and stores queued together (one group commit): each answer counts its own
    lines = [
        {"type": "store", "request_id": 1, "messages": [
            {"user_id": "u1", "content": f"github: {GITHUB}"},
            {"user_id": "u1", "content": "nothing secret in this one"},
        ]},
        {"type": "store", "request_id": 2, "user_id": "u1", "content": f"card {CARD}, iban {IBAN}"},
        {"type": "store", "request_id": 3, "user_id": "u1", "content": f"my wifi password is {PASSWORD}."},
        {"type": "store", "request_id": 4, "user_id": "u1", "content": f"slack bot {SLACK}"},
    ]  # fmt: skip
    sc.send_raw(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    answers = {a["request_id"]: a for a in (sc.recv() for _ in lines)}
    assert [answers[i]["redacted"] for i in (1, 2, 3, 4)] == [1, 2, 1, 1], answers
    r = sc.request({"type": "remember", "user_id": "u1", "text": f"Their IBAN is {IBAN}", "category": "answer"})
    assert r["type"] == "remembered" and r["fact"]["text"] == "Their IBAN is [redacted: iban]", r
    r = sc.request({"type": "update_fact", "fact_id": r["fact"]["id"], "text": f"Their IBAN is {IBAN}, pw: {PASSWORD}"})
    assert r["type"] == "fact" and r["fact"]["text"] == "Their IBAN is [redacted: iban], pw: [redacted: password]", r
    r = sc.request(
        {
            "type": "extract_inline",
            "user_id": "u1",
            "reply": f'Noted. <memory category="answer">Card on file is {CARD}</memory>',
        }
    )
    assert r["type"] == "extracted" and r["facts"][0]["fact"]["text"] == "Card on file is [redacted: card number]"

    # what an LLM is sent: the background extraction read the stored (clean) text
    assert sc.request({"type": "sync", "timeout": 120})["type"] == "synced"
    assert llm.count("extract") >= 1
    _no_secret_in(json.dumps([c["body"] for c in llm.calls], ensure_ascii=False))

    results = sc.request({"type": "query", "user_id": "u1", "text": "deploy keys card password", "limit": 10})
    contents = [m["content"] for m in results["messages"]]
    assert (
        "for the deploy use [redacted: openai key] and [redacted: aws access key id] [redacted: aws secret key]; "
        "back on Monday"
    ) in contents, contents
    assert "my wifi password is [redacted: password]." in contents
    _no_secret_in(json.dumps(results, ensure_ascii=False))
    facts = sc.request({"type": "facts", "user_id": "u1"})
    _no_secret_in(json.dumps(facts, ensure_ascii=False))

    # an imported file is cleaned the same way (a file from a sidecar that kept them, or another system)
    plain = tmp_path / "old.jsonl"
    plain.write_text(
        json.dumps({"user_id": "u2", "content": f"old note: {OPENAI}", "timestamp": 1_700_000_000})
        + "\n"
        + json.dumps({"user_id": "u2", "content": f"<private>{PRIVATE}</private>", "timestamp": 1_700_000_001})
        + "\n"
    )
    r = sc.request({"type": "import", "path": str(plain)})
    assert r["type"] == "imported" and (r["messages"], r["redacted"], r["invalid"]) == (1, 1, 1), r
    assert "private" in r["errors"][0]["message"]
    found = sc.request({"type": "query", "user_id": "u2", "text": "old note", "limit": 5})
    assert [m["content"] for m in found["messages"]] == ["old note: [redacted: openai key]"]

    out = tmp_path / "export.jsonl"
    r = sc.request({"type": "export", "out": str(out)})
    assert r["type"] == "exported" and r["messages"] == 7, r
    _no_secret_in(out.read_text())

    assert sc.request({"type": "cleanup", "ttl_days": 36500})["type"] == "ok"  # (compacts the tables)
    assert sc.shutdown() == 0
    for secret in SECRETS:
        assert files_containing(data, secret.encode()) == [], secret
    assert files_containing(data, b"[redacted: openai key]")  # (the search is looking at the stored rows)


def test_a_text_that_is_all_private_is_refused_and_the_process_serves_on(shared_sidecar):
    sc = shared_sidecar
    r = sc.request({"type": "store", "user_id": "p", "content": "<private>nothing else</private>"})
    assert r["type"] == "error" and r["code"] == "invalid_request" and "<private>" in r["message"], r
    batch = [{"user_id": "p", "content": "kept?"}, {"user_id": "p", "content": " <PRIVATE>gone</private> "}]
    r = sc.request({"type": "store", "messages": batch})
    assert r["type"] == "error" and "messages[1].content" in r["message"], r
    # sent together (one group commit): the all-private one is refused alone, in its place
    group = [
        {"type": "store", "request_id": i, "user_id": "p3", "content": c}
        for i, c in enumerate((f"first {OPENAI}", "<private>only this</private>", "third"))
    ]
    sc.send_raw(b"".join(json.dumps(line).encode() + b"\n" for line in group))
    answers = [sc.recv() for _ in group]
    assert [(a["request_id"], a["type"], a.get("redacted")) for a in answers] == [
        (0, "ok", 1),
        (1, "error", None),
        (2, "ok", 0),
    ], answers
    # unclosed, nested, a stray close, 100,000 tags: each gets its answer
    cases = {
        "keep <private>rest of it": "keep",
        "a <private>b <private>c</private> d</private> e": "a e",
        "no </private>opener": "no opener",
        "<private>x</private>" * 100_000 + "tail": "tail",
    }
    for content, stored in cases.items():
        r = sc.request({"type": "store", "user_id": "p2", "content": content})
        assert r["type"] == "ok" and r["redacted"] == 0, r
        got = sc.request({"type": "query", "user_id": "p2", "text": stored, "mode": "keyword", "limit": 10})
        assert stored in [m["content"].strip() for m in got["messages"]], (stored, got)
    assert sc.request({"type": "query", "user_id": "p", "text": "kept", "limit": 5})["messages"] == []


def test_a_megabyte_of_key_like_text_is_stored_cleaned(shared_sidecar):
    content = ("sk-" * 1000 + " " + OPENAI + " eyJ.") * 250  # about 1 MB with the default --max-content-bytes
    r = shared_sidecar.request({"type": "store", "user_id": "big", "content": content[:990_000]})
    assert r["type"] == "ok" and r["redacted"] >= 200, {k: v for k, v in r.items() if k != "ids"}
    assert shared_sidecar.request({"type": "ping"})["type"] == "pong"


def test_redact_off_stores_as_written_and_keep_keeps_those_kinds(spawn, tmp_path):
    sc = spawn("--redact", "off", data_dir=tmp_path / "off")
    r = sc.request({"type": "store", "user_id": "u", "content": f"key {OPENAI} <private>x</private>"})
    assert r["redacted"] == 0
    got = sc.request({"type": "query", "user_id": "u", "text": "key", "limit": 1})
    assert got["messages"][0]["content"] == f"key {OPENAI} "  # private spans go whatever --redact says
    sc.shutdown()
    sc = spawn(data_dir=tmp_path / "keep", env={"MEMORY_SIDECAR_REDACT": "keep=iban"})
    r = sc.request({"type": "store", "user_id": "u", "content": f"iban {IBAN}, key {OPENAI}"})
    assert r["redacted"] == 1
    got = sc.request({"type": "query", "user_id": "u", "text": "iban", "limit": 1})
    assert got["messages"][0]["content"] == f"iban {IBAN}, key [redacted: openai key]"
    sc.shutdown()
    bad = spawn("--redact", "keep=passport", data_dir=tmp_path / "bad", wait_ready=False)
    assert bad.proc.wait(120) != 0
    assert "unknown kind 'passport'" in bad.stderr()


def test_the_mcp_face_cleans_what_it_stores(tmp_path):
    pytest.importorskip("mcp", reason="the MCP extra is not installed (pip install -e '.[test]')")
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_SIDECAR_")}

    @asynccontextmanager
    async def client(data_dir: Path):
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "sidecar", "mcp", "--data-dir", str(data_dir)], env=env, cwd=str(ROOT)
        )
        with open(tmp_path / "mcp-stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    yield session

    async def main():
        async with client(tmp_path / "data") as session:
            r = await session.call_tool("remember", {"content": f"prod token {GITHUB} <private>{PRIVATE}</private>"})
            text = "\n".join(c.text for c in r.content)
            assert not r.is_error and "1 secret replaced by a placeholder" in text, text
            r = await session.call_tool("remember_fact", {"text": f"Card is {CARD}", "category": "answer"})
            assert not r.is_error
            r = await session.call_tool("search", {"query": "prod token"})
            text = "\n".join(c.text for c in r.content)
            assert "prod token [redacted: github token]" in text, text
            _no_secret_in(text + json.dumps(r.structured_content))
            r = await session.call_tool("facts", {})
            text = "\n".join(c.text for c in r.content)
            assert "Card is [redacted: card number]" in text, text

    anyio.run(main)
    for secret in SECRETS:
        assert files_containing(tmp_path / "data", secret.encode()) == [], secret


def test_onnxruntime_writes_no_telemetry_device_id_or_event_database(spawn, tmp_path):
    """onnxruntime's telemetry (a device id and an event store under ~/.cache, uploaded when online) stays off."""
    home = tmp_path / "home"
    home.mkdir()
    inherited = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}  # this process's opt-out
    sc = spawn(
        base_env={**inherited, "PYTHONUNBUFFERED": "1", "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    )
    assert sc.request({"type": "store", "user_id": "u", "content": "I keep bees on the roof"})["type"] == "ok"
    assert sc.request({"type": "query", "user_id": "u", "text": "bees"})["messages"]
    assert sc.shutdown() == 0
    assert not (home / ".cache" / "Microsoft").exists(), sorted(str(p) for p in home.rglob("*"))
