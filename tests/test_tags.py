"""Unit tests of the <memory> tag parser/stripper (pure logic)."""

from __future__ import annotations

import re

import pytest

from sidecar.facts.tags import extract

CATS = ("preference", "company", "pattern", "answer")


def run(reply: str):
    e = extract(reply, CATS)
    assert not re.search(r"<\s*/?\s*memory(?=[\s>/]|$)", e.reply, re.IGNORECASE), f"a tag leaked: {e.reply!r}"
    return e, [(f.text, f.category) for f in e.facts], [r.reason for r in e.rejected]


def test_valid_tag_saved_and_stripped():
    e, facts, rej = run('Sure! <memory category="preference">Likes green tea</memory> Here you go.')
    assert e.reply == "Sure! Here you go."
    assert facts == [("Likes green tea", "preference")] and rej == []


def test_several_tags_in_order_and_tag_alone_on_a_line():
    e, facts, _rej = run(
        'Noted.\n<memory category="company">Works at Acme</memory>\n'
        '<memory category="pattern">Runs every morning</memory>\nAnything else?'
    )
    assert e.reply == "Noted.\nAnything else?"
    assert facts == [("Works at Acme", "company"), ("Runs every morning", "pattern")]


def test_no_tags_reply_untouched():
    reply = "  Plain answer with <b>html</b>, <memories> and <memory_x> tags that are not ours.\n"
    e, facts, rej = run(reply)
    assert e.reply == reply and facts == [] and rej == []


def test_upper_case_and_mixed_case_tags_and_category():
    e, facts, _rej = run(
        '<MEMORY CATEGORY="Preference">Likes jazz</MEMORY>Great choice. '
        '<Memory Category="ANSWER">Budget is 500 euros</mEmOrY>'
    )
    assert e.reply == "Great choice."
    assert facts == [("Likes jazz", "preference"), ("Budget is 500 euros", "answer")]


def test_multi_line_content_becomes_one_line():
    e, facts, _rej = run('Ok.\n<memory category="preference">\n  Likes\n   hiking   in\tthe Alps\n</memory>\nBye.')
    assert facts == [("Likes hiking in the Alps", "preference")]
    assert e.reply == "Ok.\nBye."


def test_attribute_quoting_and_spacing_variants():
    e, facts, _rej = run(
        "a < memory category = 'pattern' >runs daily</ memory > b "
        "<memory category=answer>bare value</memory>. "
        '<memory id="7" category="company" confidence="0.9">Works at Initech</memory>'
    )
    assert facts == [("runs daily", "pattern"), ("bare value", "answer"), ("Works at Initech", "company")]
    assert e.reply == "a b."


def test_invalid_category_rejected_but_stripped():
    e, facts, rej = run('a <memory category="bogus">secret fact</memory> b')
    assert e.reply == "a b" and facts == [] and rej == ["unknown_category"]
    assert "bogus" in e.rejected[0].message and "secret fact" in e.rejected[0].tag


def test_missing_category_and_empty_content():
    e, facts, rej = run(
        'a <memory>no category</memory>, b <memory category="preference">   </memory> c <memory category="">x</memory>'
    )
    assert e.reply == "a, b c"
    assert facts == [] and rej == ["missing_category", "empty", "missing_category"]


def test_nested_tags_inner_judged_outer_rejected():
    e, facts, rej = run(
        'a <memory category="preference">outer <memory category="answer">Budget is 500</memory> rest</memory> b'
    )
    assert e.reply == "a b"
    assert facts == [("Budget is 500", "answer")]
    assert rej == ["nested"]


def test_unclosed_tag_removed_to_end_of_line():
    e, facts, rej = run('Sure.\nA <memory category="preference">never closed fact\nNext line stays.')
    assert e.reply == "Sure.\nA\nNext line stays."
    assert facts == [] and rej == ["unclosed"]


def test_unclosed_tag_followed_by_a_valid_one():
    e, facts, rej = run('x <memory category="preference">half <memory category="answer">Budget is 9</memory> y')
    assert facts == [("Budget is 9", "answer")] and rej == ["unclosed"]
    assert e.reply == "x y"


def test_stray_close_self_closing_and_cut_off_tags():
    e, facts, rej = run('one </memory> two <memory category="preference"/> three <memory category="pref')
    assert e.reply == "one two three"
    assert facts == [] and rej == ["unmatched_close", "self_closing", "unterminated"]


def test_cut_off_tag_mid_reply_only_eats_its_line():
    e, _facts, rej = run('start <memory category="x\nsecond line')
    assert e.reply == "start\nsecond line" and rej == ["unterminated"]


def test_too_long_fact_rejected():
    e, facts, rej = run('a <memory category="preference">' + "x" * 1001 + "</memory> b")
    assert facts == [] and rej == ["too_long"] and e.reply == "a b"
    assert len(e.rejected[0].tag) <= 200


@pytest.mark.parametrize(
    "reply",
    [
        "<memory category='preference'>only a tag</memory>",
        "\n\n<memory category='preference'>x</memory>\n\n",
    ],
)
def test_reply_that_was_only_tags_is_empty(reply):
    e, _facts, _rej = run(reply)
    assert e.reply == ""


def test_blank_lines_collapse_where_tags_were():
    e, _, _ = run("Para one.\n\n<memory category='preference'>x</memory>\n\nPara two.")
    assert e.reply == "Para one.\n\nPara two."
