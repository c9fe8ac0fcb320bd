"""Isolation and injection, as properties: for user ids full of quotes, backslashes, SQL and LanceDB
filter syntax, LIKE wildcards, unicode and emoji, no `query`, `facts`, `recall` or `context` for one
user ever returns another user's data, and `forget_user` deletes exactly that user."""

from __future__ import annotations

import re
import uuid

import orjson
import pytest
from conftest import Sidecar
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NASTY = [
    "x' OR '1'='1",
    "' OR user_id IS NOT NULL OR 'a'='a",
    "a'; DROP TABLE messages; --",
    "\\",
    "\\'",
    "''",
    "%",
    "_",
    "a%",
    "*",
    "user_id",
    "NULL",
    "1 OR 1=1",
    '"',
    "`x`",
    "a\\' OR 1=1 --",
    "🚀",
    "ünï",
    "\u200b",
    "Ω≈ç√",
    "a\nb",
    "a\tb",
    "' AND false UNION SELECT * FROM messages --",
    "id = 'x'",
    "${x}",
    "{}",
    "[]",
]
MARK = re.compile(r"mk[0-9a-f]{32}")

ids = st.one_of(
    st.sampled_from(NASTY),
    st.text(st.sampled_from(list("'\"\\%_*;-=() ORANDornd|&$`[]{}/éü🚀😀\u200b\t")), min_size=1, max_size=24),
    st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), min_size=1, max_size=24),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
).filter(lambda v: str(v).strip() != "")


@pytest.fixture(scope="module")
def iso(tmp_path_factory):
    sc = Sidecar(tmp_path_factory.mktemp("iso") / "data")
    yield sc
    if sc.alive():
        assert sc.shutdown() == 0


def marks(obj) -> set[str]:
    return set(MARK.findall(orjson.dumps(obj).decode()))


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(a=ids, b=ids, noise=ids)
def test_no_read_returns_another_users_data(iso, a, b, noise):
    if len({str(a), str(b), str(noise)}) < 3:
        return
    mine = {uid: f"mk{uuid.uuid4().hex}" for uid in (str(a), str(b), str(noise))}
    for uid, raw in ((str(a), a), (str(b), b), (str(noise), noise)):
        for k in range(2):
            iso.store(raw, f"{mine[uid]} memory {k} about coffee and hiking")
        r = iso.request(
            {"type": "remember", "user_id": raw, "text": f"{mine[uid]} likes coffee", "category": "preference"}
        )
        assert r["type"] == "remembered", r
    ua = str(a)
    reads = [
        {"type": "query", "user_id": a, "text": "coffee hiking", "limit": 100},
        {"type": "facts", "user_id": a, "limit": 100},
        {"type": "facts", "user_id": a, "text": "coffee", "include_inactive": True},
        {"type": "recall", "users": {ua: None}, "text": "coffee", "limit": 100},
        {"type": "context", "user_id": a, "text": "coffee", "format": "xml"},
        {"type": "context", "users": {ua: "A"}, "text": "coffee", "format": "markdown", "history": {"user_id": a}},
        {"type": "history", "user_id": a},
    ]
    for req in reads:
        r = iso.request(req)
        assert r["type"] != "error", (req, r)
        assert marks(r) == {mine[ua]}, (req, r)  # a's data, and nothing else
    res = iso.request(reads[0])
    assert len(res["messages"]) == 2 and {m["user_id"] for m in res["messages"]} == {ua}
    # forget_user deletes exactly that user: a's two memories and one fact, nobody else's
    before = iso.request({"type": "stats"})["memories"]
    r = iso.request({"type": "forget_user", "user_id": a})
    assert (r["deleted"], r["facts_deleted"]) == (2, 1), r
    assert iso.request({"type": "stats"})["memories"] == before - 2
    assert marks(iso.request(reads[0])) == set()
    for uid, raw in ((str(b), b), (str(noise), noise)):
        res = iso.request({"type": "query", "user_id": raw, "text": "coffee hiking", "limit": 100})
        assert marks(res) == {mine[uid]} and len(res["messages"]) == 2, res
        iso.request({"type": "forget_user", "user_id": raw})
