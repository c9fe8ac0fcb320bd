"""What the graph's offline tier reads in chat, pure logic: relations on the labelled sample (its held-out half) and
by example, what must make nothing, entity types a reader trusts, names in any script, the reactions of the main
languages, and the graph's answers to bad input (a relation of an entity merged away, a contradiction in one
message, a statement repeated, 10,000 relations, names that are words, a cycle of family relations, a 1 MB
memory). No process, no model: the pipe's side is in test_graph_e2e.py."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import ROOT

from sidecar.graph.builder import EPISODE_CHARS, Changes, build_episode
from sidecar.graph.mentions import find_mentions
from sidecar.graph.model import UserGraph
from sidecar.graph.records import fold
from sidecar.graph.relations import PREDICATES, find_relations, single_valued
from sidecar.text import is_backchannel

sys.path.insert(0, str(ROOT / "scripts"))
from benchkit import graph_quality as gq


def _read(text: str, known: dict[str, str] | None = None) -> list[tuple]:
    return [
        (r.subject or "me", r.predicate, r.object) + (("ended",) if r.ended else ())
        for r in find_relations(text, known)
    ]


# ------------------------------------------------------------------------------------------ relations


def test_relations_on_the_held_out_half_of_the_labelled_sample():
    """Precision >= 0.90 and recall >= 0.75 per predicate on statements the tier was not tuned on (the old
    first-person patterns: recall 0.32 on this half, 0.88 precision)."""
    rows = gq.records("relations.jsonl")
    assert len(rows) >= 150
    about_others = [r for r in rows if any(x[0] != "me" or PREDICATES[x[1]][1] == "person" for x in r["relations"])]
    assert len(about_others) >= len(rows) // 4 and sum(1 for r in rows if not r["relations"]) >= 50
    held = gq.relation_scores([r for r in rows if r["split"] == "heldout"], find_relations)
    assert set(held["predicates"]) == set(PREDICATES)  # every predicate the tier knows is measured
    for pred, s in held["predicates"].items():
        assert s["precision"] >= 0.90 and s["recall"] >= 0.75, (pred, s)
    assert held["all"]["precision"] >= 0.97 and held["all"]["recall"] >= 0.90, held["all"]


@pytest.mark.parametrize(
    "text, known, expected",
    [
        ("Big news: I moved to Paris in March!", None, [("me", "lives_in", "Paris")]),
        ("omg I just got a job at Spotify", None, [("me", "works_at", "Spotify")]),
        ("btw, honestly, I really like sushi", None, [("me", "likes", "sushi")]),
        ("We moved to Porto last summer", None, [("me", "lives_in", "Porto")]),
        ("our cat Miso knocked over my coffee", None, [("me", "has_pet", "Miso")]),
        ("We love hiking", None, []),  # "we" is the household for lives_in and has_pet only
        ("I live in Berlin and work at Siemens", None, [("me", "lives_in", "Berlin"), ("me", "works_at", "Siemens")]),
        ("I love hiking and climbing", None, [("me", "likes", "hiking"), ("me", "likes", "climbing")]),
        ("I love mac and cheese", None, [("me", "likes", "mac and cheese")]),
        (
            "I finally quit Siemens and joined Google",
            None,
            [("me", "works_at", "Siemens", "ended"), ("me", "works_at", "Google")],
        ),
        (
            "starting as a data analyst at Spotify",
            None,
            [("me", "job_title", "data analyst"), ("me", "works_at", "Spotify")],
        ),
        (
            "I used to live in Oslo, now I live in Bergen",
            None,
            [("me", "lives_in", "Oslo", "ended"), ("me", "lives_in", "Bergen")],
        ),
        ("Just moved to Dublin!!", None, [("me", "lives_in", "Dublin")]),
        ("I don't work at Google anymore", None, [("me", "works_at", "Google", "ended")]),
        ("My sister Alice moved to Rome", None, [("me", "sister", "Alice"), ("Alice", "lives_in", "Rome")]),
        ("My husband Tom is a chef", None, [("me", "partner", "Tom"), ("Tom", "job_title", "chef")]),
        ("my best friend Priya", None, [("me", "friend", "Priya")]),
        (
            "my brother Ken just started studying medicine at Kyoto University",
            None,
            [("me", "brother", "Ken"), ("Ken", "studies_at", "Kyoto University")],
        ),
        ("Ana is my sister, she lives in Lisbon", None, [("me", "sister", "Ana"), ("Ana", "lives_in", "Lisbon")]),
        ("Ken got a job at Toyota", {"ken": "person"}, [("Ken", "works_at", "Toyota")]),
        ("Ken got a job at Toyota", {"ken": "place"}, []),  # a known place is no subject
        ("I moved to Lisbon, no wait, Porto", None, [("me", "lives_in", "Porto")]),  # a contradiction corrected
        ("My friend Will moved to Leeds", None, [("me", "friend", "Will"), ("Will", "lives_in", "Leeds")]),
        ("My aunt May lives in Cork", None, [("me", "relative", "May"), ("May", "lives_in", "Cork")]),
        ("I moved in March", None, []),  # a month is never a place
        ("i live in berlin now", {"berlin": "place"}, [("me", "lives_in", "berlin")]),  # a known name, lower case
    ],
)
def test_relation_examples(text, known, expected):
    assert _read(text, known) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Do you live in Berlin?",
        "do you live in berlin",
        "Did Alice move to Rome?",
        "I don't live in Paris",
        "If I moved to Oslo I'd freeze",
        "I wish I lived in Hawaii",
        "I'd love to work at Pixar someday",
        "My friend asked if I live in Oslo",
        "She told me I work at Google lol",
        "He said he lives in Madrid",
        "I might move to Denver next year",
        "I'm thinking of moving to Lisbon",
        "I'll be living in Seoul from September",
        "I never worked at Microsoft",
        "I hope to study at Oxford one day",
        "I think I live in the wrong city",
        "I almost moved to Chicago",
        "What if I quit Siemens?",
        "Imagine living in Paris!",
        "I'm going to Paris next week",
        "I'm starting at Google next month",
        "I joined Twitter in 2010",
        "I joined a gym last week",
        "I'm at Starbucks right now",
        "I love it when it rains",
        "I love you",
        "My brother works at Google",
    ],
)
def test_questions_negations_hypotheticals_wishes_and_reported_speech_make_nothing_current(text):
    assert [
        r
        for r in find_relations(text, {"alice": "person"})
        if (not r.ended and r.subject is None) or r.subject == "Alice"
    ] == []


# ------------------------------------------------------------------------------------------ entities


def _entity_f1(name: str) -> tuple[float, float]:
    e = gq.entity_scores(name)
    return e["f1"], e["typed_f1"]


def test_entity_types_on_the_labelled_samples():
    """Span F1 not lower than before (0.970 on the sample the tier was written against, 0.932 on the held-out
    one), typed F1 >= 0.93 (0.900 before; 0.855 held out)."""
    span, typed = _entity_f1("entities_locomo.jsonl")
    assert span >= 0.970 and typed >= 0.93, (span, typed)
    span, typed = _entity_f1("entities_locomo_heldout.jsonl")
    assert span >= 0.932 and typed >= 0.88, (span, typed)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("We moved to Porto in March", [("Porto", "place"), ("March", "date")]),
        ("back home since Tuesday", [("Tuesday", "date")]),
        ("I work at Siemens and she joined Google", [("Siemens", "organisation"), ("Google", "organisation")]),
        ("Sadly I quit Deloitte", [("Deloitte", "organisation")]),
        ("I study law at Leiden", [("Leiden", "organisation")]),
        ("Dinner at Luigi's last night was great", [("Luigi's", "place")]),
        ("Loved Luigi's pasta", [("Luigi", "person")]),
        ("I took French in high school", [("French", "other")]),
        ("Oscar, my guinea pig, is sweet", [("Oscar", "other")]),
        ('I read "The Name of the Wind" twice', [("The Name of the Wind", "thing")]),
        ('"Hey Mel, what\'s up" she said', [("Mel", "person")]),
        ("I love Game of Thrones", [("Game of Thrones", "thing")]),
        ("we met May at the party", [("May", "person")]),
        ("see you in May", [("May", "date")]),
    ],
)
def test_entity_types_a_reader_trusts(text, expected):
    assert [(m.text, m.type) for m in find_mentions(text) if m.type != "date" or m.text[0].isupper()] == expected


def _row(i: int, content: str, username: str = "Sam", ts: float | None = None) -> dict:
    return {
        "id": f"e{i}",
        "content": content,
        "timestamp": 1_700_000_000.0 + (ts if ts is not None else i * 60),
        "username": username,
        "channel_id": "c",
        "message_id": None,
        "reply_to": None,
        "is_bot": False,
    }


def _build(g: UserGraph, *lines: str, username: str = "Sam", start: int = 0) -> Changes:
    changes = Changes()
    for i, line in enumerate(lines, start):
        build_episode(g, _row(i, line, username), np.zeros(4, np.float32), None, changes)
    return changes


def _person(g: UserGraph, name: str):
    return g.find(name)


def test_a_full_name_and_its_first_name_and_surname_are_one_person():
    g = UserGraph("u")
    _build(g, "I met Bob yesterday", "Bob Miller called me", "then bob texted", "and Miller said hi again")
    people = [e for e in g.entities.values() if e.type == "person" and e.name != "Sam"]
    assert [(e.name, sorted(e.aliases)) for e in people] == [("Bob Miller", ["Bob", "Miller"])]
    assert len(people[0].episodes) == 4  # "Miller" alone is the one known Miller, never a new person


def test_names_that_are_ordinary_words_count_only_when_capitalised():
    g = UserGraph("u")
    _build(
        g,
        "My friend Will moved to Leeds",
        "I will call you tomorrow",
        "I may move, who knows",
        "the rose garden is lovely",
        "Will says hi",
    )
    will = g.find("Will")
    assert will.type == "person" and len(will.episodes) == 2
    assert g.find("may") is None and g.find("rose") is None
    lives = [
        (g.entities[r.subject_id].name, r.predicate, r.object_value)
        for r in g.relations.values()
        if r.predicate == "lives_in"
    ]
    assert lives == [("Will", "lives_in", "Leeds")]


def test_relation_objects_are_typed_by_the_relation():
    g = UserGraph("u")
    _build(
        g,
        "Meeting at Siemens today",
        "I work at Siemens",
        "Big news: I moved to Paris in March!",
        "my dog Rex hates the vet",
    )
    assert g.find("Siemens").type == "organisation"  # "at Siemens" looked like a place
    assert g.find("Paris").type == "place" and g.find("March") is None
    assert g.find("Rex").type == "other"


# ------------------------------------------------------------------------------------------ any script


@pytest.mark.parametrize(
    "name, text",
    [
        ("王伟", "我和王伟去了北京"),
        ("田中", "昨日、田中さんと会った"),
        ("민수", "민수가 서울로 이사했어"),
        ("राहुल", "मैं राहुल से मिला"),
        ("أحمد", "رأيت أحمد اليوم"),
        ("Иван", "вчера иван приехал"),
        ("สมชาย", "ผมไปกินข้าวกับสมชาย"),
    ],
)
def test_known_names_are_found_in_any_script(name, text):
    found = [(m.text, m.type) for m in find_mentions(text, {fold(name): "person"})]
    assert (name if name != "Иван" else "иван", "person") in found


@pytest.mark.parametrize("text", ["我和王伟去了北京", "मैं राहुल से मिला", "رأيت أحمد اليوم", "昨日、田中さんと会った"])
def test_names_are_never_guessed_in_scripts_without_case(text):
    assert find_mentions(text) == []


def test_mentions_and_usernames_in_any_script():
    assert [(m.text, m.type) for m in find_mentions("@王伟 你好, @राहुल नमस्ते")] == [
        ("@王伟", "person"),
        ("@राहुल", "person"),
    ]
    g = UserGraph("u")
    _build(g, "我们明天去北京", username="王伟")  # a speaker's username, then another speaker names them
    _build(g, "我和王伟去了北京", username="李娜", start=1)
    assert g.find("王伟") is not None and g.find("王伟").type == "person"


# ------------------------------------------------------------------------------------------ reactions


@pytest.mark.parametrize(
    "text",
    [
        "jaja",
        "jajaja",
        "mdr",
        "ptdr",
        "ахах",
        "хахаха",
        "ㅋㅋ",
        "ㅋㅋㅋㅋ",
        "哈哈",
        "555",
        "kkkk",
        "wkwk",
        "xD",
        "lol",
        "www",
        "草",
        "好的，谢谢！",
        "はい、ありがとう",
        "네 감사합니다",
        "ठीक है",
        "شكرا",
        "vale, gracias",
        "genau, danke",
        "ок, спасибо",
        "โอเค ขอบคุณครับ",
        "valeu!",
    ],
)
def test_reactions_of_the_main_languages_are_backchannels(text):
    assert is_backchannel(text)


@pytest.mark.parametrize(
    "text",
    [
        "Me mudé a Madrid el mes pasado",
        "jaja me mudé a Lima",
        "mdr je viens d'adopter un chat",
        "ok ich fange morgen bei Siemens an",
        "ахах, я завтра еду в Казань",
        "好的，明天见",
        "我最喜欢的食物是饺子",
        "はい、明日東京に行きます",
        "ㅋㅋ 내일 서울에 가요",
        "저는 김치찌개를 좋아해요",
        "मैं दिल्ली में रहता हूँ",
        "أنا أعيش في القاهرة",
        "555 พรุ่งนี้ไปเชียงใหม่",
        "kkkk comecei na Nubank hoje",
        "wkwk aku pindah ke Bandung",
    ],
)
def test_a_content_message_in_any_language_is_never_a_backchannel(text):
    assert not is_backchannel(text)


# ------------------------------------------------------------------------------------------ bad input


def _relations(g: UserGraph, predicate: str | None = None) -> list[tuple]:
    return sorted(
        (g.entities[r.subject_id].name, r.predicate, r.object_value, r.valid_to is None)
        for r in g.relations.values()
        if predicate in (None, r.predicate)
    )


def test_changes_told_as_events_close_or_end_relations():
    g = UserGraph("u")
    _build(g, "I work at Siemens", "I finally quit Siemens and joined Google", "I used to live in Oslo")
    assert _relations(g) == [
        ("Sam", "lives_in", "Oslo", False),
        ("Sam", "works_at", "Google", True),
        ("Sam", "works_at", "Siemens", False),
    ]
    siemens = next(r for r in g.relations.values() if r.object_value == "Siemens")
    assert (siemens.valid_from, siemens.valid_to) == (1_700_000_000.0, 1_700_000_060.0)
    oslo = next(r for r in g.relations.values() if r.object_value == "Oslo")
    assert oslo.valid_from == oslo.valid_to == 1_700_000_120.0  # held until then; since when, unsaid


def test_a_contradiction_in_one_message_and_a_statement_repeated_a_hundred_times():
    g = UserGraph("u")
    _build(g, "I moved to Lisbon, no wait, Porto")
    assert _relations(g) == [("Sam", "lives_in", "Porto", True)]
    _build(g, *["I live in Porto"] * 100, start=1)
    (rel,) = g.relations.values()
    assert len(rel.episode_ids) == 101 and rel.valid_to is None
    changes = Changes()  # the same episode built again (a catch-up after a crash): nothing new, nothing twice
    build_episode(g, _row(5, "I live in Porto"), np.zeros(4, np.float32), None, changes)
    assert len(g.relations) == 1 and len(rel.episode_ids) == 101


def test_ten_thousand_relations_for_one_user():
    g = UserGraph("u")
    me, _ = g.resolve("Sam", "person")
    for i in range(10_000):
        ep = build_episode  # noqa: F841 - the model alone: the rule tier's cost is the bench's
        episode = _episode(g, i)
        g.add_relation(me, "likes", False, None, f"thing {i}", episode, 0.6)
        g.add_relation(me, "lives_in", True, None, f"town {i}", episode, 0.6)
    likes = [r for r in g.relations.values() if r.predicate == "likes"]
    lives = [r for r in g.relations.values() if r.predicate == "lives_in"]
    assert len(likes) == 10_000 and all(r.valid_to is None for r in likes)
    assert len(lives) == 10_000 and [r.object_value for r in lives if r.valid_to is None] == ["town 9999"]
    g.rel_index = None  # rebuilt from the relations on first use (a graph loaded from the store)
    rel, closed = g.add_relation(me, "lives_in", True, None, "Town 0", _episode(g, 10_000), 0.6)
    assert [c.object_value for c in closed] == ["town 9999"] and rel.object_value == "Town 0"


def _episode(g: UserGraph, i: int):
    from sidecar.graph.records import Episode

    ep = Episode(f"x{i}", float(i), "c", None, None, 0.5, False)
    g.episodes[ep.id] = ep
    return ep


def test_a_relation_of_an_entity_merged_into_another_is_kept_once():
    g = UserGraph("u")
    _build(g, "My sister Alice moved to Rome", "My sister Ali moved to Rome", "My sister Ali lives in Milan")
    alice, ali = g.find("Alice"), g.find("Ali")
    g.merge(ali, alice)
    dropped = g.fold_relations(single_valued)
    assert len(dropped) == 1  # (me, sister, Ali) became (me, sister, Alice), which was there
    # Alice's Rome (current) closes when her Milan began; Ali's Rome, closed by Milan, stays as history
    assert _relations(g) == [
        ("Alice", "lives_in", "Milan", True),
        ("Alice", "lives_in", "Rome", False),
        ("Alice", "lives_in", "Rome", False),
        ("Sam", "sister", "Alice", True),
    ]
    me = g.find("Sam")
    g.merge(alice, me)  # merged into the speaker: a relation of one entity with itself is dropped
    g.fold_relations(single_valued)
    assert all(r.subject_id != r.object_id for r in g.relations.values())


def test_a_cycle_of_family_relations():
    g = UserGraph("u")
    _build(g, "My brother Tom lives in Leeds", username="Sam")
    _build(g, "My brother Sam lives in York", username="Tom", start=1)
    _build(g, "Sam is my brother", username="Tom", start=2)
    assert _relations(g) == [
        ("Sam", "brother", "Tom", True),
        ("Sam", "lives_in", "York", True),
        ("Tom", "brother", "Sam", True),
        ("Tom", "lives_in", "Leeds", True),
    ]


def test_a_one_megabyte_memory_is_read_up_to_the_episode_cut():
    text = "My sister Alice moved to Rome. " + "We talked about nothing much at all. " * 30_000
    assert len(text) > 1_000_000
    g = UserGraph("u")
    _build(g, text[:EPISODE_CHARS])  # the builder reads at most EPISODE_CHARS of a memory (builder.submit)
    assert ("Alice", "lives_in", "Rome", True) in _relations(g)
    assert find_relations(text[:EPISODE_CHARS] + "?") != []
