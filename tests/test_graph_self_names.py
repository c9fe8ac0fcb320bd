"""The names a user's own entity answers to (graph/self_names.py): the display name, its readable part
("mara_v" -> "Mara") and the name they introduce themself with ("Hi, I'm Mara"), in `graph_recall`,
`entity` and query mode `graph`; a display name that is an ordinary word ("Will") is not read into "Will
you remember?"; two users with one display name each reach only their own graph. The pure logic first,
then end to end through one shared sidecar (a distinct user per check)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from sidecar.graph.builder import Changes, build_episode
from sidecar.graph.mentions import find_mentions
from sidecar.graph.model import UserGraph
from sidecar.graph.self_names import introduced, readable

T0 = (int(time.time()) // 60 - 20 * 24 * 60) * 60  # twenty days ago: inside the default TTL
DAY = 86_400
MOVE = [
    (0, "I live in Berlin."),
    (3_600, "The weather is nice today, I went for a run."),
    (10 * DAY, "I moved to Paris."),
]

# ---------------------------------------------------------------- pure: the readable part of a display name


@pytest.mark.parametrize(
    "display, expected",
    [
        ("mara_v", "Mara"),
        ("MARA99", "Mara"),
        ("mara.voss", "Mara"),
        ("maraVoss", "Mara"),
        ("the_real_bob", "Bob"),
        ("DeShawn_7", "DeShawn"),
        ("McKenzie", "McKenzie"),
        ("Alice A.", "Alice"),
        ("小雨_88", "小雨"),
        ("Will", "Will"),  # a given name that is also a word stays a name
        ("x_1", None),
        ("1234", None),
        ("_", None),
        ("", None),
        (None, None),
    ],
)
def test_the_readable_part_of_a_display_name(display, expected):
    assert readable(display) == expected


# ---------------------------------------------------------------- pure: introductions


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Hi, I'm Mara", "Mara"),
        ("hey! i'm Mara :)", "Mara"),
        ("I am Mara Voss and I live in Berlin", "Mara Voss"),
        ("you can call me Theo.", "Theo"),
        ("my name is léa", "Léa"),
        ("Bonjour, je m'appelle Léa et j'habite à Lyon", "Léa"),
        ("Hallo, ich heiße Jonas!", "Jonas"),
        ("Hola, me llamo Ana.", "Ana"),
        ("Привет, меня зовут Маша", "Маша"),
        ("你好，我叫小雨。", "小雨"),
        ("私の名前はユキです", "ユキ"),
        ("はじめまして、ユキと申します", "ユキ"),
        ("제 이름은 민수입니다", "민수"),
        ("اسمي سارة", "سارة"),
        ("Hi Mara, I'm Theo!", "Theo"),
        ("I'm Will.", "Will"),
    ],
)
def test_an_introduction_names_the_speaker(text, expected):
    assert introduced(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I'm tired",
        "I'm Tired.",  # a state, capitalised
        "I'm Sorry!",
        "I'm German",  # a nationality
        "I'm Vegan",
        "I'm Mara's sister",  # the clause goes on: not a name
        "I'm Going home",
        "I'M MARA",  # not name-shaped
        "I'm not Mara",
        "my name is on the list",
        "my name is spelled with a k",
        "Ich heiße Sie willkommen",
        "我叫小雨住在北京",  # no end after the name: the name is not known to stop there
        "私は学生です",  # "私は…です" is not read
        "",
        "a",
    ],
)
def test_what_is_no_introduction(text):
    assert introduced(text) is None


def test_an_introduction_in_a_long_message_costs_little():
    t0 = time.perf_counter()
    assert introduced("I'm " * 20_000) is None and introduced("call me " * 8_000 + "Theo") is None
    assert time.perf_counter() - t0 < 2.0


# ---------------------------------------------------------------- pure: a name that is also a word


def test_a_known_name_that_is_a_word_is_not_read_into_a_question():
    known = {"will": "person", "may": "person", "rose": "person"}
    for text in ("Will you remember?", "will you remember?", "May I ask where I live?", "Hmm. Will it rain?"):
        assert find_mentions(text, known) == [], text
    named = {"Will said hi": "Will", "where does Will live?": "Will", "Rose and I went out": "Rose", "May, hi!": "May"}
    for text, name in named.items():
        assert [m.text for m in find_mentions(text, known)] == [name], text


def _build(g: UserGraph, username: str | None, *texts: str, is_bot: bool = False) -> None:
    for i, text in enumerate(texts):
        row = {"id": f"e{len(g.episodes)}", "timestamp": float(i), "content": text, "username": username}
        build_episode(g, {**row, "is_bot": is_bot}, np.ones(3, dtype=np.float32), None, Changes())


def test_the_self_entity_takes_the_readable_part_and_the_introduced_name():
    g = UserGraph("u")
    _build(g, "mara_v", "Hi, I'm Mara", "I live in Berlin.")
    me = g.find("me")
    assert me is not None and g.find("Mara") is me and g.find("mara_v") is me
    assert g.episodes["e0"].entity_ids == [me.id]  # "Hi, I'm Mara" mentions the user, not a new "Mara"
    g2 = UserGraph("u2")
    _build(g2, "t_99", "call me Theo", "I work at Acme.")
    assert g2.find("Theo") is g2.find("me") is g2.find("t_99")


def test_a_name_known_as_someone_else_stays_theirs_and_a_bot_introduces_no_one():
    g = UserGraph("u")
    _build(g, "mara_v", "My sister Mara moved to Rome.", "I live in Berlin.")
    assert g.find("Mara") is not g.find("me")  # the sister keeps her name; merge_entities joins them if wrong
    g = UserGraph("u2")
    _build(g, "helper", "Hi, I'm Claude, your assistant.", is_bot=True)
    assert g.find("me") is None  # the bot's "I" is not the user
    g = UserGraph("u3")
    _build(g, "", "Hi, I'm Mara", "I live in Oslo.")  # no display name: the entity "me" takes the name
    assert g.find("Mara") is g.find("me") is not None


# ---------------------------------------------------------------- end to end


def _store(sc, user: str, username: str, story) -> list[str]:
    msgs = [
        {"user_id": user, "username": username, "content": c, "timestamp": T0 + dt, "channel_id": "c"}
        for dt, c in story
    ]
    r = sc.request({"type": "store", "messages": msgs})
    assert r["type"] == "ok", r
    return r["ids"]


def _recall(sc, user: str, text: str) -> tuple[bool, list[str]]:
    r = sc.request({"type": "graph_recall", "user_id": user, "text": text, "strengthen": False})
    assert r["type"] == "graph_recall", r
    return r["known"], [e["id"] for t in r["traces"] for e in t["episodes"]]


def test_the_user_answers_to_their_introduced_name(shared_sidecar):
    sc = shared_sidecar
    hi, berlin, _run, paris = _store(sc, "names-mara", "mara_v", [(-60, "Hi, I'm Mara"), *MOVE])
    known, got = _recall(sc, "names-mara", "where does Mara live now?")
    assert known and got[0] == paris
    known, got = _recall(sc, "names-mara", "where did Mara live before?")
    assert known and got[0] == berlin
    res = sc.request({"type": "query", "user_id": "names-mara", "text": "where does Mara live now?", "mode": "graph"})
    got = [m["id"] for m in res["messages"]]
    assert got[0] == paris and hi in got
    e = sc.request({"type": "entity", "user_id": "names-mara", "name": "Mara"})
    assert e["entity"]["name"] == "mara_v" and {"Mara", "me"} <= set(e["entity"]["aliases"])
    assert next((r["object"], r["valid_to"]) for r in e["relations"]) == ("Paris", None)


def test_the_user_answers_to_the_readable_part_of_their_display_name(shared_sidecar):
    sc = shared_sidecar
    _berlin, _run, paris = _store(sc, "names-jonas", "jonas_k99", MOVE)
    known, got = _recall(sc, "names-jonas", "where does Jonas live now?")
    assert known and got[0] == paris
    assert sc.request({"type": "entity", "user_id": "names-jonas", "name": "Jonas"})["entity"]["name"] == "jonas_k99"
    # and to the name they introduce themself with in another language
    ids = _store(sc, "names-lea", "user_4411", [(0, "Bonjour, je m'appelle Léa"), (60, "I work at Acme.")])
    known, got = _recall(sc, "names-lea", "where does Léa work?")
    assert known and ids[1] in got  # (one relation, nothing to rank it above: the two messages make one trace)
    assert sc.request({"type": "entity", "user_id": "names-lea", "name": "lea"})["entity"]["name"] == "user_4411"


def test_two_users_with_one_display_name_each_reach_only_their_own(shared_sidecar):
    sc = shared_sidecar
    oslo = _store(sc, "names-twin-a", "mara_v", [(0, "Hi, I'm Mara"), (60, "I live in Oslo.")])
    rome = _store(sc, "names-twin-b", "mara_v", [(0, "Hi, I'm Mara"), (60, "I live in Rome.")])
    for user, own, other in (("names-twin-a", oslo, rome), ("names-twin-b", rome, oslo)):
        known, got = _recall(sc, user, "where does Mara live now?")
        assert known and own[1] in got and not set(got) & set(other), user
        res = sc.request({"type": "query", "user_id": user, "text": "where does Mara live?", "mode": "graph"})
        assert not {m["id"] for m in res["messages"]} & set(other)
        rels = sc.request({"type": "entity", "user_id": user, "name": "Mara"})["relations"]
        assert [r["object"] for r in rels] == ["Oslo" if own is oslo else "Rome"]


def test_a_display_name_that_is_a_word_is_not_read_into_a_question(shared_sidecar):
    sc = shared_sidecar
    (concert,) = _store(sc, "names-will", "Will", [(0, "The concert was amazing, the band played for three hours.")])
    for text in ("Will you remember the concert?", "will you remember the concert?"):
        known, got = _recall(sc, "names-will", text)
        assert known and got == [concert], text  # not a question about someone unknown called Will
    _berlin, _run, paris = _store(sc, "names-rose", "Rose", MOVE)
    known, got = _recall(sc, "names-rose", "where does Rose live now?")  # a capital mid-sentence: the user Rose
    assert known and got[0] == paris


def test_an_empty_display_name_and_a_question_of_one_character(shared_sidecar):
    sc = shared_sidecar
    _hi, oslo = _store(sc, "names-empty", "", [(0, "Hi, I'm Mara"), (60, "I live in Oslo.")])
    known, got = _recall(sc, "names-empty", "where does Mara live?")
    assert known and oslo in got
    for text in ("?", "a", "M"):
        r = sc.request({"type": "graph_recall", "user_id": "names-empty", "text": text})
        assert r["type"] == "graph_recall" and isinstance(r["known"], bool), (text, r)
    r = sc.request({"type": "graph_recall", "user_id": "names-empty", "text": ""})
    assert r["type"] == "error" and r["code"] == "invalid_request"
    assert sc.request({"type": "ping"})["type"] == "pong"
