"""The time a query names (messages/timewords.py), and what ranking does with it over the pipe."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from sidecar.messages.timewords import named_window

NOW = datetime(2026, 11, 23, 15, 0, tzinfo=timezone.utc).timestamp()  # a Monday


def _days(window):
    return None if window is None else tuple(datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d") for t in window)


@pytest.mark.parametrize("text, days", [
    ("What painting did Mel show on October 13, 2023?", ("2023-10-12", "2023-10-15")),
    ("what did Gina find on 1 February, 2023", ("2023-01-31", "2023-02-03")),
    ("Sept. 4th, 2022 was a Sunday", ("2022-09-03", "2022-09-06")),
    ("what did I cook in May 2023?", ("2023-05-01", "2023-06-01")),
    ("what did I cook in December 2023?", ("2023-12-01", "2024-01-01")),
    ("how many trips in 2023", ("2023-01-01", "2024-01-01")),
    ("what did I say yesterday", ("2026-11-22", "2026-11-23")),
    ("my plans last week", ("2026-11-16", "2026-11-23")),
    ("what happened last weekend?", ("2026-11-21", "2026-11-23")),
    ("last month", ("2026-10-01", "2026-11-01")),
    ("what did I read last year", ("2025-01-01", "2026-01-01")),
    ("three days ago", ("2026-11-19", "2026-11-22")),
    ("in May 2023, and also last year", ("2023-05-01", "2023-06-01")),  # the absolute date wins
])
def test_named_windows(text, days):
    assert _days(named_window(text, NOW)) == days


@pytest.mark.parametrize("text", ["in June", "may I ask you something?", "the 2023 trip", "on 31 February, 2023",
                                  "", "🙂🙂", "a" * 40_000, "when did I adopt the cat?"])
def test_no_window_where_no_time_is_named(text):
    assert named_window(text, NOW) is None


def test_a_query_naming_a_date_ranks_that_days_memories_first(sidecar):
    days = [datetime(2024, m, 3, 19, tzinfo=timezone.utc).timestamp() for m in (1, 3, 5, 7, 9)]
    dishes = ["lentil soup", "mushroom risotto", "green curry", "fish tacos", "pumpkin gnocchi"]
    msgs = [{"user_id": "t", "content": f"For dinner I cooked {d} for the whole family.", "timestamp": ts}
            for d, ts in zip(dishes, days)]
    assert sidecar.request({"type": "store", "messages": msgs})["type"] == "ok"
    for k, month in enumerate(["January", "March", "May", "July", "September"]):
        r = sidecar.request({"type": "query", "user_id": "t", "text": f"What did I cook on {month} 3, 2024?", "limit": 3})
        assert dishes[k] in r["messages"][0]["content"], (month, [m["content"] for m in r["messages"]])
        assert len(r["messages"]) == 3  # a hint, not a filter: other memories still follow
    # an explicit window is the host's: it filters, and the text's date is not applied on top
    r = sidecar.request({"type": "query", "user_id": "t", "text": "What did I cook on March 3, 2024?",
                         "since": int(days[3]) - 60, "limit": 5})
    assert [m["content"] for m in r["messages"]] and all(m["timestamp"] >= days[3] - 60 for m in r["messages"])
