"""The time a query names, as a window of unix seconds (UTC): "on 13 October, 2023", "October 13,
2023", "in May 2023", "in 2022", "yesterday", "last week", "last month", "last year", "this year",
"3 days ago", "two weeks ago", days of one month ("August 11-15, 2023", "11 to 15 August 2023"), and an
absolute time read with the words just before it: "the week before 16 November 2023", "two days after 4
July 2023", "before 2020" / "after March 2023" / "since 2021" / "by July 10, 2022" (open-ended), "between
August 11 and August 15 2023", "from May to July 2023", "the beginning / middle / end / first half /
second week of November 2022", "early / mid / late 2023", "after 3 May 2023 and before 9 May 2023",
"since last year". Numeric dates are read whatever the language around them: ISO "2024-03-05" and
"2024/03/05", day first "05.03.2024" and "05-03-2024", "03/05/2024" only when one number is over 12
(else it could be either: no window), "2024年3月5日" / "2024년 3월 5일", a month "2024-03", "2024年3月",
"2024년 3월", a year "2024年" / "2024년". Pure: the text and the present in, a window or None out; no
text raises (a date no calendar has, "May 0000", names no window).

A window is a hint, not a filter: ranking puts memories inside it first (messages/ranking.py,
graph recall); a host that wants a hard limit sends `since`/`until`. A date is widened by a day on
either side (a conversation's date and its messages' times differ by the session's length), and a
month or a year without its number (a bare "in June") names no window: which June is a guess.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime, timedelta

DAY = 86_400.0
_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_M = (
    r"(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul"
    r"|aug|sept|sep|oct|nov|dec)\.?"
)
_YEAR_SEP = r"(?:,\s*|\s+)"  # "1 February, 2023", "December 1,2023", "May 2023"
_ORD = r"(?:st|nd|rd|th)?"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?{_M}{_YEAR_SEP}(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_M}\s+(\d{{1,2}}){_ORD}{_YEAR_SEP}(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b{_M}{_YEAR_SEP}(\d{{4}})\b", re.I)
# days of one month: "August 11-15, 2023", "August 11 and 15, 2023", "11 to 15 August 2023"
_TO_DAY = r"\s*(?:-|–|to|and|through|until|till)\s*"
_MONTH_DAYS_YEAR = re.compile(rf"\b{_M}\s+(\d{{1,2}}){_ORD}{_TO_DAY}(\d{{1,2}}){_ORD}{_YEAR_SEP}(\d{{4}})\b", re.I)
_DAYS_MONTH_YEAR = re.compile(
    rf"\b(\d{{1,2}}){_ORD}{_TO_DAY}(\d{{1,2}}){_ORD}\s+(?:of\s+)?{_M}{_YEAR_SEP}(\d{{4}})\b", re.I
)
# a bare year counts after a word that makes it a time ("in 2022", "early 2023"), not in "the 2023 trip"; after
# "by", "to", "and", "between", "year" only when no noun follows it ("by 2025 for the house", not "by 2000 steps",
# "to 2024 points", "the year 2000 problem")
_GLUE = r"and|or|to|until|till|through|for|in|on|at|when|with|i|we|you|he|she|they|it|but|so|if|because"
_YEAR = re.compile(
    r"\b(?:(?:in|of|during|from|for|since|before|after|until|till|early|mid|late)[\s-]+((?:19|20)\d\d)\b"
    rf"|(?:by|to|and|between|year)\s+((?:19|20)\d\d)\b(?!\s+(?!(?:{_GLUE})\b)[a-z]))",
    re.I,
)
_BARE_YEAR = re.compile(r"((?:19|20)\d\d)\b")  # the second year of a range: "from 2021 to 2023 in Paris"
# words just before an absolute time that move or narrow its window (matched on the text before it, lower case)
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "a few": 3,
    "several": 3,
}
_COUNT = "|".join([r"\d{1,4}", *sorted(_NUMBERS, key=len, reverse=True)])  # "a couple of" before "a"
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30.44, "year": 365.25}
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_SPAN_DAYS = {**_UNIT_DAYS, "weekend": 7, "fortnight": 14}  # a weekday ("the Sunday before"): 7
_SPAN_BEFORE_AFTER = re.compile(
    rf"(?:\b({_COUNT})\s+)?\b(day|weekend|week|fortnight|month|year|{'|'.join(_WEEKDAYS)})s?"
    r"\s+(before|after|prior to)$"
)
_OPEN_ENDED = re.compile(r"\b(before|prior to|after|since|until|till|by|as of|up to)$")
_TO = re.compile(r"\s*(?:(and|to|until|till|through)\s+|-\s*)", re.I)  # "<time> to <time>"; "and" only after "between"
# the text before a range's second time: from the last "between" / "from" ("work from home between 11 and")
_BETWEEN = re.compile(
    r"\b(?:between|from)\s+((?:(?!\b(?:between|from)\b).){1,40}?)\s+(?:and|to|until|till|through)"
    r"(?:\s+the)?$"
)
_CLOSE = re.compile(r"\s*,?\s*(?:and|but)\s+(before|until|till|by|prior to)\s", re.I)  # "after May 3 and before May 9"
_PARTS = {
    "beginning": (0, 1 / 3),
    "start": (0, 1 / 3),
    "early": (0, 1 / 3),
    "middle": (1 / 3, 2 / 3),
    "mid": (1 / 3, 2 / 3),
    "end": (2 / 3, 1),
    "late": (2 / 3, 1),
    "first half": (0, 0.5),
    "second half": (0.5, 1),
}
_PART = re.compile(
    r"(?:\b(?:the\s+)?(beginning|start|middle|end|first half|second half|(?:first|second|third|fourth|last)"
    r"\s+week)\s+of(?:\s+the\s+(?:month|year)(?:\s+of)?)?|\b(early|mid|late))[\s-]*$"
)
FAR_PAST, FAR_FUTURE = -2_208_988_800.0, 4_102_444_800.0  # 1900 and 2100: the open ends of "before" and "after"
# numeric dates, any language around them (a digit before or after is another number: "12024-03-05")
_ISO_DATE = re.compile(r"(?<![\d.\-/])((?:19|20)\d\d)([-/.])(\d{1,2})\2(\d{1,2})(?![\d.\-/]?\d)")
_DAY_FIRST = re.compile(r"(?<![\d.\-/])(\d{1,2})([-/.])(\d{1,2})\2((?:19|20)\d\d)(?![\d.\-/]?\d)")
_CJK_DATE = re.compile(r"((?:19|20)\d\d)\s*[年년]\s*(?:(\d{1,2})\s*[月월](?:\s*(\d{1,2})\s*[日일])?)?")
_ISO_MONTH = re.compile(r"(?<![\d.\-/])((?:19|20)\d\d)-(\d{1,2})(?![\d.\-/]?\d)")
_AGO = re.compile(rf"\b({_COUNT})\s+(day|week|month|year)s?\s+ago\b", re.I)
_RELATIVE = re.compile(r"\b(yesterday|today|last\s+(?:week|weekend|month|year)|this\s+(?:week|month|year))\b", re.I)


def _month(name: str) -> int:
    key = name.lower().rstrip(".")
    return next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(key[:3]))


def _utc(y: int, m: int, d: int = 1) -> float:
    return datetime(y, m, d, tzinfo=UTC).timestamp()


def _anchor(text: str) -> tuple[float, float, int, int, str] | None:
    """The absolute time the text names, unwidened: (start, end, where in the text it starts and ends, its
    kind: "day", "month" or "year"); None for none, or for a date that does not exist ("31 February",
    "May 0000")."""
    try:
        if (found := _numeric(text)) is not None:
            return found
        if (m := _MONTH_DAYS_YEAR.search(text) or _DAYS_MONTH_YEAR.search(text)) is not None:
            month_first = m.re is _MONTH_DAYS_YEAR
            month = _month(m.group(1 if month_first else 3))
            first, last = (int(m.group(2)), int(m.group(3))) if month_first else (int(m.group(1)), int(m.group(2)))
            year = int(m.group(4))
            if first < last:
                return _utc(year, month, first), _utc(year, month, last) + DAY, m.start(), m.end(), "day"
        if (m := _DAY_MONTH_YEAR.search(text)) is not None:
            start = _utc(int(m.group(3)), _month(m.group(2)), int(m.group(1)))
        elif (m := _MONTH_DAY_YEAR.search(text)) is not None:
            start = _utc(int(m.group(3)), _month(m.group(1)), int(m.group(2)))
        elif (m := _MONTH_YEAR.search(text)) is not None:
            month, year = _month(m.group(1)), int(m.group(2))
            return _utc(year, month), _utc(year + month // 12, month % 12 + 1), m.start(), m.end(), "month"
        elif (m := _YEAR.search(text)) is not None:
            g = 1 if m.group(1) else 2
            year = int(m.group(g))
            return _utc(year, 1), _utc(year + 1, 1), m.start(g), m.end(), "year"
        else:
            return None
    except (ValueError, OverflowError):
        return None
    return start, start + DAY, m.start(), m.end(), "day"


def _numeric(text: str) -> tuple[float, float, int, int, str] | None:
    """A date or month written in numbers (any language around it): the first one the text holds."""
    found = []
    if (m := _ISO_DATE.search(text)) is not None:
        found.append((m.start(), m, int(m.group(1)), int(m.group(3)), int(m.group(4))))
    if (m := _DAY_FIRST.search(text)) is not None:
        a, b = int(m.group(1)), int(m.group(3))
        if m.group(2) == "/" and a <= 12 and b <= 12 and a != b:
            pass  # 03/05/2024: the 3rd of May or March the 5th, as the reader's country writes it
        else:
            day, month = (b, a) if m.group(2) == "/" and a <= 12 < b else (a, b)
            found.append((m.start(), m, int(m.group(4)), month, day))
    if (m := _CJK_DATE.search(text)) is not None:
        found.append((m.start(), m, int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0)))
    if (m := _ISO_MONTH.search(text)) is not None:
        found.append((m.start(), m, int(m.group(1)), int(m.group(2)), 0))
    for _, m, year, month, day in sorted(found, key=lambda f: f[0]):
        try:
            if day:
                start = _utc(year, month, day)
                return start, start + DAY, m.start(), m.end(), "day"
            if month:
                return _utc(year, month), _utc(year + month // 12, month % 12 + 1), m.start(), m.end(), "month"
            return _utc(year, 1), _utc(year + 1, 1), m.start(), m.end(), "year"
        except (ValueError, OverflowError):
            continue  # no such day ("2024-02-31"): another date of the text, or none
    return None


def _range_start(first: str, start: float, end: float) -> tuple[float, float, int, int, str] | None:
    """The first time of "between <first> and <time>" / "from <first> to <time>", which may leave out what
    the second names: "between 11 and 15 August 2023", "between the 11th and 15th of August 2023", "between
    August 11 and August 15 2023", "between December 20 and January 5, 2024", "from 2021 to May 2023"."""
    named = datetime.fromtimestamp(start, UTC)
    if re.fullmatch(r"(?:19|20)\d\d", first):
        tries = [f"in {first}"]
    elif (day := re.fullmatch(rf"(?:the\s+)?(\d{{1,2}}){_ORD}", first)) is not None:
        tries = [f"{day.group(1)} {named:%B %Y}"]
    elif re.search(r"\b\d{4}\b", first):
        tries = [first]
    else:
        tries = [f"{first} {named.year}", f"{first} {named.year - 1}"]
    return next((a for a in map(_anchor, tries) if a is not None and a[0] < end), None)


def _range_end(text: str, stop: int, before: str, start: float) -> tuple[float, float, int, int, str] | None:
    """The second time of "<time> to <time>", "between <time> and <time>", "from 2021-2023", if the text
    goes on with one right after the first (ending at `stop`)."""
    m = _TO.match(text, stop)
    if m is None or ((m.group(1) or "").lower() == "and" and not before.endswith("between")):
        return None
    b = _anchor(text[stop:])
    if b is None or b[2] != m.end() - stop:
        y = _BARE_YEAR.match(text, m.end())
        b = (_utc(int(y.group(1)), 1), _utc(int(y.group(1)) + 1, 1), 0, 0, "year") if y is not None else None
    return b if b is not None and b[1] > start else None


def _absolute(text: str) -> tuple[float, float] | None:
    """The window of an absolute time, read with the words around it: "the week before", "two days after",
    bare "before" / "after" / "since" / "by", "between <time> and <time>", "<time> to <time>", "the
    beginning / middle / end / first half / second week of", "early / mid / late"."""
    found = _anchor(text)
    if found is None:
        return None
    start, end, at, stop, kind = found
    before = text[:at].rstrip().casefold()
    if (b := _range_end(text, stop, before, start)) is not None:  # "between May 3, 2023 and June 2, 2023"
        return _widen(start, b[1], kind, b[4])
    if (m := _BETWEEN.search(before)) is not None and (a := _range_start(m.group(1), start, end)) is not None:
        return _widen(a[0], end, kind, a[4])
    if kind != "day" and (m := _PART.search(before)) is not None:  # "the end of May 2023", "early 2023"
        start, end = _part(" ".join((m.group(1) or m.group(2)).split()), start, end)
        kind, before = "day", before[: m.start()].rstrip()  # a part gets a day's slack; "since the end of ..."
    if (m := _SPAN_BEFORE_AFTER.search(before)) is not None:
        word = " ".join((m.group(1) or "a").split())
        days = (int(word) if word.isdigit() else _NUMBERS[word]) * _SPAN_DAYS.get(m.group(2), 7)
        if m.group(3) == "after":
            return end - DAY, end + (days + 1) * DAY
        return start - (days + 1) * DAY, start + DAY  # the day itself too: "last Friday", said that day
    window = _open_ended(before, start, end)
    if window is not None and window[1] >= FAR_FUTURE:
        return _closed(text, stop, window)
    return window or _widen(start, end, kind)


def _closed(text: str, stop: int, window: tuple[float, float]) -> tuple[float, float]:
    """The window of an open "after / since <time>" (ending at `stop`), closed by what follows it if that is
    "and before / until / by <time>": "after 3 May 2023 and before 9 May 2023"."""
    since = window[0]
    if (m := _CLOSE.match(text, stop)) is not None:
        word = m.group(1).casefold()
        b = _anchor(text[m.start(1) :])  # from the word on: "before 2024" is a year only with its word
        if b is not None and text[m.start(1) : m.start(1) + b[2]].strip().casefold() in ("", word) and b[0] >= since:
            return since, (b[0] if word in ("before", "prior to") else b[1]) + DAY
    return window


def _open_ended(before: str, start: float, end: float) -> tuple[float, float] | None:
    """The window of a time after "before" / "prior to" / "by" / "until" / "as of" (everything up to it) or
    "after" / "since" (everything from it on), the text before it lower case; None for none of them."""
    if (m := _OPEN_ENDED.search(before)) is None:
        return None
    word = m.group(1)
    if word in ("after", "since"):
        return (end if word == "after" else start) - DAY, max(FAR_FUTURE, end + DAY)
    return min(FAR_PAST, start - DAY), (start if word in ("before", "prior to") else end) + DAY


def _part(part: str, start: float, end: float) -> tuple[float, float]:
    """A part of a month or a year: "the second week of", "the last week of", "the end of", "early"."""
    if part.endswith("week"):
        nth = part.split()[0]
        first = end - 7 * DAY if nth == "last" else start + 7 * DAY * ["first", "second", "third", "fourth"].index(nth)
        return first, first + 7 * DAY
    lo, hi = _PARTS[part]
    return start + lo * (end - start), start + hi * (end - start)


def _widen(start: float, end: float, *kinds: str) -> tuple[float, float]:
    """A window with a day at either end ("kinds" of its ends) is widened by a day on either side (a
    conversation's date and its messages' times differ by the session's length); a month or a year is its
    own slack."""
    return (start - DAY, end + DAY) if "day" in kinds else (start, end)


def _relative(text: str, now: float) -> tuple[float, float] | None:
    """The window of a time relative to now, read with an open-ended word before it ("since last year")."""
    found = _relative_time(text, now)
    if found is None:
        return None
    start, end, at = found
    return _open_ended(text[:at].rstrip().casefold(), start, end) or (start, end)


def _relative_time(text: str, now: float) -> tuple[float, float, int] | None:
    today = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    m = _AGO.search(text)
    if m:
        word = " ".join(m.group(1).lower().split())
        n = int(word) if word.isdigit() else _NUMBERS[word]
        days = n * _UNIT_DAYS[m.group(2).lower()]
        centre = today.timestamp() - days * DAY
        spread = max(1.0, days / 4) * DAY  # "3 days ago" means about then; "two years ago", roughly
        return centre - spread, centre + spread + DAY, m.start()
    m = _RELATIVE.search(text)
    if m is None:
        return None
    word = " ".join(m.group(1).lower().split())
    if word in ("today", "yesterday"):
        start = today - timedelta(days=1 if word == "yesterday" else 0)
        return start.timestamp(), start.timestamp() + DAY, m.start()
    week = today - timedelta(days=today.weekday())
    month = today.replace(day=1)
    year = today.replace(month=1, day=1)
    spans = {
        "this week": (week, today + timedelta(days=1)),
        "last week": (week - timedelta(days=7), week),
        "last weekend": (week - timedelta(days=2), week),
        "this month": (month, today + timedelta(days=1)),
        "last month": ((month - timedelta(days=1)).replace(day=1), month),
        "this year": (year, today + timedelta(days=1)),
        "last year": (year.replace(year=year.year - 1), year),
    }
    start, end = spans[word]
    return start.timestamp(), end.timestamp(), m.start()


def named_window(text: str, now: float) -> tuple[float, float] | None:
    """(since, until) of the time the text names, or None. An absolute date wins over a relative one."""
    head = text[:2_000]  # a question names its time early; a pasted document is read no further
    if not head.isascii():
        head = unicodedata.normalize("NFKC", head)  # full-width digits ("２０２４年３月５日") read as digits
    return _absolute(head) or _relative(head, now)
