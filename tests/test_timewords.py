"""The time a query names (messages/timewords.py), and what ranking does with it over the pipe."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime

import pytest

from sidecar.messages.timewords import named_window

NOW = datetime(2026, 11, 23, 15, 0, tzinfo=UTC).timestamp()  # a Monday


def _days(window):
    return None if window is None else tuple(datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d") for t in window)


@pytest.mark.parametrize(
    "text, days",
    [
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
        ("a couple days ago", ("2026-11-20", "2026-11-23")),  # "ago" counts as "before" does
        ("several weeks ago", ("2026-10-27", "2026-11-08")),
        ("in May 2023, and also last year", ("2023-05-01", "2023-06-01")),  # the absolute date wins
        ("where was John on December 1,2023?", ("2023-11-30", "2023-12-03")),
        # words before the time move or narrow it: a span before / after it, open-ended, a range, a part
        ("Where was Tim in the week before 16 November 2023?", ("2023-11-08", "2023-11-17")),
        ("what did she do last weekend before April 10, 2023", ("2023-04-02", "2023-04-11")),
        ("the puppy she got two weeks before August 11, 2023", ("2023-07-27", "2023-08-12")),
        ("shown on the Sunday before October 25, 2022", ("2022-10-17", "2022-10-26")),
        ("two days after 4 July 2023", ("2023-07-04", "2023-07-08")),
        ("what did I read before 2020?", ("1900-01-01", "2020-01-02")),
        ("how many games had he won by July 10, 2022", ("1900-01-01", "2022-07-12")),
        ("as of December 2023", ("1900-01-01", "2024-01-02")),
        ("what did I cook after March 2023", ("2023-03-31", "2100-01-01")),
        ("since 2021", ("2020-12-31", "2100-01-01")),
        ("Where was John between August 11 and August 15 2023?", ("2023-08-10", "2023-08-17")),
        ("between May 3, 2023 and June 2, 2023", ("2023-05-02", "2023-06-04")),
        ("from May to July 2023", ("2023-05-01", "2023-08-01")),
        ("from 2021 to 2023", ("2021-01-01", "2024-01-01")),
        ("which tournament in the beginning of November 2022?", ("2022-10-31", "2022-11-12")),
        ("was the first half of September 2022 good", ("2022-08-31", "2022-09-17")),
        ("in mid-May 2023", ("2023-05-10", "2023-05-22")),
        ("in late 2022", ("2022-08-31", "2023-01-02")),
        ("early 2023", ("2022-12-31", "2023-05-03")),
        ("the second week of November 2023", ("2023-11-07", "2023-11-16")),
        ("the last week of February 2024", ("2024-02-22", "2024-03-02")),
        ("between 31 February and 3 March 2023", ("2023-03-02", "2023-03-05")),  # no such start: the day named
        ("after his trip in August 2023", ("2023-08-01", "2023-09-01")),  # "after" not about the time: the month
        # a review's findings, one case each
        ("What has Tim done since the beginning of 2023?", ("2022-12-31", "2100-01-01")),
        ("What had I finished by the end of May 2023?", ("1900-01-01", "2023-06-02")),
        ("Did Tim stay up late in May 2023?", ("2023-05-01", "2023-06-01")),  # "late" is not "late May"
        ("Did I leave work early in 2023?", ("2023-01-01", "2024-01-01")),
        ("Compare May 2023 and May 2024", ("2023-05-01", "2023-06-01")),  # "and" is a range only after "between"
        ("between 11 and 15 August 2023", ("2023-08-10", "2023-08-17")),
        ("from 3 to 5 May 2023", ("2023-05-02", "2023-05-07")),
        ("from 2021 to May 2023", ("2021-01-01", "2023-06-01")),
        ("between December 20 and January 5, 2024", ("2023-12-19", "2024-01-07")),
        ("a couple days before 10 May 2023", ("2023-05-07", "2023-05-11")),
        ("1000 days before 10 May 2023", ("2020-08-12", "2023-05-11")),
        ("what happened before 1950", ("1900-01-01", "1950-01-02")),
        ("what happened after May 2200", ("2200-05-31", "2200-06-02")),
        ("between May 0000 and 3 May 2023", ("2023-05-02", "2023-05-05")),  # no year 0: the other time alone
        ("May 2023 to December 9999", ("2023-05-01", "2023-06-01")),
        ("3 May 2023 and May 0000", ("2023-05-02", "2023-05-05")),
        # a second review's findings, one case each
        ("Where was I from 2021 to 2023 in Paris?", ("2021-01-01", "2024-01-01")),
        ("What had I saved by 2023 for the house?", ("1900-01-01", "2024-01-02")),
        ("the week before the end of May 2023", ("2023-05-13", "2023-05-22")),
        ("after 3 May 2023 and before 9 May 2023", ("2023-05-03", "2023-05-10")),
        ("Did I work from home between 11 and 15 August 2023?", ("2023-08-10", "2023-08-17")),
        ("from 2021 through 2023", ("2021-01-01", "2024-01-01")),
        ("from 2021-2023", ("2021-01-01", "2024-01-01")),
        ("by the end of the year 2023", ("1900-01-01", "2024-01-02")),
        ("between the 11th and 15th of August 2023", ("2023-08-10", "2023-08-17")),
        ("since last year", ("2024-12-31", "2100-01-01")),
        ("before yesterday", ("1900-01-01", "2026-11-23")),
        ("between August 11 and 15, 2023", ("2023-08-10", "2023-08-17")),  # days of one month
        ("August 11-15, 2023", ("2023-08-10", "2023-08-17")),
        ("11 to 15 August 2023", ("2023-08-10", "2023-08-17")),
        ("from the 3rd to the 9th of May 2023", ("2023-05-02", "2023-05-11")),
        # numeric dates, whatever the language around them
        ("我们2024年3月5日去了哪里？", ("2024-03-04", "2024-03-07")),
        ("2024년 3월 5일에 뭐 했어?", ("2024-03-04", "2024-03-07")),
        ("２０２４年３月５日", ("2024-03-04", "2024-03-07")),  # full-width digits
        ("Was haben wir am 05.03.2024 gemacht?", ("2024-03-04", "2024-03-07")),
        ("что было 2024-03-05?", ("2024-03-04", "2024-03-07")),
        ("ماذا حدث في 2024/03/05", ("2024-03-04", "2024-03-07")),
        ("¿qué pasó el 13/05/2024?", ("2024-05-12", "2024-05-15")),  # one number over 12: day first
        ("what happened on 05/13/2024?", ("2024-05-12", "2024-05-15")),  # ... or month first
        ("2024年3月", ("2024-03-01", "2024-04-01")),
        ("2024년 3월에", ("2024-03-01", "2024-04-01")),
        ("2023年的旅行", ("2023-01-01", "2024-01-01")),
        ("in 2024-03 we moved", ("2024-03-01", "2024-04-01")),
        ("after 2024-03-05", ("2024-03-05", "2100-01-01")),
        ("2024-03-05 to 2024-03-09", ("2024-03-04", "2024-03-11")),
    ],
)
def test_named_windows(text, days):
    assert _days(named_window(text, NOW)) == days


@pytest.mark.parametrize(
    "text",
    [
        "in June",
        "may I ask you something?",
        "the 2023 trip",
        "on 31 February, 2023",
        "the second week of November",
        "How did I increase my steps by 2000 a day?",
        "the year 2000 problem",
        "August 11-35, 2023",
        "Did I eat between 1500 and 2000 calories a day?",
        "raise the limit to 2024 points",
        "in December 9999",
        "Dec 0000",
        "May 0000",
        "03/05/2024",
        "2024-02-31",
        "31.02.2024",
        "order 12024-03-05",
        "",
        "🙂🙂",
        "a" * 40_000,
        "when did I adopt the cat?",
    ],
)
def test_no_window_where_no_time_is_named(text):
    assert named_window(text, NOW) is None


_WORDS = (
    "in of during from for since before after until till by early mid late between and to through - , as up prior "
    "the a an one two ten few couple several 3 12 29 31 0 999 1000 day days week weekend fortnight month year "
    "sunday beginning start middle end first second fourth last half ago yesterday today this January February "
    "Feb. May December Dec Sept. 1st 29th 31st 2023 2024 1900 1969 2099 2100 0000 9999 0001 ,2023"
).split()


def test_any_mix_of_time_words_gives_a_window_in_order_or_none():
    """20,000 texts drawn from the words the module reads, in any order: no exception, no window that ends
    before it starts, nothing but finite numbers (a year 0 once raised here and failed the query)."""
    rng = random.Random(20261128)
    for _ in range(20_000):
        text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 12)))
        window = named_window(text, NOW)
        assert window is None or (math.isfinite(window[0]) and math.isfinite(window[1]) and window[0] < window[1]), text


def test_a_query_naming_a_date_ranks_that_days_memories_first(sidecar):
    days = [datetime(2024, m, 3, 19, tzinfo=UTC).timestamp() for m in (1, 3, 5, 7, 9)]
    dishes = ["lentil soup", "mushroom risotto", "green curry", "fish tacos", "pumpkin gnocchi"]
    msgs = [
        {"user_id": "t", "content": f"For dinner I cooked {d} for the whole family.", "timestamp": ts}
        for d, ts in zip(dishes, days)
    ]
    assert sidecar.request({"type": "store", "messages": msgs})["type"] == "ok"
    for k, month in enumerate(["January", "March", "May", "July", "September"]):
        r = sidecar.request(
            {"type": "query", "user_id": "t", "text": f"What did I cook on {month} 3, 2024?", "limit": 3}
        )
        assert dishes[k] in r["messages"][0]["content"], (month, [m["content"] for m in r["messages"]])
        assert len(r["messages"]) == 3  # a hint, not a filter: other memories still follow
    # words around the time move it: what came before or after ranks first
    for text, dish in (
        ("What did I cook before February 2024?", dishes[0]),
        ("What did I cook after August 2024?", dishes[4]),
        ("What did I cook between February 1 and April 1, 2024?", dishes[1]),
    ):
        r = sidecar.request({"type": "query", "user_id": "t", "text": text, "limit": 3})
        assert dish in r["messages"][0]["content"], (text, [m["content"] for m in r["messages"]])
    # an explicit window is the host's: it filters, and the text's date is not applied on top
    r = sidecar.request(
        {
            "type": "query",
            "user_id": "t",
            "text": "What did I cook on March 3, 2024?",
            "since": int(days[3]) - 60,
            "limit": 5,
        }
    )
    assert [m["content"] for m in r["messages"]] and all(m["timestamp"] >= days[3] - 60 for m in r["messages"])
    # a date that no calendar has is no window, not an error (year 0 raised inside the query before)
    for text in ("What did I cook in Dec 0000?", "What did I cook in December 9999?"):
        r = sidecar.request({"type": "query", "user_id": "t", "text": text, "limit": 5})
        assert r["type"] == "results" and len(r["messages"]) == 5, r
        r = sidecar.request({"type": "graph_recall", "user_id": "t", "text": text})
        assert r["type"] == "graph_recall", r
