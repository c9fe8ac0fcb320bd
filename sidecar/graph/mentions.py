"""The fast entity tier: rules and patterns that find mentions in one message in well under a
millisecond, with no model. Pure: no I/O, no state beyond the caller's gazetteer.

What it finds, in this order (an earlier, longer match wins an overlap):
- the user's known entities and their aliases (the gazetteer), in any case;
- platform mentions (`@name`, Discord's `<@123>`), e-mail addresses and URLs;
- time expressions: today/yesterday/tomorrow, weekdays, months with or without a day, years,
  "last/next/this <unit>", "<n> <units> ago", numeric dates and clock times;
- amounts of money;
- capitalised spans (one or more capitalised words, joined by "of"/"the"/"de"/"&") that do not merely
  open a sentence, typed by their context: "in/at/from/to X" -> place, a company or school word in
  the span -> organisation, a holiday -> event, a title-like span after "read/watch/play" -> thing,
  otherwise person.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

TYPES = ("person", "place", "organisation", "thing", "event", "date", "other")


@dataclass(frozen=True)
class Mention:
    text: str
    start: int
    end: int
    type: str


_WEEKDAYS = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|(?:mon|tue|wed|thu|fri|sat|sun)\b\.?"
_MONTHS = (r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
           r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?")
_UNIT = r"(?:second|minute|hour|day|night|week|weekend|month|year|season|summer|winter|spring|autumn|fall|semester)s?"
_NUM = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a\s+few|a\s+couple(?:\s+of)?|several)"
_DATE = re.compile(
    r"\b(?:"
    rf"(?:about\s+|around\s+)?{_NUM}\s+{_UNIT}\s+ago"
    rf"|(?:last|next|this|this\s+past|the\s+coming|later\s+this|earlier\s+this)\s+(?:{_UNIT}|{_WEEKDAYS}|{_MONTHS})"
    rf"|the\s+(?:other|next)\s+day|the\s+\d{{4}}s"
    r"|yesterday|today|tonight|tomorrow|last\s+night"
    rf"|(?:{_MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})(?:,?\s+\d{{4}})?"
    rf"|{_WEEKDAYS}"
    r"|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?"
    r"|\d{1,2}(?::\d{2})?\s*(?:am|pm)|\d{1,2}:\d{2}"
    r"|(?:19|20)\d{2}"
    rf"|(?:{_MONTHS})"
    rf"|{_NUM}\s+{_UNIT}"
    r")\b", re.IGNORECASE)
# words that look like months/dates but rarely are in chat
_DATE_STOP = {"may", "march", "sun", "mar", "jan", "sat", "wed", "a day", "an hour"}
_MENTION = re.compile(r"<@!?\d+>|(?<![\w.])@[A-Za-z0-9_][A-Za-z0-9_.]{1,31}")
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_URL = re.compile(r"\bhttps?://[^\s<>\"']+|\bwww\.[^\s<>\"']+", re.IGNORECASE)
_AMOUNT = re.compile(r"(?:[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?[kKmM]\b)?|\b\d[\d,]*(?:\.\d+)?\s?(?:dollars|euros|pounds|"
                     r"bucks|usd|eur|gbp)\b)", re.IGNORECASE)
_SENTENCE_START = re.compile(r"(?:^|[.!?…:]\s+|\n\s*|[\"“(]\s*)$")
# capitalised words that are not names on their own
_NOT_NAMES = {
    "i", "i'm", "i've", "i'll", "i'd", "im", "ok", "okay", "yes", "yeah", "no", "nope", "hey", "hi", "hello", "thanks",
    "thank", "wow", "oh", "omg", "lol", "haha", "the", "a", "an", "my", "we", "you", "he", "she", "they", "it", "this",
    "that", "these", "those", "what", "when", "where", "who", "why", "how", "and", "but", "or", "so", "if", "also",
    "just", "sure", "great", "cool", "nice", "awesome", "love", "congrats", "sounds", "yep", "well", "anyway", "btw",
    "dear", "mom", "dad", "mum", "god", "bye", "man", "people", "time", "art", "nature", "life", "woah", "whoa", "gotcha", "hah", "ugh", "mmm", "woohoo", "yo",
    "jealous", "thoughts", "books", "rpg", "lgbtq", "lgbt", "lgbtq+", "tv", "dm", "pm", "am", "ai", "ps", "ps5", "usa",
}
_PLACE_CUES = re.compile(r"(?:\b(?:in|at|from|to|near|visit(?:ed|ing)?|around|across|into)\s+(?:the\s+)?)$",
                         re.IGNORECASE)
_ORG_WORDS = re.compile(r"\b(?:Inc|Corp|Corporation|Ltd|LLC|GmbH|Company|Co|University|College|School|Institute|"
                        r"Academy|Bank|Group|Foundation|Association|Club|Team|Agency|Hospital|Center|Centre|"
                        r"Labs?|Studios?|Society|Activists|Council|Church)\b")
_PLACE_WORDS = re.compile(r"\b(?:City|Street|St|Avenue|Ave|Road|Park|Lake|Mountains?|River|Beach|Island|County|"
                          r"Tower|Bridge|Square|Cliffs|Valley|Bay|Coast|Falls)\b")
_EVENTS = re.compile(r"\b(?:Christmas|Thanksgiving|Easter|Halloween|Hanukkah|Diwali|Ramadan|Eid|New Year(?:'s)?(?:"
                     r" Eve)?|Pride|Festival|Conference|Parade|Marathon|Olympics|Wedding|Birthday)\b")
_THING_CUES = re.compile(r"(?:\b(?:read(?:ing)?|watch(?:ed|ing)?|play(?:ed|ing)?|listen(?:ed|ing)?\s+to|bought|"
                         r"using|use[ds]?|on)\s+)$", re.IGNORECASE)


def _fold(text: str) -> str:
    if text.isascii():  # nothing to decompose, nothing combining
        return text.casefold()
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))


_GZ_WORD = re.compile(r"\w+(?:['’.&-]\w+)*")
_SPACES = re.compile(r"\s+")


def _gazetteer_hits(text: str, gazetteer: Mapping[str, str], max_words: int) -> list[Mention]:
    """Known names in `text`: the longest run of up to `max_words` words whose folded form is a key
    (a dictionary look-up per run: no pattern to compile, whatever the number of names)."""
    folded = _fold(text)
    if len(folded) != len(text):  # offsets would not line up (a character that folds to several)
        return []
    words = [(m.start(), m.end()) for m in _GZ_WORD.finditer(folded)]
    # A run can only be a key if its first word is a key's first word (the same pattern cuts both). On a long
    # text the set of them saves most look-ups (about 400 words x max_words); on a short one it costs more.
    firsts = None
    if len(words) * max_words > 4 * len(gazetteer):
        firsts = {m.group(0) for key in gazetteer if (m := _GZ_WORD.match(key))}
    hits, i = [], 0
    while i < len(words):
        if firsts is not None and folded[words[i][0]:words[i][1]] not in firsts:
            i += 1
            continue
        for n in range(min(max_words, len(words) - i), 0, -1):
            start, end = words[i][0], words[i + n - 1][1]
            kind = gazetteer.get(_SPACES.sub(" ", folded[start:end]) if n > 1 else folded[start:end])
            if kind is not None:
                hits.append(Mention(text[start:end], start, end, kind))
                i += n
                break
        else:
            i += 1
    return hits


def _type_of_caps(text: str, span: str, start: int) -> str:
    before = text[max(0, start - 24):start]
    if _EVENTS.search(span):
        return "event"
    if _ORG_WORDS.search(span):
        return "organisation"
    if _PLACE_WORDS.search(span) or _PLACE_CUES.search(before):
        return "place"
    if _THING_CUES.search(before) and (len(span.split()) > 1 or span.isupper()):
        return "thing"
    return "person"


# Ordinary words that open sentences in chat: capitalised there, never names on their own.
COMMON = frozenset("""
about after again all almost already also always am an and another any anyway anything are around as at
back be because been before being best better both but by can can't cause could did didn't do does doesn't
doing don't done during each even ever every everyone everything exactly feel feeling feels finally first
for from funny get gets getting glad go goes going gonna good got gotta guess had has have having he
her here hers him his honestly hope hopefully how however i if in indeed instead is isn't it it's its
just keep kind know last later least let let's like likely listen look looking looks lots made make
makes making many maybe me mine more most much must my myself never new next nice nope not nothing
now of off often oh ok okay on once one only or other our out over perhaps please plus pretty probably
quite rather really right said same saw say says see seems seriously she should since so some someone
something sometimes soon sorry still such sure tell than thank thanks that that's the their them then
there there's these they they're thing things think this those though thought through to today together
too totally true try trying two um under until up us usually very wait want wanted wanting was wasn't
way we we're well went were what what's whatever when where whether which while who whoa why will wish
with without wonderful would wow yay yeah yep yes yet you you're your yours yup absolutely actually
agreed amazing awesome aww beautiful cheers congrats congratulations cool definitely enjoy exciting
fantastic great haha hahaha happy hey hi hello hmm lol love lovely luckily nah neat no omg ooh oops
sadly speaking sounds super thankfully unfortunately welcome wonderful yeah yikes btw imo tbh anyways
went came started made took gave found bought tried used loved liked felt watched read played visited
""".split())
_JOINERS = {"of", "the", "de", "da", "van", "von", "&"}
_WORD = re.compile(r"[A-Za-z][\w'’.-]*[\w]|[A-Za-z]")


def _ordinary(word: str) -> bool:
    """An ordinary word (or a contraction of one), never a name on its own."""
    folded = word.casefold().replace("’", "'")
    base = folded.split("'")[0]
    return folded in _NOT_NAMES or folded in COMMON or base in COMMON or base in _NOT_NAMES


def _may_open(text: str, word: str, start: int, end: int) -> bool:
    """Whether a capitalised word may start a mention. Mid-sentence, any word but an interjection may
    (an ordinary word only as the first of a longer name: "in New York", "read Little Women"). At a
    sentence start capitals say nothing: the word must be addressed ("Caroline, ...", "Mel!") or be
    the first of two capitalised words, neither ordinary ("Alice Smith went")."""
    folded = word.casefold().replace("’", "'")
    if folded in _NOT_NAMES or folded.split("'")[0] in _NOT_NAMES:
        return False
    after = text[end:end + 2]
    nxt = _WORD.match(text, end + 1) if after[:1] == " " else None
    followed = bool(nxt and nxt.group(0)[0].isupper() and not _ordinary(nxt.group(0)))
    opener = bool(_SENTENCE_START.search(text[:start]))
    if _ordinary(word):
        return followed and not opener
    if not opener:
        return True
    addressed = after[:1] in {",", "!", ":"} or (after[:1] == "?" and len(text) - end <= 2)
    return addressed or (followed and not re.search(r"(?:ed|ing|ly)$", folded))


def _caps(text: str, taken: bytearray) -> list[Mention]:
    """Runs of capitalised words outside the characters `taken` marks, minus ordinary sentence openers."""
    out: list[Mention] = []
    run: list[re.Match[str]] = []

    def close() -> None:
        while run and run[-1].group(0).casefold() in _JOINERS:
            run.pop()
        if run:
            start, end = run[0].start(), run[-1].end()
            if text[end - 2:end] in ("'s", "’s"):
                end -= 2  # "Aragorn's" -> "Aragorn"
            span = text[start:end]
            if span.casefold() not in _NOT_NAMES and len(span) > 1:
                out.append(Mention(span, start, end, _type_of_caps(text, span, start)))
        run.clear()

    for m in _WORD.finditer(text):
        word, start = m.group(0), m.start()
        free = taken.find(1, start, m.end()) < 0
        capital = word[0].isupper() and free
        if run and not capital and word.casefold() in _JOINERS and free and start - run[-1].end() <= 1:
            run.append(m)  # "Cliffs of Moher"
            continue
        if not capital or (run and start - run[-1].end() > 1):
            close()
        if not capital:
            continue
        if not run and not _may_open(text, word, start, m.end()):
            continue
        run.append(m)
    close()
    return out


def find_mentions(text: str, gazetteer: Mapping[str, str] | None = None, max_words: int | None = None) -> list[Mention]:
    """Mentions in `text`, in order, without overlaps. `gazetteer`: folded name or alias -> entity type
    (the user's known entities; a mapping: `get`, `len` and its keys iterated), its longest key in words
    as `max_words`."""
    found: list[Mention] = []
    if gazetteer:
        if max_words is None:
            max_words = max(len(k.split()) for k in gazetteer)
        found += _gazetteer_hits(text, gazetteer, max_words)
    for rx, kind in ((_MENTION, "person"), (_EMAIL, "other"), (_URL, "other"), (_AMOUNT, "other")):
        found += [Mention(m.group(0), m.start(), m.end(), kind) for m in rx.finditer(text)]
    for m in _DATE.finditer(text):
        if m.group(0).casefold() not in _DATE_STOP:
            found.append(Mention(m.group(0), m.start(), m.end(), "date"))
    # earlier tiers first: keep a mention unless it overlaps one already kept
    kept: list[Mention] = []
    taken = bytearray(len(text))  # 1: a character of a kept mention (a look-up per span, whatever their number)
    for mention in found:
        if taken.find(1, mention.start, mention.end) < 0:
            kept.append(mention)
            taken[mention.start:mention.end] = b"\x01" * (mention.end - mention.start)
    kept += _caps(text, taken)
    return sorted(kept, key=lambda x: x.start)
