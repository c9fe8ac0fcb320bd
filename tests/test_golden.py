"""Replays protocol/examples/*.jsonl against the real process.

Transcript lines: {"send": {...}} or {"send_raw": "..."} with {"expect": {...}}; the first line
has only "expect" (the ready line). Expected objects match when every key they name matches
(responses may carry more fields). Placeholders: "<uuid>", "<uuid as NAME>" (captured),
"<int>", "<number>", "<string>", "<any>"; "{{NAME}}" in a send or expect is a captured value.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

# Only these are placeholders; any other string (an XML block, a memory tag) is matched literally.
PLACEHOLDER = re.compile(r"<(uuid|int|number|string|any)( as \w+)?>")
EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "protocol" / "examples").glob("*.jsonl"))


def substitute(value: Any, captured: dict[str, str]) -> Any:
    if isinstance(value, str):
        m = re.fullmatch(r"\{\{(\w+)\}\}", value)
        return captured[m.group(1)] if m else value
    if isinstance(value, list):
        return [substitute(v, captured) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, captured) for k, v in value.items()}
    return value


def match(expected: Any, actual: Any, captured: dict[str, str], path: str = "$") -> None:
    if isinstance(expected, str) and PLACEHOLDER.fullmatch(expected):
        kind, _, name = expected[1:-1].partition(" as ")
        if name:
            captured[name] = actual
        if kind == "uuid":
            assert isinstance(actual, str) and uuid.UUID(actual), f"{path}: {actual!r} is not a uuid"
        elif kind == "int":
            assert isinstance(actual, int) and not isinstance(actual, bool), f"{path}: {actual!r} is not an int"
        elif kind == "number":
            assert isinstance(actual, (int, float)) and not isinstance(actual, bool), f"{path}: {actual!r}"
        elif kind == "string":
            assert isinstance(actual, str), f"{path}: {actual!r} is not a string"
        elif kind != "any":
            raise AssertionError(f"unknown placeholder {expected}")
        return
    expected = substitute(expected, captured)
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected an object, got {actual!r}"
        for k, v in expected.items():
            assert k in actual, f"{path}: missing key {k!r} in {actual!r}"
            match(v, actual[k], captured, f"{path}.{k}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{path}: {actual!r} != {expected!r}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            match(e, a, captured, f"{path}[{i}]")
    else:
        assert expected == actual, f"{path}: expected {expected!r}, got {actual!r}"


def test_there_are_transcripts():
    assert len(EXAMPLES) >= 3


def replay(sc, path: Path) -> None:
    """Run one transcript through a sidecar spawned with wait_ready=False (its first line is `ready`)."""
    steps = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    captured: dict[str, str] = {}
    for n, step in enumerate(steps):
        if "send" in step:
            sc.send(substitute(step["send"], captured))
        elif "send_raw" in step:
            sc.send_raw(step["send_raw"].encode() + b"\n")
        actual = sc.recv(120)
        try:
            match(step["expect"], actual, captured)
        except AssertionError as exc:
            raise AssertionError(f"{path.name} line {n + 1}: {exc}") from None
    if steps and steps[-1].get("send", {}).get("type") == "shutdown":
        assert sc.proc.wait(30) == 0


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_transcript(spawn, path, tmp_path):
    # relative paths (export, import) are relative to the sidecar's working directory: a fresh one
    (tmp_path / "cwd").mkdir()
    replay(spawn("--ttl-days", "0", wait_ready=False, cwd=tmp_path / "cwd"), path)
