"""Unit tests of the pure conversation logic (sidecar/conversation.py): thread forest, exclusions,
rendering byte for byte, history compression, opt-out detection."""

from __future__ import annotations

import pytest

from sidecar.conversation import threads as conv
from sidecar.conversation.threads import Msg, Speakers, Tiers

T0 = 1_704_067_200  # 2024-01-01T00:00:00Z


def msg(mid: str, user: str, text: str, t: float, reply_to: str | None = None, **kw) -> Msg:
    return Msg(
        user_id=user,
        content=text,
        timestamp=T0 + t,
        message_id=mid,
        reply_to=reply_to,
        username=kw.pop("username", user),
        **kw,
    )


def block(window, *, exclude=(), max_threads=5, speakers=Speakers()) -> str:
    threads = conv.channel_threads(conv.chronological(window), exclude_ids=exclude, max_threads=max_threads)
    return conv.render_channel_block(threads, speakers)


# ---------------------------------------------------------------- channel block


def test_two_standalone_messages_give_two_threads_newest_first():
    window = [msg("1", "alice", "anyone up for lunch?", 0), msg("2", "bob", "the build is red again", 60)]
    assert block(window) == (
        "[recent channel context]\n"
        "\n"
        "standalone (bob):\n"
        "  bob: the build is red again\n"
        "\n"
        "standalone (alice):\n"
        "  alice: anyone up for lunch?"
    )


def test_reply_chain_and_standalone_give_two_threads_chain_in_chronological_order():
    window = [
        msg("1", "alice", "how do I reset the router?", 0),
        msg("2", "carol", "lunch at noon?", 10),
        msg("3", "bob", "hold the button for 10 s", 20, reply_to="1"),
        msg("4", "alice", "that worked, thanks", 30, reply_to="3"),
    ]
    # given in scrambled order: the order comes from the timestamps
    assert block([window[3], window[1], window[0], window[2]]) == (
        "[recent channel context]\n"
        "\n"
        "thread (alice, bob):\n"
        "  alice: how do I reset the router?\n"
        "  bob: hold the button for 10 s\n"
        "  alice: that worked, thanks\n"
        "\n"
        "standalone (carol):\n"
        "  carol: lunch at noon?"
    )


def test_thread_order_is_by_latest_message_not_by_root():
    window = [
        msg("1", "alice", "old question", 0),
        msg("2", "bob", "newer standalone", 10),
        msg("3", "carol", "late answer to the old question", 20, reply_to="1"),
    ]
    assert [t.messages[0].message_id for t in conv.channel_threads(window)] == ["1", "2"]


def test_reply_to_a_message_outside_the_window_is_a_root():
    window = [msg("5", "bob", "as I said above", 0, reply_to="1"), msg("6", "alice", "yes", 10, reply_to="5")]
    assert block(window) == ("[recent channel context]\n\nthread (bob, alice):\n  bob: as I said above\n  alice: yes")


def test_one_person_thread_is_standalone():
    window = [msg("1", "dave", "part one", 0), msg("2", "dave", "part two", 5, reply_to="1")]
    assert block(window) == "[recent channel context]\n\nstandalone (dave):\n  dave: part one\n  dave: part two"


def test_ten_roots_are_capped_at_five_threads():
    window = [msg(str(i), f"u{i}", f"message {i}", i) for i in range(10)]
    threads = conv.channel_threads(window)
    assert [t.messages[0].content for t in threads] == [f"message {i}" for i in (9, 8, 7, 6, 5)]
    assert block(window).count("standalone (") == 5
    assert len(conv.channel_threads(window, max_threads=2)) == 2


def test_excluded_ids_and_a_whole_reply_chain_do_not_appear():
    window = [
        msg("1", "alice", "root of the host's chain", 0),
        msg("2", "bob", "side topic", 5),
        msg("3", "bot", "bot reply in the chain", 10, reply_to="1", is_bot=True),
        msg("4", "carol", "carol comments on the root", 12, reply_to="1"),
        msg("5", "alice", "alice follows up", 15, reply_to="3"),
        msg("6", "dave", "noise", 20),
    ]
    by_id = {m.message_id: m for m in window}
    chain = conv.reply_chain(
        "7", lambda mid: by_id.get(mid) or (Msg("alice", "now", reply_to="5") if mid == "7" else None)
    )
    assert chain == {"7", "5", "3", "1"}
    assert block(window, exclude=chain | {"6"}) == (
        "[recent channel context]\n"
        "\n"
        "standalone (carol):\n"
        "  carol: carol comments on the root\n"
        "\n"
        "standalone (bob):\n"
        "  bob: side topic"
    )


def test_everything_excluded_gives_an_empty_block_not_a_header():
    window = [msg("1", "alice", "a", 0), msg("2", "bob", "b", 1, reply_to="1")]
    assert block(window, exclude={"1", "2"}) == ""
    assert block([]) == ""
    assert block([msg("1", "alice", "   ", 0)]) == ""  # empty text is skipped


def test_bot_is_labelled_by_name():
    window = [
        msg("1", "42", "what's the weather?", 0, username="alice"),
        msg("2", "B0T", "sunny, 21 degrees", 5, reply_to="1", username="weather-bot-internal"),
        msg("3", "77", "ignore me, I am another bot", 6, username="otherbot", is_bot=True),
    ]
    assert block(window, speakers=Speakers(bot_user_id="B0T", bot_name="Sunny")) == (
        "[recent channel context]\n"
        "\n"
        "standalone (otherbot):\n"
        "  otherbot: ignore me, I am another bot\n"
        "\n"
        "thread (alice, Sunny):\n"
        "  alice: what's the weather?\n"
        "  Sunny: sunny, 21 degrees"
    )


def test_labels_fall_back_to_user_id_and_is_bot_without_bot_user_id():
    window = [
        Msg("123", "hi", timestamp=1.0, message_id="1"),
        Msg("123", "hello 123", is_bot=True, timestamp=2.0, message_id="2", reply_to="1"),
        Msg("123", "no name given", is_bot=True, timestamp=3.0, message_id="3"),
    ]
    assert block(window, speakers=Speakers(bot_name="Mika")) == (
        "[recent channel context]\n\nstandalone (Mika):\n  Mika: no name given\n\n"
        "thread (123, Mika):\n  123: hi\n  Mika: hello 123"
    )
    assert conv.Speakers().label(window[2]) == "bot"


def test_multiline_text_is_indented_and_names_are_one_line():
    # further lines get four spaces on top of their own indentation (code stays readable)
    window = [Msg("1", "first line\r\n\n  second line  \n", timestamp=1.0, username="Ann\nMarie")]
    assert (
        block(window)
        == "[recent channel context]\n\nstandalone (Ann Marie):\n  Ann Marie: first line\n      second line"
    )


def test_empty_messages_are_skipped_but_their_replies_stay_in_the_thread():
    window = [
        msg("1", "alice", "", 0),
        msg("2", "bob", "replying to an image", 1, reply_to="1"),
        msg("3", "carol", "me too", 2, reply_to="1"),
    ]
    assert block(window) == (
        "[recent channel context]\n\nthread (bob, carol):\n  bob: replying to an image\n  carol: me too"
    )


def test_reply_cycles_and_self_replies_do_not_hang_or_lose_messages():
    window = [
        msg("1", "a", "x", 0, reply_to="2"),
        msg("2", "b", "y", 1, reply_to="1"),
        msg("3", "c", "z", 2, reply_to="3"),
    ]
    assert conv.thread_forest(window) == [[0, 1], [2]]
    assert conv.reply_chain("1", {m.message_id: m for m in window}.get) == {"1", "2"}


def test_duplicate_message_ids_count_once_as_the_newest_copy():
    msgs = conv.chronological([msg("1", "a", "typo", 0), msg("1", "a", "fixed", 1), msg("2", "b", "ok", 2, "1")])
    assert [m.content for m in conv.dedupe(msgs)] == ["fixed", "ok"]
    # the same number in two chats is two messages (Telegram numbers messages per chat)
    two_chats = [
        Msg("u", "in A", timestamp=1.0, message_id="42", channel_id="A"),
        Msg("u", "in B", timestamp=2.0, message_id="42", channel_id="B"),
    ]
    assert conv.dedupe(two_chats) == two_chats


def test_order_key_breaks_timestamp_ties_by_numeric_message_id_then_storage_id():
    a = Msg("u", "a", timestamp=5.0, message_id="10", id="z")
    b = Msg("u", "b", timestamp=5.0, message_id="9", id="y")
    c = Msg("u", "c", timestamp=5.0, message_id=None, id="x")
    d = Msg("u", "d", timestamp=5.0, message_id=None, id="w")
    e = Msg("u", "e", timestamp=4.0, message_id="99")
    assert [m.content for m in conv.chronological([a, b, c, d, e])] == ["e", "d", "c", "b", "a"]


def test_window_before():
    msgs = [msg(str(i), "u", str(i), i) for i in range(10)]
    assert [m.message_id for m in conv.window_before(msgs, 3)] == ["7", "8", "9"]
    assert [m.message_id for m in conv.window_before(msgs, 3, "5")] == ["2", "3", "4"]
    assert conv.window_before(msgs, 3, "nope") is None


# ---------------------------------------------------------------- history


def test_cut_words():
    assert conv.cut_words("one two three", 3) == "one two three"
    assert conv.cut_words("one two three four", 3) == "one two three…"
    assert conv.cut_words("  spaced\n\nout   words here ", 2) == "spaced out…"
    assert conv.cut_words("keeps\nlines when whole", 8) == "keeps\n    lines when whole"


def test_cut_holds_text_without_spaces_to_ten_characters_per_word():
    cjk = "这是一个没有空格的很长的中文句子" * 10  # 160 characters, one "word"
    assert conv.cut_words(cjk, 8) == cjk[:80] + "…"
    assert conv.cut_words(cjk[:80], 8) == cjk[:80]  # within budget: whole
    url = "see https://example.com/" + "a" * 200
    assert conv.cut_words(url, 3) == "see https://example.com/" + "a" * 6 + "…"
    # the back-off to a space only happens in the second half of the budget
    assert conv.cut_words("ab " + "c" * 40, 2) == "ab " + "c" * 17 + "…"
    assert conv.cut_words("a" * 15 + " " + "b" * 40, 2) == "a" * 15 + "…"


def test_history_cut_lengths_and_order():
    words = " ".join(f"w{i}" for i in range(40))  # 40 words
    msgs = [Msg("u", f"m{i:02d} {words}", timestamp=T0 + 60 * i, username="ann") for i in range(35)]
    lines = conv.history_lines(msgs, Tiers(), Speakers())
    assert len(lines) == 30
    # oldest first: the 30 newest of 35, i.e. m05..m34
    assert [line.split(": ", 1)[1].split()[0] for line in lines] == [f"m{i:02d}" for i in range(5, 35)]
    bodies = [line.split(": ", 1)[1] for line in lines]
    assert all(len(b.split()) == 8 and b.endswith("…") for b in bodies[:15])  # short tier
    assert all(len(b.split()) == 32 and b.endswith("…") for b in bodies[15:25])  # mid tier
    assert all(len(b.split()) == 41 and "…" not in b for b in bodies[25:])  # newest 5 in full
    assert lines[0] == "[2024-01-01T00:05Z] ann: m05 w0 w1 w2 w3 w4 w5 w6…"
    assert lines[-1] == f"[2024-01-01T00:34Z] ann: m34 {words}"


def test_history_block_exact_with_custom_tiers_bot_and_no_cut_when_short():
    msgs = [
        Msg(
            "1",
            "I think we should move the standup to ten because half the team is remote now",
            timestamp=T0 + 59,
            username="alice",
        ),
        Msg("B", "Noted.", timestamp=T0 + 3600, is_bot=True),
        Msg("2", "Fine by me, ten works", timestamp=T0 + 7265.9, username="bob"),
    ]
    lines = conv.history_lines(
        msgs, Tiers(full=1, mid=1, mid_words=4, short=1, short_words=3), Speakers(bot_user_id="B", bot_name="Helper")
    )
    assert conv.render_history_block(lines) == (
        "[recent history]\n"
        "[2024-01-01T00:00Z] alice: I think we…\n"
        "[2024-01-01T01:00Z] Helper: Noted.\n"
        "[2024-01-01T02:01Z] bob: Fine by me, ten works"
    )
    assert conv.render_history_block([]) == ""


def test_history_skips_excluded_and_empty_and_untimed_lines_have_no_time():
    msgs = [Msg("1", "a"), Msg("1", " "), Msg("2", "b", message_id="x"), Msg("3", "c")]
    assert conv.history_lines(msgs, Tiers(full=5, mid=0, short=0), Speakers(), exclude_ids={"x"}) == ["1: a", "3: c"]


def test_history_multiline_full_message_keeps_lines_and_cut_one_is_one_line():
    msgs = [Msg("u", "line one\nline two", timestamp=T0), Msg("u", "a\nb", timestamp=T0 + 60)]
    assert conv.history_lines(msgs, Tiers(full=1, mid=1, mid_words=2), Speakers()) == [
        "[2024-01-01T00:00Z] u: line one…",
        "[2024-01-01T00:01Z] u: a\n    b",
    ]


def test_tiers_with_zero_counts():
    t = Tiers(full=0, mid=0, short=2, short_words=1)
    assert [t.words_for(r) for r in range(2)] == [1, 1]
    assert conv.history_lines([Msg("u", "a b"), Msg("u", "c d")], t, Speakers()) == ["u: a…", "u: c…"]


# ---------------------------------------------------------------- opt-out


@pytest.mark.parametrize(
    "text,marker,expected",
    [
        ("please don't use context 🚫", "🚫", True),
        ("🚫️ with a variation selector", "🚫", True),
        ("normal message", "🚫", False),
        (None, "🚫", False),
        ("[NoContext] hi", "[nocontext]", True),
        ("🚫", "", False),
    ],
)
def test_opt_out_marker(text, marker, expected):
    assert conv.opted_out(text, marker) is expected


def test_format_time_drops_seconds():
    assert conv.format_time(T0 + 3599.99) == "2024-01-01T00:59Z"
