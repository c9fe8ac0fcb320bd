"""Protocol fuzzing against ONE real sidecar process: hypothesis-generated requests of every type
(wrong types, missing and extra fields, huge numbers, NaN, deep nesting, invalid UTF-8, control
characters, CRLF) and >100,000 byte-level mutations of valid requests, streamed pipelined.

Invariants, checked on every line: the process stays alive; every non-blank input line gets exactly
one response line, in order; every response line is one JSON object with a `type`; a request_id
that could be read is echoed; and the memories and facts stored before the fuzzing are all still
there afterwards (also after a restart on the same data dir).
"""

from __future__ import annotations

import json
import math
import random
import time
import uuid
from pathlib import Path

import orjson
import pytest
from conftest import Sidecar
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sidecar.wire import REQUEST_MODELS

FAR_FUTURE = time.time() + 20 * 365 * 86_400  # keepers never expire, whatever `cleanup` the fuzzer sends
KEEPERS = [
    (f"keeper-{uuid.uuid4().hex}", f"keeper memory {i}: the lighthouse keeper paints boats {uuid.uuid4().hex}")
    for i in range(5)
]
FUZZ_USERS = ["1", "u", "alice", "x' OR '1'='1", "bob\\", 'q"uote', "ünï🚀", "user_id = 'a'", "%", "*", 42]
# export and import write and read the file a request names: random paths would write wherever the test's user
# may (as root: anywhere). Their hostile input is tested in test_portable.py (bad requests, bad files).
FILE_TYPES = ("export", "import")
TYPES = sorted(t for t in REQUEST_MODELS if t != "shutdown" and t not in FILE_TYPES)
# Commands that cost an embedding or a compaction when valid (5-80 ms each on this 2-core VM) are
# generated less often, so the stream stays mostly cheap; every type is still generated many times.
WEIGHTS = {
    t: 1
    for t in (
        "cleanup",
        "forget_user",
        "remember",
        "extract_inline",
        "context",
        "recall",
        "query",
        "facts",
        "history",
        "stats",
        "consolidate",
        "graph_recall",
        "health",
    )
}


def segments(stream: bytes) -> list[bytes]:
    """The request lines the sidecar sees in a byte stream (its framing: split on LF, strip CR/LF,
    skip blank lines)."""
    out = []
    for part in stream.split(b"\n"):
        body = part.rstrip(b"\r\n")
        if body.strip():
            out.append(body)
    return out


def readable_request_id(line: bytes):
    """The request_id the sidecar must echo, or None when it cannot be read from the line."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if isinstance(obj, dict):
        rid = obj.get("request_id")
        if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
            return rid
    return None


def is_shutdown(line: bytes) -> bool:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(obj, dict) and obj.get("type") == "shutdown"


def exchange(sc: Sidecar, stream: bytes, timeout: float = 120.0) -> list[tuple[bytes, dict]]:
    """Send a byte stream (ending in a newline), then a sentinel ping; return (line, response) pairs
    after checking the one-response-per-line, JSON-only and request_id-echo invariants."""
    lines = segments(stream)
    assert not any(is_shutdown(s) for s in lines)
    FUZZED[0] += len(lines)
    sentinel = f"sentinel-{uuid.uuid4().hex}"
    sc.send_raw(stream + b'\n{"type":"ping","request_id":"' + sentinel.encode() + b'"}\n')
    pairs = []
    deadline = time.monotonic() + timeout
    for line in lines:
        r = sc.recv(max(1.0, deadline - time.monotonic()))
        pairs.append((line, r))
    last = sc.recv(max(1.0, deadline - time.monotonic()))
    assert last == {"type": "pong", "request_id": sentinel}, (
        f"response count mismatch: {len(lines)} lines sent, got an extra or missing response; last: {last}"
    )
    for line, r in pairs:
        rid = readable_request_id(line)
        if rid is not None:
            assert r.get("request_id") == rid, (line[:300], r)
        if r["type"] == "error":
            assert r["code"] in ("invalid_json", "invalid_request", "unknown_type", "not_found", "too_large"), (
                line[:300],
                r,
            )  # never `internal`: a hostile line is the client's error, not a crash
            assert isinstance(r["message"], str) and r["message"]
    assert sc.alive()
    return pairs


FUZZED = [0]  # request lines sent by this module


# ---------------------------------------------------------------- the shared sidecar


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "data"


@pytest.fixture(scope="module")
def fuzz_sidecar(fuzz_dir):
    # --compact-every-writes 20: the fuzzed writes also drive background compaction
    sc = Sidecar(fuzz_dir, "--compact-every-writes", "20", "--max-content-chars", "2000")
    for uid, content in KEEPERS:
        sc.store(uid, content, timestamp=FAR_FUTURE)
        r = sc.request({"type": "remember", "user_id": uid, "text": f"Fact of {uid}", "category": "preference"})
        assert r["type"] == "remembered", r
    yield sc
    if sc.alive():
        sc.kill()
    for raw in sc.raw_stdout:
        assert isinstance(orjson.loads(raw), dict), raw


def check_keepers(sc: Sidecar) -> None:
    for uid, content in KEEPERS:
        res = sc.request({"type": "query", "user_id": uid, "text": content, "limit": 10})
        assert [m["content"] for m in res["messages"]] == [content], res
        facts = sc.request({"type": "facts", "user_id": uid})
        assert [f["text"] for f in facts["facts"]] == [f"Fact of {uid}"], facts


# ---------------------------------------------------------------- hypothesis: structured hostile requests


class Raw:
    """A JSON token written as is (NaN, Infinity, 1e999, invalid UTF-8 in a string, raw control bytes)."""

    def __init__(self, data: bytes):
        self.data = data

    def __repr__(self) -> str:
        return f"Raw({self.data!r})"


def dump(value) -> bytes:
    if isinstance(value, Raw):
        return value.data
    if isinstance(value, float) and not math.isfinite(value):
        return b"NaN" if math.isnan(value) else (b"Infinity" if value > 0 else b"-Infinity")
    if isinstance(value, dict):
        return b"{" + b",".join(dump(str(k)) + b":" + dump(v) for k, v in value.items()) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(dump(v) for v in value) + b"]"
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


raw_tokens = st.sampled_from(
    [
        b"NaN",
        b"-Infinity",
        b"Infinity",
        b"1e999",
        b"-1e999",
        b"-0",
        b"1E+2",
        b"0.0000000000000000001",
        b"99999999999999999999999999999",
        b"-9223372036854775809",
        b"18446744073709551616",
        b"9223372036854775807",
        b'"\xff\xfe"',
        b'"\xc3\x28"',
        b'"\xed\xa0\x80"',
        b'"\\ud800"',
        b'"\\udfff\\ud800"',
        b'"a\x00b"',
        b'"\\u0000"',
        b'"tab\there"',
        b'"\x1b[31mred"',
        b'"\x7f\x01\x02"',
        b"[" * 2000 + b"]" * 2000,
        b'{"a":' * 600 + b"1" + b"}" * 600,
        b"tru",
        b"nul",
        b"'single'",
        b'"unterminated',
        b"0x10",
        b"+1",
        b".5",
        b"01",
        b"1.",
        b'"\\x41"',
        b'"\\u12"',
        b"/* c */1",
    ]
) | st.integers(1, 3).map(lambda n: b"[" * (n * 40_000))  # nesting far past any parser's depth limit
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(-2, 1002),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.text(st.characters(codec="utf-8", categories=["Cc", "Cs", "Zs", "So", "Lo"]), max_size=20),
    st.sampled_from(FUZZ_USERS),
    st.builds(Raw, raw_tokens),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)


def plausible(name: str):
    """Values that are often valid for a field (so that requests get past validation too)."""
    if name in ("user_id", "channel_id", "bot_user_id"):
        return st.sampled_from(FUZZ_USERS)
    if name in ("content", "text", "reply", "merged_text", "reason", "username", "bot_name"):
        return st.text(min_size=1, max_size=40)
    if name in (
        "limit",
        "full_count",
        "mid_count",
        "short_count",
        "mid_words",
        "short_words",
        "max_threads",
        "preferences_limit",
        "relevant_limit",
    ):
        return st.integers(-1, 1200)
    if name in ("timestamp", "since", "until", "before", "ttl_days", "timeout", "confidence", "min_similarity"):
        return st.one_of(st.floats(-2, 2e9), st.integers(-1, 2_000_000_000))
    if name == "category":
        return st.sampled_from(["preference", "company", "answer", "pattern", "nope", ""])
    if name == "format":
        return st.sampled_from(["xml", "markdown", "html"])
    if name == "action":
        return st.sampled_from(["KEEP", "invalidate", "MERGE", "drop"])
    if name == "source":
        return st.sampled_from(["manual", "chat", "extraction", "x"])
    if name in ("users",):
        return st.dictionaries(
            st.sampled_from([str(u) for u in FUZZ_USERS]), st.one_of(st.none(), st.text(max_size=8)), max_size=3
        )
    if name in ("messages",):
        msg = st.fixed_dictionaries(
            {"user_id": st.sampled_from(FUZZ_USERS), "content": st.text(max_size=20)},
            optional={
                "timestamp": st.floats(0, 2e9),
                "message_id": st.integers(0, 9),
                "reply_to": st.integers(0, 9),
                "is_bot": st.booleans(),
            },
        )
        return st.lists(msg, max_size=4)
    if name in ("is_bot", "include_bot", "include_inactive", "extract"):
        return st.booleans()
    return values


@st.composite
def request_line(draw, rid: list[int]) -> bytes:
    kind = draw(st.sampled_from([t for t in TYPES for _ in range(WEIGHTS.get(t, 4))]))
    fields = [f for f in REQUEST_MODELS[kind].model_fields if f not in ("type", "request_id")]
    obj: dict = {}
    shape = draw(st.sampled_from(["type", "type", "type", "no_type", "bad_type", "not_object"]))
    if shape == "not_object":
        return dump(draw(values))
    if shape == "type":
        obj["type"] = kind
    elif shape == "bad_type":
        obj["type"] = draw(st.one_of(values, st.text(max_size=12).filter(lambda s: s != "shutdown")))
    for name in draw(st.lists(st.sampled_from(fields), unique=True, max_size=len(fields))) if fields else []:
        obj[name] = draw(st.one_of(plausible(name), plausible(name), values))
    for _ in range(draw(st.integers(0, 2))):  # extra fields are ignored
        obj[draw(st.text(max_size=10))] = draw(values)
    if draw(st.integers(0, 9)):
        rid[0] += 1
        obj["request_id"] = rid[0] if rid[0] % 2 else f"r{rid[0]}"
    line = dump(obj)
    return line + draw(st.sampled_from([b"", b"", b"", b"\r", b" ", b"\t", b"\x00", b"\xff"]))


REQUEST_IDS = [0]


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
@given(
    batch=st.lists(request_line(REQUEST_IDS), min_size=1, max_size=60),
    eol=st.sampled_from([b"\n", b"\r\n"]),
    blank=st.booleans(),
)
def test_generated_requests_of_every_type(fuzz_sidecar, batch, eol, blank):
    stream = eol.join(batch) + eol + (b"\n  \r\n" if blank else b"")
    exchange(fuzz_sidecar, stream)


# ---------------------------------------------------------------- mutation: >100,000 lines

TEMPLATES: list[dict] = [
    {"type": "store", "user_id": "1", "content": "hey what's up", "is_bot": False, "timestamp": 1_700_000_000},
    {
        "type": "store",
        "messages": [
            {"user_id": "1", "content": "a", "channel_id": "c", "message_id": "7"},
            {"user_id": 2, "content": "b", "reply_to": "7", "username": "bo"},
        ],
    },
    {
        "type": "query",
        "user_id": "1",
        "text": "what did we talk about?",
        "limit": 5,
        "min_similarity": 0.1,
        "include_bot": True,
        "since": 0,
        "until": 2_000_000_000,
    },
    {"type": "cleanup", "ttl_days": 3650, "user_id": "1"},
    {"type": "delete", "id": "00000000-0000-0000-0000-000000000000"},
    {"type": "forget_user", "user_id": "nobody-here"},
    {"type": "stats"},
    {"type": "ping"},
    {
        "type": "channel_context",
        "channel_id": "c",
        "bot_user_id": "BOT",
        "bot_name": "Mika",
        "limit": 50,
        "max_threads": 3,
        "exclude_ids": ["1"],
        "exclude_reply_chain_of": "7",
        "text": "hi",
        "before": 2e9,
    },
    {
        "type": "channel_context",
        "messages": [
            {"user_id": "1", "content": "x", "message_id": 1},
            {"user_id": "2", "content": "y", "reply_to": 1},
        ],
    },
    {
        "type": "history",
        "channel_id": "c",
        "user_id": "1",
        "full_count": 2,
        "mid_count": 2,
        "mid_words": 3,
        "short_count": 1,
        "short_words": 2,
        "before_message_id": "7",
    },
    {"type": "remember", "user_id": "1", "text": "Lives in New York", "category": "answer", "confidence": 0.5},
    {"type": "extract_inline", "user_id": "1", "reply": 'Sure! <memory category="preference">Likes tea</memory> ok'},
    {"type": "memory_instructions"},
    {"type": "resolve", "fact_id": "f1", "candidate_id": "f2", "action": "MERGE", "merged_text": "both"},
    {"type": "facts", "user_id": "1", "text": "laptops", "category": ["answer", "preference"], "limit": 20},
    {"type": "recall", "users": {"1": "Alice", "2": None}, "text": "weekend plans", "limit": 5},
    {"type": "fact_history", "fact_id": "f1"},
    {"type": "update_fact", "fact_id": "f1", "text": "Works at Acme"},
    {"type": "forget_fact", "fact_id": "f1"},
    {
        "type": "context",
        "format": "markdown",
        "users": {"1": "alice"},
        "text": "hello",
        "channel": {"channel_id": "c"},
        "history": {"user_id": "1"},
    },
    {"type": "sync", "timeout": 0.01},
    {"type": "entities", "user_id": "1", "entity_type": "person", "prefix": "a", "limit": 10},
    {"type": "entity", "user_id": "1", "name": "Alice"},
    {"type": "merge_entities", "user_id": "1", "source": "a", "target": "b"},
    {"type": "consolidate", "user_id": "1"},
    {"type": "health"},
    {
        "type": "graph_recall",
        "user_id": "1",
        "text": "what did Alice say?",
        "limit": 3,
        "episodes": 2,
        "since": 0,
        "strengthen": False,
        "params": {"spread": 0.8, "gate": 0.2},
    },
]
assert {t["type"] for t in TEMPLATES} == set(TYPES)
INSERTS = [
    b"\x00",
    b"\xff",
    b"\xc3",
    b"\r",
    b"\n",
    b"\r\n",
    b"\x1b",
    b'"',
    b"\\",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"NaN",
    b"1e999",
    b"-",
    b"\xed\xa0\x80",
    b"\\u0000",
    b"\\ud800",
    b" ",
    b"\t",
    b"null",
    b'"type"',
]
HOSTILE_VALUES = [
    b"NaN",
    b"Infinity",
    b"1e999",
    b"-1",
    b"0",
    b"99999999999999999999999",
    b"null",
    b"true",
    b"[]",
    b"{}",
    b'""',
    b'"\xff"',
    b'"\\u0000"',
    b"[" * 300 + b"]" * 300,
    b'"' + b"x" * 5000 + b'"',
]


def mutate(rng: random.Random, base: bytes, other: bytes, costly: bool) -> bytes:
    data = bytearray(base)
    for k in range(rng.randint(1, 3)):
        # value replacement and field drops keep the line JSON more often than not (validation paths);
        # a costly request (embedding, LanceDB read or commit) mostly gets a hostile value first, which
        # keeps the valid costly ones to a few percent of the stream
        op = 6 if k == 0 and costly and rng.random() < 0.85 else rng.choice((0, 1, 2, 3, 4, 5, 6, 6, 6, 6, 7, 7, 7, 8))
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:  # flip a byte
            data[min(pos, len(data) - 1)] = rng.randrange(256)
        elif op == 1:
            data[pos:pos] = rng.choice(INSERTS)
        elif op == 2 and data:
            del data[pos : pos + rng.randint(1, 12)]
        elif op == 3:
            data[pos:pos] = data[pos : pos + rng.randint(1, 20)]
        elif op == 4:
            del data[pos:]
        elif op == 5:  # splice with another request
            cut = rng.randrange(len(other) + 1)
            data[pos:] = other[cut:]
        elif op == 6:  # replace a value (after a colon) with a hostile one
            colons = [i for i, b in enumerate(data) if b == ord(":")]
            if colons:
                i = rng.choice(colons) + 1
                j = i
                while j < len(data) and data[j] not in b",}":
                    j += 1
                data[i:j] = rng.choice(HOSTILE_VALUES)
        elif op == 7:  # drop or duplicate a field
            commas = [i for i, b in enumerate(data) if b == ord(",")]
            if len(commas) >= 2:
                a, b = sorted(rng.sample(commas, 2))
                data[a:b] = b"" if rng.random() < 0.5 else data[a:b] * 2
        else:
            data[pos:pos] = b'"' + bytes(rng.randrange(1, 32) for _ in range(rng.randint(1, 4))) + b'"'
    return bytes(data)


MUTATED_LINES = 105_000
CHUNK = 3_000


def test_mutated_requests(fuzz_sidecar):
    rng = random.Random(20261122)
    cheap = {"ping", "memory_instructions", "sync"}
    sent = 0
    answered: dict[str, int] = {}
    while sent < MUTATED_LINES:
        lines = []
        for _ in range(CHUNK):
            # four lines in five start from a cheap command; the rest from any command
            t = dict(rng.choice([x for x in TEMPLATES if x["type"] in cheap] if rng.random() < 0.8 else TEMPLATES))
            t["request_id"] = sent + len(lines)
            line = mutate(rng, orjson.dumps(t), orjson.dumps(rng.choice(TEMPLATES)), t["type"] not in cheap)
            if not any(is_shutdown(s) for s in segments(line)):
                lines.append(line)
        stream = b"".join(line + (b"\r\n" if i % 7 == 0 else b"\n") for i, line in enumerate(lines))
        for _line, r in exchange(fuzz_sidecar, stream):
            key = r["type"] if r["type"] != "error" else r["code"]
            answered[key] = answered.get(key, 0) + 1
        sent += len(lines)
    print(f"{sent} mutated lines: {answered}")
    # the stream exercised both sides: most lines rejected, but many valid requests of many types served
    assert answered.get("invalid_json", 0) > 10_000 and answered.get("invalid_request", 0) > 10_000, answered
    assert len([k for k in answered if k not in ("invalid_json", "invalid_request", "unknown_type")]) >= 10, answered


def test_keepers_intact_after_fuzzing_and_restart(fuzz_sidecar, fuzz_dir):
    print(f"{FUZZED[0]} fuzzed request lines answered")
    check_keepers(fuzz_sidecar)
    # the last line has no newline at EOF: still answered, then a clean exit
    fuzz_sidecar.send_raw(b'{"type":"ping","request_id":"eof"}')
    fuzz_sidecar.close_stdin()
    assert fuzz_sidecar.recv() == {"type": "pong", "request_id": "eof"}
    assert fuzz_sidecar.proc.wait(60) == 0
    again = Sidecar(fuzz_dir)
    try:
        check_keepers(again)
        assert again.shutdown() == 0
    finally:
        if again.alive():
            again.kill()
