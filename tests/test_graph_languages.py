"""The memory graph in every language with a lexicon (graph/lang/, issue 67): the relations a statement makes in
German, Spanish, French, Portuguese, Italian, Chinese and Japanese, the changes that close one, German nouns that
are never people, a language with no lexicon that makes nothing, the LLM tier's pre-filter. The pure reader
first, then end to end through one shared sidecar (a distinct user per language)."""

from __future__ import annotations

import time

import pytest
from helpers import store_all

from sidecar.graph.relations import find_relations

# (text, relations it must make: (subject or None for the speaker, predicate, object, ended))
STATEMENTS = {
    "de": [
        (
            "Ich wohne in Hamburg und arbeite bei Airbus.",
            {(None, "lives_in", "Hamburg", False), (None, "works_at", "Airbus", False)},
        ),
        ("Meine Schwester Lena wohnt in Köln.", {(None, "sister", "Lena", False), ("Lena", "lives_in", "Köln", False)}),
        ("Ich habe bei Bosch gekündigt.", {(None, "works_at", "Bosch", True)}),
    ],
    "es": [
        ("¡Por fin nos mudamos a Valencia!", {(None, "lives_in", "Valencia", False)}),
        (
            "Mi hermano Pablo trabaja en Inditex.",
            {(None, "brother", "Pablo", False), ("Pablo", "works_at", "Inditex", False)},
        ),
        ("Ya no vivo en Madrid.", {(None, "lives_in", "Madrid", True)}),
    ],
    "fr": [
        ("On a déménagé à Nantes.", {(None, "lives_in", "Nantes", False)}),
        (
            "Mon frère Paul travaille chez Airbus.",
            {(None, "brother", "Paul", False), ("Paul", "works_at", "Airbus", False)},
        ),
        ("Je ne travaille plus chez Carrefour.", {(None, "works_at", "Carrefour", True)}),
    ],
    "pt": [
        ("Finalmente mudamos para Lisboa!", {(None, "lives_in", "Lisboa", False)}),
        ("Minha irmã Ana mora em Recife.", {(None, "sister", "Ana", False), ("Ana", "lives_in", "Recife", False)}),
        ("Não trabalho mais na Globo.", {(None, "works_at", "Globo", True)}),
    ],
    "it": [
        (
            "Abito a Torino e lavoro alla Ferrari.",
            {(None, "lives_in", "Torino", False), (None, "works_at", "Ferrari", False)},
        ),
        (
            "Mia sorella Giulia abita a Napoli.",
            {(None, "sister", "Giulia", False), ("Giulia", "lives_in", "Napoli", False)},
        ),
        ("Non abito più a Genova.", {(None, "lives_in", "Genova", True)}),
    ],
    "zh": [
        ("上个月我们搬到了上海。", {(None, "lives_in", "上海", False)}),
        ("我妹妹叫小红，她住在成都。", {(None, "sister", "小红", False), ("小红", "lives_in", "成都", False)}),
        ("我从阿里巴巴辞职了。", {(None, "works_at", "阿里巴巴", True)}),
    ],
    "ja": [
        ("先月、大阪に引っ越しました。", {(None, "lives_in", "大阪", False)}),
        (
            "友達の田中さんは札幌に住んでいます。",
            {(None, "friend", "田中", False), ("田中", "lives_in", "札幌", False)},
        ),
        ("ホンダを辞めました。", {(None, "works_at", "ホンダ", True)}),
    ],
}
NOTHING = [
    "Wohnst du in Berlin?",  # a question
    "Ich wohne nicht in München.",  # a negation
    "Wenn ich in Zürich wohnen würde, wäre alles teurer.",  # a hypothetical
    "No trabajo en Mercadona.",
    "Quiero trabajar en Google algún día.",  # a wish
    "Si j'habitais à Genève, ce serait cher.",
    "Você mora em Brasília?",
    "Forse ci trasferiamo a Lecce.",  # a plan
    "如果我住在香港，会很贵。",
    "我不在百度工作。",
    "いつかグーグルで働きたいです。",
    "沖縄には住んでいません。",
    "Mein Hund ist krank und das Wochenende war anstrengend.",  # nouns, no relation
    # languages with no lexicon: nothing, never something wrong
    "Я живу в Москве и работаю в Яндексе.",
    "저는 서울에 살고 삼성에서 일해요.",
    "Mieszkam w Krakowie i pracuję w Allegro.",
    "Jag bor i Stockholm och jobbar på Spotify.",
]


def _read(text: str) -> set[tuple[str | None, str, str, bool]]:
    return {(r.subject, r.predicate, r.object, r.ended) for r in find_relations(text)}


@pytest.mark.parametrize("lang", STATEMENTS)
def test_each_language_states_its_relations_and_their_changes(lang):
    for text, expected in STATEMENTS[lang]:
        assert _read(text) == expected, text


@pytest.mark.parametrize("text", NOTHING)
def test_questions_negations_wishes_and_languages_without_a_lexicon_make_nothing(text):
    assert _read(text) == set()


def test_english_is_read_as_before_even_when_the_detector_guesses_another_language():
    # six words the language detector takes for German: the English reader still reads them
    assert _read("I study computer science at MIT") == {(None, "studies_at", "MIT", False)}
    assert _read("I left Amazon last month") == set()  # "left" alone is no job change (as before)


def test_a_line_that_switches_to_english_is_read_in_both():
    assert _read("Ich wohne in Berlin but I work at Google") == {
        (None, "lives_in", "Berlin", False),
        (None, "works_at", "Google", False),
    }


def test_reading_a_long_message_in_each_language_costs_little():
    t0 = time.perf_counter()
    for lang, cases in STATEMENTS.items():
        text = " ".join(t for t, _ in cases) * 200  # ~20-40 KB: every cue over every clause
        assert find_relations(text), lang
    assert time.perf_counter() - t0 < 20.0  # a generous bound: quadratic would take minutes


# ---------------------------------------------------------------- end to end


def _relations_of(sc, user: str, name: str) -> set[tuple[str, str, bool]]:
    e = sc.request({"type": "entity", "user_id": user, "name": name})
    assert e["type"] == "entity", e
    return {(r["predicate"], r["object"], r["valid_to"] is not None) for r in e["relations"]}


@pytest.mark.parametrize("lang", STATEMENTS)
def test_statements_over_the_pipe_make_the_graph_in_each_language(shared_sidecar, lang):
    sc, user = shared_sidecar, f"lang-{lang}"
    texts = [t for t, _ in STATEMENTS[lang]]
    store_all(sc, user, texts, username="mara")
    mine = _relations_of(sc, user, "mara")
    for _, expected in STATEMENTS[lang]:
        for subject, predicate, obj, ended in expected:
            if subject is None:
                assert (predicate, obj, ended) in mine, (lang, mine)
            else:
                assert (predicate, obj, ended) in _relations_of(sc, user, subject), (lang, subject)
    person = next(s for _, e in STATEMENTS[lang] for s, *_ in e if s is not None)
    r = sc.request({"type": "graph_recall", "user_id": user, "text": person, "strengthen": False})
    assert r["known"], r  # the person the statement introduced is found by name


def test_german_nouns_are_not_people_and_a_language_without_a_lexicon_makes_no_relation(shared_sidecar):
    sc = shared_sidecar
    store_all(
        sc,
        "lang-nouns",
        [
            "Mein Hund ist krank und das Wochenende war anstrengend.",
            "Mein Lieblingsessen ist Käsespätzle.",
            "Ich bin Vegetarier und mein Hund heißt Bello.",
            "Meine Schwester Lena wohnt in Köln.",
        ],
        username="mara",
    )
    people = sc.request({"type": "entities", "user_id": "lang-nouns", "entity_type": "person"})["entities"]
    names = {e["name"] for e in people}
    assert {"Lena"} <= names and not names & {"Hund", "Mein Hund", "Wochenende", "Käsespätzle", "Vegetarier",
                                                "Mein Lieblingsessen", "Bello"}, names  # fmt: skip
    assert ("has_pet", "Bello", False) in _relations_of(sc, "lang-nouns", "mara")
    store_all(
        sc, "lang-none", ["Я живу в Москве и работаю в Яндексе.", "Мой брат Иван живёт в Казани."], username="mara"
    )
    listed = sc.request({"type": "entities", "user_id": "lang-none"})
    assert listed["type"] == "entities", listed
    for name in ["mara", *(e["name"] for e in listed["entities"])]:  # the speaker (who would hold lives_in) and all
        got = sc.request({"type": "entity", "user_id": "lang-none", "name": name})
        assert got["type"] == "error" or got["relations"] == [], got  # no relation: none rather than a wrong one


def test_now_and_before_and_what_is_true_now_in_the_users_language(shared_sidecar):
    sc, user = shared_sidecar, "lang-validity"
    t0 = (int(time.time()) // 60 - 20 * 24 * 60) * 60  # twenty days ago: inside the default TTL
    story = [
        (0, "Ich wohne in Hamburg."),
        (3_600, "Das Wetter ist heute schön."),
        (10 * 86_400, "Ich bin nach Berlin gezogen."),
    ]
    msgs = [
        {"user_id": user, "username": "mara", "content": c, "timestamp": t0 + dt, "channel_id": "c"} for dt, c in story
    ]
    hamburg, _weather, berlin = sc.request({"type": "store", "messages": msgs})["ids"]

    def first(question: str) -> str:
        r = sc.request({"type": "graph_recall", "user_id": user, "text": question, "strengthen": False})
        assert r["known"], r
        return r["traces"][0]["episodes"][0]["id"]

    assert first("Wo wohne ich jetzt?") == berlin
    assert first("Wo habe ich früher gewohnt?") == hamburg
    r = sc.request({"type": "context", "user_id": user, "text": "Wo wohne ich jetzt?"})
    now = r["text"][r["text"].index("<true_now>") : r["text"].index("</true_now>")]
    assert "- Wohnt in Berlin" in now and "Hamburg" not in now, now
    # said in the language of the user's memories, whatever the language of the text asked with
    r = sc.request({"type": "context", "user_id": user, "text": "where do I live these days?"})
    assert "- Wohnt in Berlin" in r["text"], r["text"]


def test_a_name_that_is_a_noun_elsewhere_right_to_left_text_and_mixed_lines_give_no_wrong_answer(shared_sidecar):
    """Bad input of issue 67: 'Paz' a name in one line and a noun in the next, 'Sonne' a German noun, an Arabic line
    (no lexicon) with a Latin name inside, a line that switches language mid-sentence: right relations or none."""
    sc, user = shared_sidecar, "lang-bad-input"
    store_all(
        sc,
        user,
        [
            "Mi amiga Paz vive en Sevilla.",
            "Queremos paz en el mundo.",
            "Die Sonne scheint heute, ich wohne in Ulm.",
            "أنا أعمل في Google الآن وأسكن في Dubai",
            "Ich wohne jetzt in Berlin, but I work at Google.",
        ],
        username="mara",
    )
    mine = _relations_of(sc, user, "mara")
    assert {("friend", "Paz", False), ("lives_in", "Ulm", True), ("lives_in", "Berlin", False)} <= mine, (
        mine
    )  # Ulm, then Berlin
    assert ("lives_in", "Dubai", False) not in mine  # Arabic has no lexicon: nothing rather than a guess
    assert _relations_of(sc, user, "Paz") >= {("lives_in", "Sevilla", False)}
    people = {e["name"] for e in sc.request({"type": "entities", "user_id": user, "entity_type": "person"})["entities"]}
    assert "Paz" in people and not people & {"paz", "Sonne", "Die Sonne", "Google", "Dubai"}, people
    assert sc.request({"type": "ping"})["type"] == "pong"


def test_a_line_the_detector_takes_for_english_is_read_in_the_users_own_language(shared_sidecar):
    """One German line the detector calls English, read by the English tier, made 'Das Wochenende' a person, and the
    gazetteer then found that person in every later line (a 10,000-line German run: 60 mentions in 1,000 lines)."""
    from sidecar.graph.lang import language

    odd = "Das Wochenende war anstrengend. (602)"
    assert language(odd) == "en"  # the premise: the detector's miss this test is about
    sc, user = shared_sidecar, "lang-usual"
    german = [f"Heute regnet es schon wieder, Tag {i}." for i in range(24)] + ["Ich wohne in Kiel."]
    store_all(sc, user, [*german, odd, "Das Wochenende war anstrengend. (603)"], username="mara")
    people = {e["name"] for e in sc.request({"type": "entities", "user_id": user, "entity_type": "person"})["entities"]}
    assert "Das Wochenende" not in people, people
    assert ("lives_in", "Kiel", False) in _relations_of(sc, user, "mara")
