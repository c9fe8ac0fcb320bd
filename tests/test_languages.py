"""Memory in every language (docs/languages.md): keyword analysis by script (sidecar/text, pure), and over the
real pipe with one sidecar: keyword search in many scripts, `score` on every result in every mode, bad
input (mixed scripts, emoji, bidi controls, NFD, full width, lone marks, 1 MB of Chinese), facts, tags and
context in four scripts; and a data dir of schema 6 whose facts gain their terms."""

from __future__ import annotations

import json
import time
import unicodedata

import lancedb
import numpy as np
import orjson
import pyarrow as pa
import pytest
from conftest import ROOT, Sidecar
from lancedb.index import FTS

from sidecar.embedding.spec import LATIN, scripts_read
from sidecar.messages.keywords import MAX_QUERY_GRAMS, MAX_QUERY_TERMS, KeywordIndex
from sidecar.messages.ranking import HYBRID_WEIGHTS, UNREAD_WEIGHTS, hybrid_weights
from sidecar.storage import SCHEMA_VERSION
from sidecar.storage.search import RRF_K
from sidecar.text import analyse_fields, configure, language_of, query_fields, query_terms, terms


def _index(texts: list[str]) -> KeywordIndex:
    index = KeywordIndex()
    index.extend(texts, [-1] * len(texts), [-1] * len(texts))
    return index


def _finds(texts: list[str], query: str, k: int = 1) -> list[str]:
    return [texts[i] for i in _index(texts).search(query, "content", None, k)]


# --------------------------------------------------------------------------- pure analysis


def test_spaceless_scripts_are_bigrams_and_words_keep_their_marks():
    assert terms("我最喜欢的食物是饺子")[-1] == "饺子" and "饺子" in query_terms("饺子", [])
    assert terms("ラーメン") == ["ラー", "ーメ", "メン"]
    assert terms("龙") == ["龙"]  # a lone character is a unigram
    assert all(not unicodedata.combining(t[0]) for t in terms("ฉันชอบกีตาร์ตัวใหม่"))  # clusters keep their marks
    assert len(terms("मिठाई")) == 1  # a Devanagari word is never cut at its vowel signs
    assert terms("جيتارًا") == terms("جيتار")  # Arabic diacritics: the same word
    assert terms("ＧＵＩＴＡＲ Café") == terms("guitar cafe") == terms("gui\u200btar cafe\u0301")


def test_a_word_is_found_in_every_script_and_form():
    memories = [
        "我最喜欢的食物是饺子",
        "一番好きな食べ物はラーメンです",
        "제일 좋아하는 음식은 김치찌개예요",
        "차를 샀어요",
        "ฉันชอบชาเขียวมากกว่ากาแฟ",
        "أخيرًا اشتريت جيتارًا جديدًا",
        "मेरी पसंदीदा मिठाई गुलाब जामुन है",
        "Ich habe mir eine neue Gitarre gekauft",
        "Я очень люблю пельмени со сметаной",
        "Prefiro chá verde a café",
        "I finally bought a new guitar",
    ]
    for query, want in [
        ("饺子", 0),
        ("ラーメン", 1),
        ("김치찌개", 2),
        ("찌개", 2),
        ("차", 3),
        ("ชาเขียว", 4),
        ("الجيتار", 5),
        ("मिठाई", 6),
        ("Gitarren", 7),
        ("пельменях", 8),
        ("chás", 9),
        ("guitars", 10),
    ]:
        assert _finds(memories, query) == [memories[want]], query


_FORMS = {  # memory, another form of one of its words; none of them in the bench's sample
    "ar": [
        ("سأذهب إلى مدرستي غدا", "المدرسة"),
        ("زرت مكتبة المدينة أمس", "مكتبتي"),
        ("يكتب أخي رسالة طويلة", "الرسائل"),
    ],
    "id": [
        ("Saya suka menulis puisi di malam hari", "tulisan"),
        ("Kami berenang di pantai kemarin", "renang"),
        ("Ibu memasak rendang untuk lebaran", "masakan"),
    ],
    "ru": [("Мы купили новый ковёр в гостиную", "ковра"), ("Я получил подарок от бабушки", "подарка")],
    "fi": [("Ostin eilen leipää kaupasta", "kauppa")],  # Finnish: not in the sample at all
}
_OTHERS = [
    "The weather is nice today",
    "Мы гуляли в парке у реки",
    "Kami makan nasi goreng bersama",
    "ذهبنا إلى البحر في الصيف",
    "Kävimme eilen elokuvissa",
]


@pytest.mark.parametrize("lang", sorted(_FORMS))
def test_forms_of_one_word_meet_where_the_stemmer_leaves_them_apart(lang):
    """A prefix Snowball does not take off (me-, ber-, ال with a possessive), a vowel that comes and goes
    (ковёр / ковра), consonant gradation (kauppa / kaupasta): the words' trigrams stand in for the stem."""
    memories = [m for m, _ in _FORMS[lang]] + _OTHERS
    for memory, form in _FORMS[lang]:
        assert not set(query_terms(form, [lang])) & set(terms(memory)), (form, "meets by its stem: not a case")
        assert _finds(memories, form) == [memory], form


def test_an_exact_word_outranks_words_that_only_share_its_grams():
    memories = ["Perenang itu juara nasional", "Saya suka renang pagi", "Kami berenang di pantai"]
    assert _finds(memories, "renang") == [memories[1]]
    assert set(_finds(memories, "renang", 3)) == set(memories)  # the other forms follow
    assert analyse_fields("I finally bought new guitars")[2] == []  # English: no grams (its stemmer meets its forms)


def test_han_kana_and_hangul_runs_have_unigrams_beside_their_bigrams():
    """As Lucene's CJKBigramFilter with outputUnigrams: each character of a run, in the grams' field (marked);
    the terms (bigrams) as before; none for Thai, whose letters are not words."""
    _, found, grams = analyse_fields("我养了一只猫，叫豆豆")
    assert found == terms("我养了一只猫，叫豆豆") == ["我养", "养了", "了一", "一只", "只猫", "叫豆", "豆豆"]
    assert grams == ["~我", "~养", "~了", "~一", "~只", "~猫", "~叫", "~豆"]  # distinct, in order
    assert "~住" in analyse_fields("大阪に住んでます")[2] and "~살" in analyse_fields("이제 망원동 살아")[2]
    assert analyse_fields("ฉันชอบชาเขียว")[2] == []
    query, _, singles = query_fields("我的猫叫什么名字？", [])
    assert "猫叫" in query and {"~猫", "~叫"} <= set(singles)


def test_a_character_written_alone_is_found_and_a_bigram_match_still_ranks_first():
    memories = ["我养了一只猫，叫豆豆，特别黏人", "今天加班到十点，累死了", "周末去灵隐寺爬山", "猫叫了一晚上"]
    assert _finds(memories, "我的猫叫什么名字？") == [memories[3]]  # the bigram 猫叫, and its two characters
    assert _finds(memories, "我的猫叫什么名字？", 3)[1] == memories[0]  # 我, 猫 and 叫 written apart
    assert _finds(memories[:3], "我的猫叫什么名字？") == [memories[0]]
    assert set(_finds(memories, "猫", 3)) == {memories[0], memories[3]}
    korean = ["요즘 부산에서 일하고 있어", "서울로 이사 왔어! 이제 망원동 살아", "고양이 입양했어"]
    assert _finds(korean, "나 지금 어디 살지?") == [korean[1]]  # 살지 / 살아: the stem's syllable


def test_the_model_reads_its_scripts_and_the_keyword_lists_lead_otherwise():
    assert scripts_read("sentence-transformers/all-MiniLM-L6-v2", {"model_type": "bert", "vocab_size": 30522}) == LATIN
    for multilingual in (
        "intfloat/multilingual-e5-small",
        "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2",
    ):
        assert scripts_read(multilingual, {}) is None  # every script
    assert scripts_read("someone/unknown", {"model_type": "xlm-roberta"}) is None
    assert scripts_read("someone/unknown", {"vocab_size": 250002}) is None
    assert scripts_read("someone/unknown", {}) == LATIN  # the safe default: keyword-led outside Latin
    assert scripts_read("BAAI/bge-small-zh-v1.5", {"vocab_size": 21128}) == LATIN | {"Han"}
    for question in (
        "我的猫叫什么名字？",
        "今どこに住んでる？",
        "나 지금 어디 살지?",
        "где я живу?",
        "أين أعمل الآن؟",
        "मैं कहाँ रहता हूँ?",
    ):
        assert hybrid_weights(question, LATIN) == UNREAD_WEIGHTS, question
        assert hybrid_weights(question, None) == HYBRID_WEIGHTS, question
    assert UNREAD_WEIGHTS["semantic"] < HYBRID_WEIGHTS["semantic"] / 5
    for question in ("where do I live?", "What is 豆豆's favourite toy?", "2024?", "👍"):
        assert hybrid_weights(question, LATIN) == HYBRID_WEIGHTS, question
    assert hybrid_weights("我的猫叫什么名字？", LATIN | {"Han"}) == HYBRID_WEIGHTS


def test_the_language_decision():
    assert language_of("Ich habe mir letzte Woche eine neue Gitarre gekauft") == "de"
    assert language_of("I finally bought a new guitar last weekend") == "en"
    assert language_of("Моя сестра живёт в Казани") == "ru"
    assert language_of("then") == "en"  # too short to tell: the script's default
    assert language_of("我最喜欢的食物是饺子") is None  # never stemmed
    try:
        configure(["de"])  # one language per script: no detector, German stems
        assert language_of("I finally bought a new guitar last weekend") == "de"
    finally:
        configure(None)


def test_bad_input_gets_terms_and_never_raises():
    for text in [
        "👩\u200d👩\u200d👧 family trip 🇯🇵",
        "\u202eevil\u202c \u2067مرحبا\u2069 hello",
        "\u0301\u0301 \u0903 ok",
        "\ufeff\u200d",
        "",
        "a" * 50,
        "😀" * 1000,
        "我喜欢iPhone和Gitarre",
        "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
    ]:
        terms(text)
        query_terms(text, ["en", "de"])
    assert terms("👩\u200d👩\u200d👧 family trip") == ["famili", "trip"]
    assert terms("\u202eevil\u202c hello") == terms("evil hello")
    assert {"喜欢", "iphon", "gitarr"} <= set(terms("我喜欢iPhone和Gitarre"))


def test_a_megabyte_of_chinese_and_a_5000_character_query_stay_bounded():
    text = ("我最喜欢的食物是饺子" * 40_000)[:333_000]
    found = terms(text)
    assert len(found) == len(text) - 1  # every bigram, none lost where long runs are cut in pieces
    index = _index(["今天天气很好", text, "我们去公园散步吧"])
    query = ("我们明天去北京看长城吃烤鸭" * 400)[:5000]
    words, grams, singles = index._query(query)
    assert len(words) <= MAX_QUERY_TERMS and sum(len(found) for _, found in grams) <= MAX_QUERY_GRAMS
    assert 0 < len(singles) <= MAX_QUERY_TERMS
    assert index.search("мы пошли в кино " * 400, "content", None, 3) == []  # a long query of words, grams and all
    assert index.search(query, "search_text", None, 3)[0] == 2


# --------------------------------------------------------------------------- over the pipe


@pytest.fixture(scope="module")
def sc(tmp_path_factory):
    sidecar = Sidecar(tmp_path_factory.mktemp("languages") / "data")
    yield sidecar
    if sidecar.alive():
        assert sidecar.shutdown() == 0


def _query(sc, user, text, mode=None, limit=3):
    req = {"type": "query", "user_id": user, "text": text, "limit": limit, **({"mode": mode} if mode else {})}
    r = sc.request(req)
    assert r["type"] == "results", r
    return r["messages"]


def test_keyword_and_hybrid_search_find_words_in_every_script(sc):
    sample = ROOT / "scripts" / "benchkit" / "data" / "multilingual.jsonl"
    rows = [json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines()]
    langs = ("zh", "ja", "ko", "th", "ar", "hi", "de", "ru")
    chosen = [r for r in rows if r["lang"] in langs]
    r = sc.request(
        {"type": "store", "messages": [{"user_id": f"w-{x['lang']}", "content": x["memory"]} for x in chosen]}
    )
    assert r["type"] == "ok", r
    ids = dict(zip((x["memory"] for x in chosen), r["ids"]))
    for x in chosen[::4]:
        for mode in ("keyword", None):
            got = [m["id"] for m in _query(sc, f"w-{x['lang']}", x["word"], mode)]
            assert ids[x["memory"]] in (got[:1] if mode else got), (x["lang"], x["word"], mode)


def test_another_form_of_a_word_finds_memories_and_facts_over_the_pipe(sc):
    for lang, cases in _FORMS.items():
        memories = [m for m, _ in cases] + _OTHERS
        r = sc.request({"type": "store", "messages": [{"user_id": f"i-{lang}", "content": m} for m in memories]})
        ids = dict(zip(memories, r["ids"]))
        for memory, form in cases:
            assert [m["id"] for m in _query(sc, f"i-{lang}", form, "keyword", limit=1)] == [ids[memory]], form
        for memory, form in cases[:1]:  # facts: the same analysis in LanceDB's full-text index
            assert (
                sc.request({"type": "remember", "user_id": f"i-{lang}", "text": memory, "category": "preference"})[
                    "type"
                ]
                == "remembered"
            )
            got = sc.request({"type": "facts", "user_id": f"i-{lang}", "text": form, "mode": "keyword"})
            assert [f["text"] for f in got["facts"]] == [memory], (form, got)


def test_a_cat_named_in_one_character_and_questions_the_model_cannot_read(sc):
    """猫 is never a bigram of its own: its unigram finds the memory. A Russian or Arabic question on the English
    model is led by the keyword lists: the fused score of the memory first in both of them is theirs, the
    semantic list adding a tie-breaker at most (an English one adds its full weight)."""
    chinese = ["今天加班到十点，累死了", "我养了一只猫，叫豆豆，特别黏人", "周末去灵隐寺爬山", "晚安", "明天要早起开会"]
    sc.request({"type": "store", "messages": [{"user_id": "u-cat", "content": c} for c in chinese]})
    assert [m["content"] for m in _query(sc, "u-cat", "我的猫叫什么名字？", "keyword", 1)] == [chinese[1]]
    assert chinese[1] in [m["content"] for m in _query(sc, "u-cat", "我的猫叫什么名字？")]
    keyword_led = (HYBRID_WEIGHTS["content"] + HYBRID_WEIGHTS["search_text"]) / (RRF_K + 1)
    for user, memories, question in [
        (
            "u-ru",
            ["мой брат работает врачом в Казани", "лол", "купил новый велосипед", "спокойной ночи"],
            "кем работает мой брат?",
        ),
        ("u-ar", ["أخي يعمل طبيبا في القاهرة", "هههه", "اشتريت دراجة جديدة", "تصبح على خير"], "ماذا يعمل أخي؟"),
        (
            "u-en",
            ["my brother works as a doctor in Leeds", "lol", "bought a new bike", "good night"],
            "where does my brother work?",
        ),
    ]:
        sc.request({"type": "store", "messages": [{"user_id": user, "content": c} for c in memories]})
        top = _query(sc, user, question)[0]
        assert top["content"] == memories[0], (user, top)
        semantic = top["score"] - keyword_led  # what the semantic list added
        if user == "u-en":
            assert semantic > UNREAD_WEIGHTS["semantic"] / (RRF_K + 1), top
        else:
            assert 0 < semantic <= UNREAD_WEIGHTS["semantic"] / (RRF_K + 1) + 1e-6, (user, top)


def test_facts_hybrid_is_led_by_keywords_for_a_script_the_model_does_not_read(tmp_path):
    """The facts' fusion follows the same rule: vectors made to rank the facts in the opposite order to BM25
    lead for an English question, and break ties only for a Russian one on a model reading Latin alone."""
    from helpers import DIM, MODEL

    from sidecar.facts import FactStore
    from sidecar.messages.store import MessageStore

    store = MessageStore(tmp_path, MODEL)
    facts = FactStore.attach(store.database, store.lock, model_scripts=LATIN)
    try:
        texts = ["брат брат живёт в Москве", "брат любит футбол и шахматы по вечерам", "кошка спит на диване"]
        texts += ["brother brother lives in Leeds", "brother likes football and chess in the evening", "the cat sleeps"]
        now = time.time()
        rows = [
            {"id": f"f{i}", "user_id": "u", "text": t, "category": "preference", "source": "rules", "confidence": 0.9}
            | {"message_id": None, "created_at": now, "updated_at": now, "active": True, "superseded_by": None}
            | {"superseded_at": None, "superseded_reason": None}
            for i, t in enumerate(texts)
        ]
        vectors = np.zeros((len(texts), DIM), np.float32)
        for i in range(len(texts)):
            vectors[i, i % 3] = 1.0
        facts.add(rows, vectors)
        query = np.zeros(DIM, np.float32)
        query[1], query[0] = 1.0, 0.2  # nearest the second fact of each language, then the first
        query /= np.linalg.norm(query)

        def hybrid(text: str) -> list[str]:
            return [r["text"] for r in facts.search(query, "user_id = 'u'", 2, text=text, mode="hybrid")]

        assert hybrid("где живёт брат?") == texts[0:2]  # BM25's order: the fact saying брат twice first
        assert hybrid("where does my brother live?") == [texts[4], texts[3]]  # the vectors' order
        facts.model_scripts = None  # a model reading every script: the vectors lead for Russian too
        assert hybrid("где живёт брат?") == [texts[1], texts[0]]
    finally:
        store.close()


def test_every_result_carries_the_score_it_was_ranked_by(sc):
    sc.request(
        {
            "type": "store",
            "messages": [
                {"user_id": "s", "content": c}
                for c in (
                    "I adopted a grey cat called Miso",
                    "We hiked the ridge trail last weekend",
                    "My cat hates the vacuum",
                    "The cat and the dog play in the garden",
                    "Dinner was a spicy ramen",
                )
            ],
        }
    )
    for mode in ("semantic", "keyword", "hybrid"):
        found = _query(sc, "s", "my cat", mode, limit=5)
        assert len(found) >= 2, mode
        scores = [m["score"] for m in found]
        assert scores == sorted(scores, reverse=True), (mode, found)
        if mode == "semantic":
            assert scores == [m["similarity"] for m in found]
        else:
            assert scores != [m["similarity"] for m in found]


def test_bad_input_is_stored_as_written_and_found(sc):
    memories = {
        "👩\u200d👩\u200d👧 our family trip to Kyoto 🇯🇵": "kyoto",
        "\u202eevil\u202c \u2067مرحبا\u2069 greeting": "evil",
        "cafe\u0301 in NFD": "café",
        "ＦＵＬＬ ｗｉｄｔｈ keyboard": "full",
        "\u0301\u0301 lone marks \u0903": "lone",
        "我喜欢iPhone和Gitarre": "iphone",
        "Zürich und 東京 und Москва": "москва",
    }
    r = sc.request({"type": "store", "messages": [{"user_id": "bad", "content": c} for c in memories]})
    assert r["type"] == "ok", r
    for (content, word), mid in zip(memories.items(), r["ids"]):
        found = _query(sc, "bad", word, "keyword")
        assert found and found[0]["id"] == mid and found[0]["content"] == content, (word, found)
    big = ("我最喜欢的食物是饺子，" * 33_334)[:333_333]  # 999,999 bytes of UTF-8
    assert sc.request({"type": "store", "user_id": "big", "content": big}, timeout=120)["type"] == "ok"
    found = _query(sc, "big", "饺子", "keyword")
    assert len(found) == 1 and found[0]["content"] == big
    assert sc.request({"type": "ping"})["type"] == "pong"


def test_tags_facts_and_context_in_four_scripts(sc):
    facts = {
        "zh": "最喜欢的食物是饺子",
        "ar": "يحب القهوة العربية",
        "hi": "मुझे गुलाब जामुन पसंद है",
        "ru": "Живёт в Казани с двумя кошками",
    }
    for lang, fact in facts.items():
        reply = {
            "zh": f'好的<memory category="preference">{fact}</memory>。我记住了',
            "ar": f'حسنًا <memory category="preference">{fact}</memory>؟',
            "hi": f'ठीक है <memory category="preference">{fact}</memory> याद रहेगा',
            "ru": f'Понял <memory category="preference">{fact}</memory>.',
        }[lang]
        r = sc.request({"type": "extract_inline", "user_id": f"f-{lang}", "reply": reply})
        assert r["type"] == "extracted" and [f["fact"]["text"] for f in r["facts"]] == [fact], r
        assert "<memory" not in r["reply"] and fact not in r["reply"]
    assert (
        sc.request(
            {"type": "extract_inline", "user_id": "f-zh", "reply": '好的<memory category="preference">x</memory>。'}
        )["reply"]
        == "好的。"
    )
    for lang, word in (("zh", "饺子"), ("ar", "القهوة"), ("hi", "जामुन"), ("ru", "Казань")):
        r = sc.request({"type": "facts", "user_id": f"f-{lang}", "text": word, "mode": "keyword"})
        assert [f["text"] for f in r["facts"]] == [facts[lang]], (lang, r)
        block = sc.request({"type": "context", "user_id": f"f-{lang}", "text": word})
        assert block["type"] == "context" and facts[lang] in block["text"], block


def test_numeric_dates_in_any_language_rank_that_day_first(sc):
    day = 1709596800  # 2024-03-05
    r = sc.request(
        {
            "type": "store",
            "messages": [
                {"user_id": "d", "content": "我们去了海边", "timestamp": day - 40 * 86400},
                {"user_id": "d", "content": "我们去了山里", "timestamp": day + 3600},
            ],
        }
    )
    assert _query(sc, "d", "2024年3月5日我们去了哪里？", limit=1)[0]["id"] == r["ids"][1]


def test_facts_of_a_schema_6_data_dir_get_their_terms(spawn, tmp_path):
    sc = spawn()
    r = sc.request({"type": "remember", "user_id": "u", "text": "最喜欢的食物是饺子", "category": "preference"})
    assert r["type"] == "remembered", r
    assert sc.shutdown() == 0
    # what schema 6 had: no terms or language, a full-text index on text
    db = lancedb.connect(sc.data_dir / "lancedb")
    old = db.open_table("facts").to_arrow().drop_columns(["terms", "language"])
    table = db.create_table("facts", data=old, mode="overwrite")
    table.create_index("text", config=FTS())
    meta = orjson.loads((sc.data_dir / "meta.json").read_bytes())
    (sc.data_dir / "meta.json").write_bytes(orjson.dumps({**meta, "schema_version": 6}))
    sc2 = spawn()
    assert orjson.loads((sc2.data_dir / "meta.json").read_bytes())["schema_version"] == SCHEMA_VERSION == 7
    got = sc2.request({"type": "facts", "user_id": "u", "text": "饺子", "mode": "keyword"})
    assert [f["text"] for f in got["facts"]] == ["最喜欢的食物是饺子"], got
    assert "terms" in lancedb.connect(sc2.data_dir / "lancedb").open_table("facts").schema.names
    r = sc2.request({"type": "remember", "user_id": "u", "text": "Saya suka menulis puisi", "category": "preference"})
    assert r["type"] == "remembered", r
    assert sc2.shutdown() == 0
    # a schema 7 data dir from before the words' grams: its terms without them, no analysis recorded
    data = db.open_table("facts").to_arrow()
    plain = [" ".join(t for t in v.split() if not t.startswith("~")) for v in data.column("terms").to_pylist()]
    data = data.set_column(data.column_names.index("terms"), "terms", pa.array(plain, pa.string()))
    db.create_table("facts", data=data.replace_schema_metadata(None), mode="overwrite")
    sc3 = spawn()
    got = sc3.request({"type": "facts", "user_id": "u", "text": "tulisan", "mode": "keyword"})
    assert [f["text"] for f in got["facts"]] == ["Saya suka menulis puisi"], got
    got = sc3.request({"type": "facts", "user_id": "u", "text": "饺子", "mode": "keyword"})
    assert [f["text"] for f in got["facts"]] == ["最喜欢的食物是饺子"], got
    got = sc3.request({"type": "facts", "user_id": "u", "text": "饺", "mode": "keyword"})
    assert [f["text"] for f in got["facts"]] == ["最喜欢的食物是饺子"], got  # the unigram
    assert sc3.shutdown() == 0
    # a data dir of the analysis before the unigrams (2): its terms without them, found once analysed again
    data = db.open_table("facts").to_arrow()
    assert data.schema.metadata[b"terms_analysis"] == b"3"
    plain = [
        " ".join(t for t in v.split() if not (t.startswith("~") and len(t) == 2))
        for v in data.column("terms").to_pylist()
    ]
    data = data.set_column(data.column_names.index("terms"), "terms", pa.array(plain, pa.string()))
    db.create_table("facts", data=data.replace_schema_metadata({b"terms_analysis": b"2"}), mode="overwrite")
    sc4 = spawn()
    got = sc4.request({"type": "facts", "user_id": "u", "text": "饺", "mode": "keyword"})
    assert [f["text"] for f in got["facts"]] == ["最喜欢的食物是饺子"], got
