"""The time a query names, as a window of unix seconds (UTC): "on 13 October, 2023", "October 13,
2023", "in May 2023", "in 2022", "yesterday", "last week", "last month", "last year", "this year",
"3 days ago", "two weeks ago". Pure: the text and the present in, a window or None out.

A window is a hint, not a filter: ranking puts memories inside it first (messages/ranking.py,
graph recall); a host that wants a hard limit sends `since`/`until`. A date is widened by a day on
either side (a conversation's date and its messages' times differ by the session's length), and a
month or a year without its number (a bare "in June") names no window: which June is a guess.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

DAY = 86_400.0
_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"]
_M = r"(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul" \
     r"|aug|sept|sep|oct|nov|dec)\.?"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_M},?\s+(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_M}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b{_M},?\s+(\d{{4}})\b", re.I)
_YEAR = re.compile(r"\b(?:in|of|during|from|for)\s+((?:19|20)\d\d)\b", re.I)
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
            "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}
_AGO = re.compile(r"\b(\d{1,3}|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
                  r"(day|week|month|year)s?\s+ago\b", re.I)
_RELATIVE = re.compile(r"\b(yesterday|today|last\s+(?:week|weekend|month|year)|this\s+(?:week|month|year))\b", re.I)
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30.44, "year": 365.25}


def _month(name: str) -> int:
    key = name.lower().rstrip(".")
    return next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(key[:3]))


def _utc(y: int, m: int, d: int = 1) -> float:
    return datetime(y, m, d, tzinfo=timezone.utc).timestamp()


def _absolute(text: str) -> tuple[float, float] | None:
    m = _DAY_MONTH_YEAR.search(text)
    if m:
        day, month, year = int(m.group(1)), _month(m.group(2)), int(m.group(3))
    elif (m := _MONTH_DAY_YEAR.search(text)) is not None:
        month, day, year = _month(m.group(1)), int(m.group(2)), int(m.group(3))
    elif (m := _MONTH_YEAR.search(text)) is not None:
        month, year = _month(m.group(1)), int(m.group(2))
        return _utc(year, month), _utc(year + month // 12, month % 12 + 1)
    elif (m := _YEAR.search(text)) is not None:
        year = int(m.group(1))
        return _utc(year, 1), _utc(year + 1, 1)
    else:
        return None
    try:
        start = _utc(year, month, day)
    except ValueError:  # "31 February"
        return None
    return start - DAY, start + 2 * DAY


def _relative(text: str, now: float) -> tuple[float, float] | None:
    today = datetime.fromtimestamp(now, timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    m = _AGO.search(text)
    if m:
        word = " ".join(m.group(1).lower().split())
        n = int(word) if word.isdigit() else _NUMBERS[word]
        days = n * _UNIT_DAYS[m.group(2).lower()]
        centre = today.timestamp() - days * DAY
        spread = max(1.0, days / 4) * DAY  # "3 days ago" means about then; "two years ago", roughly
        return centre - spread, centre + spread + DAY
    m = _RELATIVE.search(text)
    if m is None:
        return None
    word = " ".join(m.group(1).lower().split())
    if word in ("today", "yesterday"):
        start = today - timedelta(days=1 if word == "yesterday" else 0)
        return start.timestamp(), start.timestamp() + DAY
    week = today - timedelta(days=today.weekday())
    month = today.replace(day=1)
    year = today.replace(month=1, day=1)
    spans = {
        "this week": (week, today + timedelta(days=1)), "last week": (week - timedelta(days=7), week),
        "last weekend": (week - timedelta(days=2), week),
        "this month": (month, today + timedelta(days=1)),
        "last month": ((month - timedelta(days=1)).replace(day=1), month),
        "this year": (year, today + timedelta(days=1)), "last year": (year.replace(year=year.year - 1), year),
    }
    start, end = spans[word]
    return start.timestamp(), end.timestamp()


def named_window(text: str, now: float) -> tuple[float, float] | None:
    """(since, until) of the time the text names, or None. An absolute date wins over a relative one."""
    head = text[:2_000]  # a question names its time early; a pasted document is read no further
    return _absolute(head) or _relative(head, now)
