"""Unit tests of the pure fact rules: duplicate rule, decisions, instructions, context rendering,
LLM answer parsing, configuration."""

from __future__ import annotations

import pytest

from sidecar.conversation.threads import memory_lines
from sidecar.facts.llm_tasks import parse_decision, parse_extraction
from sidecar.facts.rules import (
    DEFAULT_CATEGORIES,
    ContextFact,
    ContextMemory,
    ContextRelation,
    ContextUser,
    Decision,
    is_duplicate,
    memory_instructions,
    parse_categories,
    plan_decisions,
    render_markdown,
    render_xml,
    same_as_fact,
    same_terms,
)
from sidecar.llm import LLMError, parse_json_object
from sidecar.runtime.config import ConfigError, resolve


def test_duplicate_rule():
    assert is_duplicate("Likes tea", "  likes   TEA ", 0.1)  # same text up to case/spacing, whatever the score
    assert is_duplicate("Has two kids", "Has two children", 0.96)
    assert not is_duplicate("Likes coffee", "Dislikes coffee", 0.76)
    assert not is_duplicate("Is 29 years old", "Is 30 years old", 0.95)  # the number guard
    assert is_duplicate("Budget is 1500 dollars", "Has a budget of $1500", 0.9)


def test_duplicate_rule_in_a_script_the_model_does_not_read_needs_the_same_terms():
    latin = frozenset({"Latin"})  # all-MiniLM-L6-v2's: any two Arabic sentences score high to it
    assert not is_duplicate("أخي يعمل طبيبا", "أخي أهداني كتابا", 0.95, scripts=latin)
    assert is_duplicate("أخي يعمل طبيبا.", "أخي يعمل طبيبا", 0.95, scripts=latin)  # only punctuation differs
    assert not is_duplicate("Мой брат работает врачом", "Мой брат подарил мне книгу", 0.95, scripts=latin)
    assert not is_duplicate("我哥哥是医生", "我哥哥送我一本书", 0.95, scripts=latin)
    assert is_duplicate("我哥哥是医生。", "我哥哥是医生", 0.95, scripts=latin)
    assert not is_duplicate("أخي يعمل طبيبا.", "أخي يعمل طبيبا", 0.5, scripts=latin)  # the threshold still holds
    assert not is_duplicate("Has two kids", "Has two children", 0.87, scripts=latin)
    # read scripts (or a model reading every one): the similarity decides, as before
    assert is_duplicate("Has two kids", "Has two children", 0.96, scripts=latin)
    assert is_duplicate("أخي يعمل طبيبا", "أخي أهداني كتابا", 0.95)
    # either side unread is enough to ask for the terms
    assert not is_duplicate("My brother is a doctor", "أخي يعمل طبيبا", 0.95, scripts=latin)
    assert same_terms("Мой брат живёт в Дубае", "мой брат живет в дубае!")
    assert not same_terms("Мой брат живёт в Дубае", "Мой брат живёт в Абу-Даби")


def test_plan_decisions_one_merge_at_most():
    out = plan_decisions(
        [
            Decision("MERGE", "a and b", "llm"),
            Decision("MERGE", "a and c", "llm"),
            Decision("INVALIDATE", None, "llm"),
            Decision("MERGE", "  ", "llm"),
        ]
    )
    assert [d.action for d in out] == ["MERGE", "KEEP", "INVALIDATE", "KEEP"]
    assert out[0].merged_text == "a and b"


def test_parse_categories():
    assert parse_categories(" Preference, company ,,company") == ("preference", "company")
    with pytest.raises(ValueError):
        parse_categories(",,")
    with pytest.raises(ValueError):
        parse_categories("has space")


def test_memory_instructions_from_categories():
    text = memory_instructions(DEFAULT_CATEGORIES)
    assert '<memory category="CATEGORY">fact</memory>' in text
    for c in DEFAULT_CATEGORIES:
        assert f"- {c}: " in text
    assert "One fact per tag" in text and "Never mention" in text and "trivia" in text
    assert "<private>...</private>" in text and "password" in text  # private spans and secrets stay out
    custom = memory_instructions(("hobby",))
    assert "- hobby\n" in custom and "preference" not in custom


def _f(i, text, cat, t, sim=None):
    return ContextFact(f"id{i}", text, cat, t, sim)


def test_render_xml_escapes_and_skips_empty_users():
    users = [
        ContextUser("1", 'Al "the" <b>', [_f(1, "Likes R&B", "preference", 1.0), _f(2, "a\nb", "answer", 2.0)]),
        ContextUser("2", "nobody", []),
    ]
    assert render_xml(users) == (
        '<background_facts>\n<user name="Al &quot;the&quot; &lt;b&gt;">\n- Likes R&amp;B\n'
        "- a b\n</user>\n</background_facts>"
    )
    assert render_xml([ContextUser("2", "x", [])]) == ""


def test_render_markdown_sections_no_repeats_and_empty():
    prefs = [_f(1, "Likes tea", "preference", 3.0), _f(2, "Likes jazz", "preference", 5.0)]
    relevant = [
        _f(1, "Likes tea", "preference", 3.0, 0.9),
        _f(3, "Works at Acme", "company", 1.0, 0.8),
        _f(4, "Runs daily", "pattern", 2.0, 0.1),
    ]
    text = render_markdown([ContextUser("1", "alice", relevant, prefs)], preferences_limit=10, relevant_limit=1)
    assert text == (
        "## Memory Context\n\n### User Preferences\n- [preference] Likes jazz\n- [preference] Likes tea\n\n"
        "### Relevant Context\n- [company] Works at Acme"
    )
    assert render_markdown([ContextUser("1", "a", [], [])], 10, 10) == ""
    two = render_markdown([ContextUser("1", "alice", [], prefs[:1]), ContextUser("2", "bob", [], prefs[1:])], 10, 10)
    assert two.splitlines()[3:] == ["- [preference] bob: Likes jazz", "- [preference] alice: Likes tea"]


MARCH_2024 = 1_709_856_000  # 2024-03-08 UTC


def test_render_xml_and_markdown_with_what_is_true_now_and_memories():
    now = [ContextRelation("Lives in Paris", MARCH_2024), ContextRelation("Has a sister, <Ana>")]
    memories = [ContextMemory(MARCH_2024, "Sam", "I moved to Paris & love it"), ContextMemory(0.0, "bot", "ok\n  sure")]
    users = [
        ContextUser("1", "Sam", [_f(1, "Likes tea", "preference", 1.0)], [], now, memories),
        ContextUser("2", "Al", [], [], [], []),
        ContextUser("3", "Bo", [], [], [], memories[1:]),
    ]
    assert render_xml(users) == (
        '<background_facts>\n<user name="Sam">\n- Likes tea\n<true_now>\n- Lives in Paris (as of March 2024)\n'
        "- Has a sister, &lt;Ana&gt;\n</true_now>\n<memories>\n- 2024-03-08 Sam: I moved to Paris &amp; love it\n"
        '- 1970-01-01 bot: ok sure\n</memories>\n</user>\n<user name="Bo">\n<memories>\n- 1970-01-01 bot: ok sure\n'
        "</memories>\n</user>\n</background_facts>"
    )
    md = render_markdown(users[:1], preferences_limit=0, relevant_limit=10)
    assert md == (
        "## Memory Context\n\n### True Now\n- Lives in Paris (as of March 2024)\n- Has a sister, <Ana>\n\n"
        "### Relevant Context\n- [preference] Likes tea\n\n### Relevant Memories\n"
        "- 2024-03-08 Sam: I moved to Paris & love it\n- 1970-01-01 bot: ok sure"
    )
    two = render_markdown([ContextUser("1", "Sam", [], [], now[:1]), ContextUser("2", "Ana", [], [], now[1:])], 0, 0)
    assert two.splitlines()[3:] == ["- Sam: Lives in Paris (as of March 2024)", "- Ana: Has a sister, <Ana>"]


@pytest.mark.parametrize(
    "sentence, obj, fact, sim, same",
    [
        ("Lives in Paris", "Paris", "lives in  paris", None, True),  # the same text: no similarity needed
        ("Has a pet named Max", "Max", "Has a dog named Max", 0.94, True),
        ("Has a pet named Max", "Max", "Has a dog named Max", None, False),  # not computed: not the same text
        ("Lives in Berlin", "Berlin", "Used to live in Berlin", 0.90, False),  # another time
        ("Lives in Paris", "Paris", "Wants to move to Paris", 0.95, False),  # an intention
        ("Lives in Paris", "Paris", "Lives in the French capital", 0.90, False),  # does not name the object
        ("Lives in Paris", "Paris", "Is based in Paris", 0.82, False),  # below the duplicate threshold: shown twice
        ("Birthday is May 3", "May 3", "Birthday is May 4", 0.97, False),  # the number guard
    ],
)
def test_a_relation_and_a_fact_say_the_same_thing(sentence, obj, fact, sim, same):
    assert same_as_fact(sentence, obj, fact, sim) is same


def test_memory_lines_keep_to_their_word_budget():
    rows = {
        "a": [
            {
                "similarity": 0.9 - i / 100,
                "content": " ".join(["word"] * 50),
                "timestamp": 1.0 + i,
                "username": None,
                "is_bot": i == 1,
            }
            for i in range(3)
        ],
        "b": [{"similarity": 0.5, "content": "short one", "timestamp": 9.0, "username": "Bee\nX"}],
    }
    out = memory_lines(rows, {"a": "Alice", "b": "B"}, words=40)
    lines = [m for ms in out.values() for m in ms]
    assert [m.label for m in out["a"]] == ["Alice", "bot", "Alice"] and out["b"][0].label == "Bee X"
    assert sum(len(m.text.split()) for m in lines) <= 40 and all(m.text.endswith("…") for m in out["a"])
    tiny = memory_lines(rows, {"a": "Alice"}, words=8)  # room for two lines of four words: the most similar
    assert [(u, len(ms)) for u, ms in tiny.items()] == [("a", 2)]
    assert memory_lines({}, {}, words=100) == {}


def test_llm_answer_parsing():
    assert parse_json_object('```json\n{"action": "KEEP"}\n```') == {"action": "KEEP"}
    assert parse_json_object('Sure: {"action": "merge", "merged_text": "x"} hope it helps') == {
        "action": "merge",
        "merged_text": "x",
    }
    for bad in ("not json", "[1, 2]", "{broken"):
        with pytest.raises(LLMError):
            parse_json_object(bad)
    assert parse_decision({"action": "invalidate"}).action == "INVALIDATE"
    assert parse_decision({"action": "MERGE", "merged_text": " a  and b "}).merged_text == "a and b"
    for bad in ({"action": "DELETE"}, {}, {"action": "MERGE"}, {"action": "MERGE", "merged_text": " "}):
        with pytest.raises(LLMError):
            parse_decision(bad)
    facts = parse_extraction(
        {
            "facts": [
                {"text": "Likes tea", "category": "Preference"},
                {"text": "x"},
                {"text": "y", "category": "mood"},
                "junk",
            ]
        },
        DEFAULT_CATEGORIES,
    )
    assert facts == [("Likes tea", "preference")]
    with pytest.raises(LLMError):
        parse_extraction({"fact": []}, DEFAULT_CATEGORIES)


def test_config_llm_and_fact_options():
    cfg = resolve(["--data-dir", "/tmp/x"], {})
    assert cfg.llm_base_url is None and cfg.fact_categories == DEFAULT_CATEGORIES
    cfg = resolve(
        ["--data-dir", "/tmp/x", "--llm-base-url", "http://127.0.0.1:1/v1", "--fact-categories", "a,b"],
        {"MEMORY_SIDECAR_LLM_MODEL": "m", "MEMORY_SIDECAR_DUPLICATE_THRESHOLD": "0.9"},
    )
    assert (cfg.llm_base_url, cfg.llm_model, cfg.fact_categories, cfg.duplicate_threshold) == (
        "http://127.0.0.1:1/v1",
        "m",
        ("a", "b"),
        0.9,
    )
    with pytest.raises(ConfigError, match="needs --llm-model"):
        resolve(["--llm-base-url", "http://x/v1"], {})
    with pytest.raises(ConfigError):
        resolve(["--llm-base-url", "ftp://x"], {"MEMORY_SIDECAR_LLM_MODEL": "m"})
    with pytest.raises(ConfigError):
        resolve(["--duplicate-threshold", "1.5"], {})


def test_every_option_is_in_the_configuration_page():
    from pathlib import Path

    from sidecar.runtime.config import OPTIONS

    page = (Path(__file__).resolve().parent.parent / "docs" / "configuration.md").read_text()
    for opt in OPTIONS:
        assert f"`{opt.flag}`" in page and f"`{opt.env}`" in page, opt.name
