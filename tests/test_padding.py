"""No padding (issue 66): `query` and `context` do not fill a list with what does not answer the question.
Small talk ("lol", "gn", emoji only) is never returned, and a result that shares no term with the question
is returned only at `min_score` cosine or above; so a query may answer fewer than `limit` results, or none.
`min_score` 0 gives the answers from before. The pure step (messages/padding.py) with fake rows, then the
real sidecar over the pipe: the floor, bad values of it, a one-character question, a user of small talk only."""

from __future__ import annotations

import math

import pytest

from sidecar.messages.padding import MAX_CHARS, drop_padding, fetch, shares_term
from sidecar.text import is_backchannel
from sidecar.wire import validate_request
from sidecar.wire.base import MIN_SCORE
from sidecar.wire.errors import InvalidRequest


def row(content: str, similarity: float, **extra):
    return {"id": content, "content": content, "similarity": similarity, **extra}


# ----------------------------------------------------------------------------------------- the pure step


def test_small_talk_and_unrelated_results_below_the_floor_are_dropped_in_order():
    rows = [
        row("finally signed the lease, living in Berlin now", 0.55),
        row("haha nice", 0.50),  # small talk: dropped whatever its cosine
        row("I adopted a beagle called Rufus", 0.05),  # shares "living"? no; low: dropped
        row("the lease in Berlin was cheap", 0.02),  # shares "lease" and "berlin": kept however low
        row("so tired today", 0.30),  # shares nothing, above the floor: kept
        row("👍🎉", 0.40),
        row("gn", 0.35),
    ]
    got = [r["content"] for r in drop_padding(rows, "where am I living, which lease?", 0.13)]
    assert got == [
        "finally signed the lease, living in Berlin now",
        "the lease in Berlin was cheap",
        "so tired today",
    ]


def test_floor_zero_returns_every_row_unchanged():
    rows = [row("lol", 0.9), row("unrelated", -0.2)]
    assert drop_padding(rows, "anything", 0) == rows
    assert fetch(5, 0) == 5  # and asks the ranking for no more than the limit


def test_without_likeness_only_small_talk_is_dropped():
    rows = [row("lol", 0.9), row("my cat Miso", -0.1)]
    assert [r["content"] for r in drop_padding(rows, "dog", 0.5, likeness=False)] == ["my cat Miso"]


def test_a_long_memory_is_judged_by_the_chunk_that_matched():
    tail = "the wombat sanctuary opens at nine"
    content = "x " * MAX_CHARS + tail
    span = [len(content) - len(tail), len(content)]
    assert drop_padding([row(content, 0.05, span=span)], "when does the wombat sanctuary open?", 0.2)
    assert not drop_padding([row(content, 0.05, span=[0, 40])], "when does the wombat sanctuary open?", 0.2)


def test_terms_are_shared_in_every_script():
    assert shares_term("我现在住在哪个城市？")("我住在上海")  # Han bigrams: 住在
    assert not shares_term("我现在住在哪个城市？")("哈哈")
    assert shares_term("где я сейчас живу?")("теперь живу в Казани")  # stems
    assert not shares_term("a")("a cat")  # a stop word is no term
    assert fetch(5, 0.13) == 20


@pytest.mark.parametrize(
    "text, expected",
    [
        ("哈哈好的", True),  # reactions run together in a script without spaces
        ("ｗｗｗ", True),  # full-width
        ("ахаха", True),
        ("ahaha", True),
        ("오키", True),
        ("ㅋㅋㅋ", True),
        ("تصبح على خير", True),
        ("哈哈我搬到北京了", False),
        ("ahaha my cat ate the cake", False),
        ("오키 내일 서울 가", False),
    ],
)
def test_small_talk_of_the_main_languages(text, expected):
    assert is_backchannel(text) is expected


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.2", True, math.nan, math.inf, None])
def test_a_bad_floor_is_an_invalid_request_naming_the_field(bad):
    # the MCP face hands parsed JSON (where NaN is a float) to the same validation as the pipe
    for req, field in (
        ({"type": "query", "user_id": "u", "text": "cats"}, "min_score"),
        ({"type": "context", "user_id": "u", "text": "cats"}, "memories_min_score"),
    ):
        with pytest.raises(InvalidRequest, match=field):
            validate_request({**req, field: bad})


# ----------------------------------------------------------------------------------------- end to end

SMALL_TALK = ["lol", "haha nice", "nice one", "gn", "👍", "ok", "哈哈", "ㅋㅋ"]
LEASE = "finally signed the lease, I'm officially living in Berlin now"
BEAGLE = "we adopted a beagle puppy, his name is Rufus"
DOG = "我们养了一只小狗叫豆豆"


@pytest.fixture(scope="module")
def padded(shared_sidecar):
    """Two users with statements among small talk (one in Chinese), one with small talk only."""
    sc = shared_sidecar
    msgs = [{"user_id": "sam", "content": c, "channel_id": "c"} for c in [LEASE, *SMALL_TALK, BEAGLE, *SMALL_TALK]]
    msgs += [{"user_id": "chatty", "content": c, "channel_id": "c"} for c in SMALL_TALK]
    msgs += [{"user_id": "lin", "content": c, "channel_id": "c"} for c in [DOG, *SMALL_TALK, "我在上海工作", "哈哈哈"]]
    assert sc.request({"type": "store", "messages": msgs})["type"] == "ok"
    return sc


def ask(sc, text, user="sam", **extra):
    r = sc.request({"type": "query", "user_id": user, "text": text, "limit": 5, **extra})
    assert r["type"] == "results", r
    return r["messages"]


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "graph"])
def test_small_talk_never_pads_a_list(padded, mode):
    got = ask(padded, "which city am I living in right now?", mode=mode)
    assert not {m["content"] for m in got} & set(SMALL_TALK), got
    if mode != "graph":
        assert got[0]["content"] == LEASE
        # below the floor and sharing no term, nothing else comes back: fewer than the limit
        assert all(m["similarity"] >= MIN_SCORE or m["content"] == LEASE for m in got)
        assert len(got) < 5


def test_keyword_results_share_a_word_but_small_talk_is_still_dropped(padded):
    assert [m["content"] for m in ask(padded, "is the beagle nice?", mode="keyword")] == [BEAGLE]
    before = ask(padded, "is the beagle nice?", mode="keyword", min_score=0)
    assert {"haha nice", "nice one"} <= {m["content"] for m in before}


def test_min_score_zero_gives_the_answers_from_before(padded):
    got = ask(padded, "which city am I living in right now?", min_score=0)
    assert len(got) == 5 and {m["content"] for m in got} & set(SMALL_TALK)  # padded, as before the floor
    assert ask(padded, "which city am I living in right now?", mode="keyword", min_score=0)[0]["content"] == LEASE


def test_a_question_of_one_character_is_answered(padded):
    for text in ("a", "?", "猫", "🙂"):
        got = ask(padded, text)
        # nothing shares a term with it: only what is near it in meaning, and never small talk
        assert all(m["similarity"] >= MIN_SCORE for m in got), (text, got)
        assert not {m["content"] for m in got} & set(SMALL_TALK)


def test_a_user_of_small_talk_only_gets_an_empty_list_and_context_says_nothing(padded):
    for mode in ("hybrid", "semantic", "keyword"):
        assert ask(padded, "lol", user="chatty", mode=mode) == []
        assert ask(padded, "what are my hobbies?", user="chatty", mode=mode) == []
    ctx = padded.request({"type": "context", "user_id": "chatty", "text": "haha nice, what are my hobbies?"})
    assert ctx["type"] == "context" and ctx["memories"] == 0 and ctx["text"] == "", ctx
    # lowered, the floor lets the small talk back into both
    assert ask(padded, "lol", user="chatty", min_score=0)
    low = {"type": "context", "user_id": "chatty", "text": "haha", "memories_min_score": 0}
    assert padded.request({**low, "memories_min_similarity": -1})["memories"] > 0
    assert ask(padded, "where do I live?")[0]["content"] == LEASE  # and the sidecar keeps serving


def test_context_memories_carry_no_small_talk(padded):
    """In Chinese the model puts "哈哈" near any question (cosine over context's 0.40): it padded the memories."""

    def memories(**extra):
        req = {"type": "context", "user_id": "lin", "text": "哈哈，豆豆还好吗", "include": ["memories"], **extra}
        ctx = padded.request(req)
        assert ctx["type"] == "context", ctx
        return [line.split(": ", 1)[1] for line in ctx["text"].splitlines() if line.startswith("- ")]

    got = memories()
    assert DOG in got and not set(got) & set(SMALL_TALK), got
    assert set(memories(memories_min_score=0)) & set(SMALL_TALK)  # as before the floor


def test_bad_floors_on_the_pipe_are_clear_errors(padded):
    for field, req in (
        ("min_score", {"type": "query", "user_id": "sam", "text": "Berlin"}),
        ("memories_min_score", {"type": "context", "user_id": "sam", "text": "Berlin"}),
    ):
        for bad in (-0.5, 2, "0.1", [0.1]):
            r = padded.request({**req, field: bad})
            assert r["type"] == "error" and r["code"] == "invalid_request" and field in r["message"], r
    # NaN is not JSON: the line is refused as such, and the sidecar keeps serving
    padded.send_raw(b'{"type":"query","user_id":"sam","text":"Berlin","min_score":NaN}\n')
    r = padded.recv()
    assert r["type"] == "error" and r["code"] == "invalid_json", r
    assert ask(padded, "Berlin")[0]["content"] == LEASE
