"""The fast entity tier: rules and patterns that find mentions in one message in well under a
millisecond, with no model. Pure: no I/O, no state beyond the caller's gazetteer.

What it finds, in this order (an earlier, longer match wins an overlap):
- the user's known entities and their aliases (the gazetteer) and the usernames it has seen, in any case
  and any script: in scripts written without spaces (Chinese, Japanese, Thai, ...) and in Korean, whose
  particles glue to a name, a known name is found inside a run of text; a known first name followed by a
  capitalised word takes it as the surname ("Bob Miller", not "Bob" and "Miller"); a known name that is
  also an ordinary word ("will", "may", "rose") counts only when written with a capital, and not when it
  opens a sentence as a verb before "you", "I", "we", "the", ... ("Will you remember?", "May I ask");
- platform mentions (`@name` in any script, Discord's `<@123>`), e-mail addresses and URLs;
- time expressions: today/yesterday/tomorrow, weekdays, months with or without a day, years,
  "last/next/this <unit>", "<n> <units> ago", numeric dates and clock times;
- amounts of money;
- titles in quotes ("Little Women", "The Name of the Wind") -> thing;
- capitalised spans (one or more capitalised words, joined by "of"/"the"/"de"/"&") that do not merely
  open a sentence, in scripts that have case only (a Chinese or Hindi name is never guessed), typed by
  their context: a month or weekday -> date (never a place); "work at/for", "joined", "quit", "study
  at" X, or a company or school word in the span -> organisation; a holiday -> event; a nationality
  or language -> other; a named animal ("my dog Rex", "Oscar, my guinea pig") -> other; "in/at/from/
  to X", a venue ("at Luigi's"), "X trip" -> place; a title-like span ("Game of Thrones") or one after
  "read/watch/play" -> thing; otherwise person.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .records import fold_chars

TYPES = ("person", "place", "organisation", "thing", "event", "date", "other")

# Letters of every script with their combining marks (Python's \w leaves out the vowel signs of Devanagari and
# its kin, and combining accents), for words and @mentions in any script
WORD_CHARS = (
    r"\w\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
    r"\u0900-\u0963\u0966-\u0dff\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff\u200c\u200d"
    r"\u3099\u309a"
)
# Scripts written without spaces between words (Thai, Lao, Myanmar, Khmer, Chinese, Japanese), and Korean, whose
# particles glue to the word before them: a known name is looked for inside their runs
SPACELESS = (
    r"\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff\u1100-\u11ff\u3040-\u30ff\u3130-\u318f"
    r"\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
)
# given names that are also ordinary words: a known one counts only when written with a capital
WORD_NAMES = frozenset(
    """will may rose grace hope joy faith mark bill pat sue rich frank jack dawn summer autumn iris
lily ruby amber jade olive ivy daisy violet holly cliff drew gene rob chase hunter miles max art ray sky june april
august sunny buck don guy sandy rusty angel star crystal penny ginger pepper honey cookie buddy lucky bear
""".split()
)


@dataclass(frozen=True)
class Mention:
    text: str
    start: int
    end: int
    type: str


_WEEKDAYS = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|(?:mon|tue|wed|thu|fri|sat|sun)\b\.?"
_MONTHS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_UNIT = r"(?:second|minute|hour|day|night|week|weekend|month|year|season|summer|winter|spring|autumn|fall|semester)s?"
_NUM = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a\s+few|a\s+couple(?:\s+of)?|several)"
)
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
    r")\b",
    re.IGNORECASE,
)
MONTH_WORDS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
WEEKDAY_WORDS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun".split()
)
# words that look like months/dates but rarely are in chat
_DATE_STOP = {"may", "march", "sun", "mar", "jan", "sat", "wed", "a day", "an hour"}
# month names that are also given names: a person's unless time words are around them ("in May", "May 3")
_NAME_MONTHS = {"may", "june", "april", "august"}
_TIME_BEFORE = re.compile(
    r"\b(?:in|on|since|until|till|by|from|to|through|last|next|this|early|mid|late|of|during|"
    r"before|after|every|each|around|end\s+of|beginning\s+of|start\s+of)\s+$",
    re.IGNORECASE,
)
_TIME_AFTER = re.compile(r"\s*(?:\d{1,2}(?:st|nd|rd|th)?\b|\d{4}\b|-|–)")
_MENTION = re.compile(rf"<@!?\d+>|(?<![\w.])@[{WORD_CHARS}][{WORD_CHARS}.]{{0,31}}[{WORD_CHARS}]")
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_URL = re.compile(r"\bhttps?://[^\s<>\"']+|\bwww\.[^\s<>\"']+", re.IGNORECASE)
_AMOUNT = re.compile(
    r"(?:[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?[kKmM]\b)?|\b\d[\d,]*(?:\.\d+)?\s?(?:dollars|euros|pounds|"
    r"bucks|usd|eur|gbp)\b)",
    re.IGNORECASE,
)


def _opens_sentence(text: str, start: int) -> bool:
    """Whether a word at `start` opens a sentence: at the text's start, after . ! ? … : and a space, after a
    line break, or after an opening quote or bracket. Looks back only over the spaces before it: a pattern
    searched in all the text before each capitalised word was quadratic (", Rex" x 6,000: 4.2 s)."""
    j = start
    while j > 0 and text[j - 1].isspace():
        j -= 1
    spaces = text[j:start]
    if "\n" in spaces or start == 0:
        return True
    if j == 0:
        return False
    before = text[j - 1]
    return (bool(spaces) and before in ".!?…:") or before in '"“('


# capitalised words that are not names on their own
_NOT_NAMES = {
    "i",
    "i'm",
    "i've",
    "i'll",
    "i'd",
    "im",
    "ok",
    "okay",
    "yes",
    "yeah",
    "no",
    "nope",
    "hey",
    "hi",
    "hello",
    "thanks",
    "thank",
    "wow",
    "oh",
    "omg",
    "lol",
    "haha",
    "the",
    "a",
    "an",
    "my",
    "we",
    "you",
    "he",
    "she",
    "they",
    "it",
    "this",
    "that",
    "these",
    "those",
    "what",
    "when",
    "where",
    "who",
    "why",
    "how",
    "and",
    "but",
    "or",
    "so",
    "if",
    "also",
    "just",
    "sure",
    "great",
    "cool",
    "nice",
    "awesome",
    "love",
    "congrats",
    "sounds",
    "yep",
    "well",
    "anyway",
    "btw",
    "dear",
    "mom",
    "dad",
    "mum",
    "god",
    "bye",
    "man",
    "people",
    "time",
    "art",
    "nature",
    "life",
    "woah",
    "whoa",
    "gotcha",
    "hah",
    "ugh",
    "mmm",
    "woohoo",
    "yo",
    "jealous",
    "thoughts",
    "books",
    "rpg",
    "lgbtq",
    "lgbt",
    "lgbtq+",
    "tv",
    "dm",
    "pm",
    "am",
    "ai",
    "ps",
    "ps5",
    "usa",
}
_PLACE_CUES = re.compile(
    r"(?:\b(?:in|at|from|to|near|visit(?:ed|ing)?|around|across|into)\s+(?:the\s+)?)$", re.IGNORECASE
)
_ORG_WORDS = re.compile(
    r"\b(?:Inc|Corp|Corporation|Ltd|LLC|GmbH|Company|Co|University|College|School|Institute|"
    r"Academy|Bank|Group|Foundation|Association|Club|Team|Agency|Hospital|Center|Centre|"
    r"Labs?|Studios?|Society|Activists|Council|Church)\b"
)
_PLACE_WORDS = re.compile(
    r"\b(?:City|Street|St|Avenue|Ave|Road|Park|Lake|Mountains?|River|Beach|Island|County|"
    r"Tower|Bridge|Square|Cliffs|Valley|Bay|Coast|Falls)\b"
)
_EVENTS = re.compile(
    r"\b(?:Christmas|Thanksgiving|Easter|Halloween|Hanukkah|Diwali|Ramadan|Eid|New Year(?:'s)?(?:"
    r" Eve)?|Pride|Festival|Conference|Parade|Marathon|Olympics|Wedding|Birthday)\b"
)
_ORG_CUES = re.compile(
    r"(?:\b(?:work(?:s|ed|ing)?|job|jobs|intern(?:ship|ing)?|employed|hired|position|role|"
    r"career|shift)\s+(?:\w+\s+){0,2}?(?:at|for|with|by)\s+(?:the\s+)?|\b(?:joined|joining|join|"
    r"quit|quitting|resigned\s+from|retired\s+from|laid\s+off\s+(?:from|by)|fired\s+from|"
    r"stud(?:y|ies|ying|ied)\s+(?:\w+\s+){0,2}?at|student\s+at|enrolled\s+(?:at|in)|"
    r"graduated\s+from|degree\s+(?:at|from))\s+(?:the\s+)?)$",
    re.IGNORECASE,
)
# a nationality or language is never a person
NATIONALITIES = frozenset(
    """
english french german spanish italian portuguese dutch swedish norwegian danish finnish polish russian ukrainian
greek turkish arabic hebrew persian farsi hindi urdu bengali punjabi tamil telugu chinese mandarin cantonese
japanese korean thai vietnamese indonesian malay filipino tagalog swahili irish scottish welsh british american
canadian mexican brazilian argentinian argentine australian indian african european asian latino latina hispanic
nigerian kenyan egyptian moroccan israeli iranian pakistani iraqi syrian lebanese czech hungarian romanian
bulgarian serbian croatian austrian swiss belgian icelandic jamaican cuban colombian peruvian chilean venezuelan
ethiopian ghanaian turkish scandinavian nordic mediterranean caribbean midwestern southern northern
""".split()
)
_PETS = (
    r"(?:dog|puppy|pup|doggo|cat|kitten|kitty|pet|parrot|bird|hamster|rabbit|bunny|horse|pony|turtle|tortoise|"
    r"fish|goldfish|snake|lizard|gecko|ferret|guinea\s+pig|budgie|hedgehog|rat|mouse)s?"
)
_PET_BEFORE = re.compile(
    rf"\b{_PETS}\s*,?\s+(?:(?:is|was)\s+)?(?:(?:called|named)\s+)?$|"
    rf"\bnamed?\s+(?:him|her|it)\s+$",
    re.IGNORECASE,
)
_PET_AFTER = re.compile(
    rf"\s*,\s*(?:my|our|the|his|her|their)\s+(?:\w+\s+)?{_PETS}\b|\s+the\s+{_PETS}\b", re.IGNORECASE
)
_PET_NAME_IS = re.compile(r"\b(?:(?:his|her|its|their)\s+name(?:'s|’s|\s+is)|named|called)\s+$", re.IGNORECASE)
_PET_NEAR = re.compile(rf"\b{_PETS}\b", re.IGNORECASE)
_PLACE_AFTER = re.compile(r"\s+(?:trip|vacation|holiday|flight|apartment|office)\b", re.IGNORECASE)
_PLACE_BEFORE = re.compile(
    r"(?:\b(?:country|city|town|state|province|island|village|hometown)\s*,\s*|"
    r"\b(?:king|queen|capital|city|streets|people|kingdom|republic|mayor)\s+of\s+)$",
    re.IGNORECASE,
)
_MEDIA_AFTER = re.compile(
    r"\s+(?:universe|franchise|series|saga|trilogy|books|novels|movies|films|fandom|merch|"
    r"cosplay|memorabilia|characters|episodes?|seasons?|sequel|prequel|spin-?off|fanfic(?:tion)?|"
    r"soundtrack|themed)\b",
    re.IGNORECASE,
)
_THING_CUES = re.compile(
    r"(?:\b(?:read(?:ing)?|watch(?:ed|ing)?|play(?:ed|ing)?|listen(?:ed|ing)?\s+to|bought|"
    r"using|use[ds]?|on)\s+)$",
    re.IGNORECASE,
)


_fold = fold_chars  # the gazetteer's keys are folded the same way (graph/model.py)


_GZ_WORD = re.compile(rf"[{WORD_CHARS}]+(?:['’.&-][{WORD_CHARS}]+)*")
_SPACELESS_RUN = re.compile(f"[{SPACELESS}]+")
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
        if firsts is not None and folded[words[i][0] : words[i][1]] not in firsts:
            i += 1
            continue
        for n in range(min(max_words, len(words) - i), 0, -1):
            start, end = words[i][0], words[i + n - 1][1]
            key = _SPACES.sub(" ", folded[start:end]) if n > 1 else folded[start:end]
            kind = gazetteer.get(key)
            if kind is not None and (n > 1 or not _ordinary_key(key) or _named_as_word(text, start, end)):
                hits.append(Mention(text[start:end], start, end, kind))
                i += n
                break
        else:
            i += 1
    lengths = getattr(gazetteer, "spaceless_lengths", None)
    if lengths is None and _SPACELESS_RUN.search(folded):  # a plain mapping (tests, the bench): its keys
        lengths = {len(k) for k in gazetteer if len(k) > 1 and _SPACELESS_RUN.fullmatch(k)}
    if lengths:
        hits += _spaceless_hits(
            text, folded, gazetteer, sorted(lengths, reverse=True), [(h.start, h.end) for h in hits]
        )
    return hits


def _spaceless_hits(
    text: str, folded: str, gazetteer: Mapping[str, str], lengths: list[int], taken: list[tuple[int, int]]
) -> list[Mention]:
    """Known names inside runs of a script written without spaces ("王伟" in "我和王伟去了北京"), or glued to a
    Korean particle ("민수가"): at each position the longest key that starts there (a look-up per length)."""
    hits = []
    mask = bytearray(len(folded))  # 1: a character of a hit already found (a look-up per span, whatever their number)
    for a, b in taken:
        mask[a:b] = b"\x01" * (b - a)
    for run in _SPACELESS_RUN.finditer(folded):
        if mask.find(0, run.start(), run.end()) < 0:
            continue  # wholly inside a hit
        i, end = run.start(), run.end()
        while i < end:
            for n in lengths:
                if i + n <= end and (kind := gazetteer.get(folded[i : i + n])) is not None:
                    hits.append(Mention(text[i : i + n], i, i + n, kind))
                    i += n
                    break
            else:
                i += 1
    return [h for h in hits if mask.find(1, h.start, h.end) < 0]


# a word after which a sentence-opening "Will", "May" or "Mark" is the verb: "Will you remember?", "May I ask?"
_AUX_NEXT = re.compile(
    r"[ \t]+(?i:i|you|u|ya|we|he|she|it|they|there|this|that|these|those|the|a|an|my|your|his|her|our|their|its|"
    r"anyone|anybody|someone|somebody|everyone|everybody|not|be)\b"
)


def _named_as_word(text: str, start: int, end: int) -> bool:
    """A known name that is also an ordinary word ("will", "may", "rose") counts as the name: written with a
    capital, and not opening a sentence as a question's or a wish's verb ("Will you remember?", "May I ask",
    while "Will said hi" and "where does Will live?" name Will)."""
    return not text[start].islower() and not (_opens_sentence(text, start) and _AUX_NEXT.match(text, end))


def _ordinary_key(key: str) -> bool:
    """A known name that is also an ordinary word ("will", "may", "rose"): found only when capitalised."""
    return key in COMMON or key in _NOT_NAMES or key in MONTH_WORDS or key in WEEKDAY_WORDS or key in WORD_NAMES


def _type_of_caps(text: str, span: str, start: int, end: int, default: str = "person") -> str:
    before = text[max(0, start - 30) : start]
    after = text[end : end + 40]
    folded = span.casefold()
    if folded in MONTH_WORDS or folded in WEEKDAY_WORDS:
        if folded in _NAME_MONTHS and not (_TIME_BEFORE.search(before) or _TIME_AFTER.match(after)):
            return "person"  # "May said hi", "my aunt June"
        return "date"  # "in March": a time, never a place
    if _EVENTS.search(span):
        return "event"
    if _ORG_WORDS.search(span) or _ORG_CUES.search(before):
        return "organisation"
    if folded in NATIONALITIES:
        return "other"
    if (
        _PET_BEFORE.search(before)
        or _PET_AFTER.match(after)
        or (_PET_NAME_IS.search(before) and _PET_NEAR.search(text, max(0, start - 80), start))
    ):
        return "other"  # a named animal
    if (
        _PLACE_WORDS.search(span)
        or _PLACE_CUES.search(before)
        or _PLACE_BEFORE.search(before)
        or _PLACE_AFTER.match(after)
    ):
        return "place"
    if (_THING_CUES.search(before) and (len(span.split()) > 1 or span.isupper())) or _MEDIA_AFTER.match(after):
        return "thing"  # "watched Little Women", "the Harry Potter universe"
    if re.search(r"\s(?:of|the)\s", span):
        return "thing"  # a title: "Game of Thrones", "Lord of the Rings"
    return default


# Ordinary words that open sentences in chat: capitalised there, never names on their own.
COMMON = frozenset(
    """
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
""".split()
)
_JOINERS = {"of", "the", "de", "da", "van", "von", "&"}
_WORD = re.compile(r"[^\W\d_][\w\u0300-\u036f'’.-]*[\w\u0300-\u036f]|[^\W\d_]")
_TITLE_SMALL = {"of", "the", "a", "an", "and", "in", "on", "to", "for", "with", "at", "by", "from", "or", "&"}
_QUOTED = re.compile(r"[\"“]([^\"“”\n]{2,80})[\"”]")
_VENUE_END = re.compile(
    r"\s*(?:$|[,.;:!?)]|\s(?:and|for|on|in|at|last|yesterday|tonight|today|with|to|was|is|"
    r"again|earlier|later|this|that|next)\b)"
)


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
    after = text[end : end + 2]
    nxt = _WORD.match(text, end + 1) if after[:1] == " " else None
    followed = bool(nxt and nxt.group(0)[0].isupper() and not _ordinary(nxt.group(0)))
    opener = _opens_sentence(text, start)
    if _ordinary(word):
        return followed and not opener
    if not opener:
        return True
    addressed = after[:1] in {",", "!", ":"} or (after[:1] == "?" and len(text) - end <= 2)
    return addressed or (followed and not re.search(r"(?:ed|ing|ly)$", folded))


def _caps(text: str, taken: bytearray, default: str = "person") -> list[Mention]:
    """Runs of capitalised words outside the characters `taken` marks, minus ordinary sentence openers."""
    out: list[Mention] = []
    run: list[re.Match[str]] = []

    def close() -> None:
        while run and run[-1].group(0).casefold() in _JOINERS:
            run.pop()
        if run:
            start, end = run[0].start(), run[-1].end()
            if text[end - 2 : end] in ("'s", "’s"):
                venue = _VENUE_END.match(text, end) and _PLACE_CUES.search(text[max(0, start - 30) : start])
                if not venue or _ORG_CUES.search(text[max(0, start - 30) : start]):
                    end -= 2  # "Aragorn's" -> "Aragorn"; "dinner at Luigi's" keeps its venue
            span = text[start:end]
            if span.casefold() not in _NOT_NAMES and len(span) > 1:
                kind = "place" if span.endswith(("'s", "’s")) else _type_of_caps(text, span, start, end, default)
                out.append(Mention(span, start, end, kind))
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


def _quoted_titles(text: str) -> list[Mention]:
    """Titles in quotes: every word capitalised but the small ones ("The Name of the Wind"), not a quoted
    greeting or sentence ("Hey Mel")."""
    out: list[Mention] = []
    if '"' not in text and "“" not in text:
        return out
    for m in _QUOTED.finditer(text):
        title = m.group(1).strip()
        words = title.split()
        if not words or len(words) > 8 or not words[0][:1].isupper() or title[-1] in ",.!?":
            continue
        if any(not (w[:1].isupper() or w[:1].isdigit() or w.casefold() in _TITLE_SMALL) for w in words):
            continue
        first = words[0].casefold()
        if ((first in _NOT_NAMES or first in COMMON) and first not in ("the", "a", "an")) or (
            len(words) == 1 and _ordinary(words[0])
        ):
            continue
        start = m.start(1) + m.group(1).index(title)
        out.append(Mention(title, start, start + len(title), "thing"))
    return out


def _extend_first_names(text: str, hits: list[Mention], gazetteer: Mapping[str, str]) -> list[Mention]:
    """A known one-word person followed by capitalised words takes them as the rest of the name ("Bob
    Miller" once "Bob" is known): one person, never "Bob" and a new person "Miller"."""
    out = []
    for h in hits:
        if h.type == "person" and " " not in h.text:
            m = re.match(r"(?:[ \t]+[A-Z][\w'’-]*)+", text[h.end : h.end + 60])
            if m:
                words = m.group(0).split()
                keep = []
                for w in words:
                    w = w[:-2] if w.endswith(("'s", "’s")) else w
                    if _ordinary(w) or gazetteer.get(_fold(w)) not in (None, "person") or w.casefold() in NATIONALITIES:
                        break
                    keep.append(w)
                    if len(keep) == 2:
                        break
                if keep:
                    end = text.index(keep[-1], h.end) + len(keep[-1])
                    h = Mention(text[h.start : end], h.start, end, "person")
        out.append(h)
    return out


def find_mentions(
    text: str,
    gazetteer: Mapping[str, str] | None = None,
    max_words: int | None = None,
    typed: Sequence[Mention] = (),
    caps: str | None = "person",
) -> list[Mention]:
    """Mentions in `text`, in order, without overlaps. `gazetteer`: folded name or alias -> entity type
    (the user's known entities; a mapping: `get`, `len` and its keys iterated), its longest key in words
    as `max_words`. `typed`: mentions a language's lexicon found (the people it introduces, the places and
    employers of its relations), kept before the guesses. `caps`: the type of a capitalised span nothing else
    types (English: "person"); None: capitalised spans are no evidence of a name (German, where every noun is
    capitalised)."""
    found: list[Mention] = []
    if gazetteer:
        if max_words is None:
            max_words = max(len(k.split()) for k in gazetteer)
        found += _extend_first_names(text, _gazetteer_hits(text, gazetteer, max_words), gazetteer)
    found += typed
    for rx, kind in ((_MENTION, "person"), (_EMAIL, "other"), (_URL, "other"), (_AMOUNT, "other")):
        found += [Mention(m.group(0), m.start(), m.end(), kind) for m in rx.finditer(text)]
    for m in _DATE.finditer(text):
        if m.group(0).casefold() not in _DATE_STOP:
            found.append(Mention(m.group(0), m.start(), m.end(), "date"))
    found += _quoted_titles(text)
    # earlier tiers first: keep a mention unless it overlaps one already kept
    kept: list[Mention] = []
    taken = bytearray(len(text))  # 1: a character of a kept mention (a look-up per span, whatever their number)
    for mention in found:
        if taken.find(1, mention.start, mention.end) < 0:
            kept.append(mention)
            taken[mention.start : mention.end] = b"\x01" * (mention.end - mention.start)
    if caps is not None:
        kept += _caps(text, taken, caps)
    return sorted(kept, key=lambda x: x.start)
