"""Text -> tokens by Unicode script, never by spaces alone (pure).

Normalisation first: NFKC (full-width Latin becomes ASCII, half-width Katakana full-width, ligatures
letters), case folding, and the code points Unicode calls default-ignorable removed (zero-width joiners
and non-joiners, bidi controls, variation selectors, soft hyphens: invisible, so a word written with one
is the same word), as NFKC_Casefold does. Its cost is bounded by the text's length: a run of more than
MAX_MARKS combining marks keeps its first MAX_MARKS (Unicode's stream-safe bound, UAX #15: Python sorts a
run of marks in quadratic time, 3 s for 20,000 of them and 45 s for 80,000), and `nfkc_size` measures what
the normalised form would take in pieces, stopping past a limit (U+FDFA becomes 18 characters: the
limits are measured on the normalised form, so growth cannot multiply what a request costs).
Then the text is cut into runs:

- Han, Hiragana and Katakana (with the prolonged sound mark): one run, as Lucene's CJK analyzer has it;
- Hangul;
- Thai, Lao, Khmer and Myanmar, written without spaces between words;
- words of every other script: letters and digits with the combining marks that follow them (Devanagari
  vowel signs, Arabic harakat, accents written apart), so a word is never cut inside.

Runs of the spaceless scripts are later cut into bigrams of grapheme clusters (a letter with its marks),
words are stemmed (analysis.py). Runs longer than a bound are split so no token grows without end."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from itertools import pairwise
from types import SimpleNamespace

_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\u30fc"
_HANGUL = r"\p{Hangul}"
_SEA = r"\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
_OTHER = rf"[\p{{L}}\p{{N}}--[{_CJK}{_HANGUL}{_SEA}]]"
# one alternative per kind of run; `\p{M}` keeps the marks that follow a letter in its run
_TOKEN = (
    rf"(?P<cjk>[{_CJK}](?:[{_CJK}]|\p{{M}})*)"
    rf"|(?P<hangul>[{_HANGUL}](?:[{_HANGUL}]|\p{{M}})*)"
    rf"|(?P<sea>[{_SEA}](?:[{_SEA}]|\p{{M}})*)"
    rf"|(?P<word>{_OTHER}(?:{_OTHER}|\p{{M}})*)"
)
MAX_RUN = 256  # characters of one run handled at a time (a 1 MB line of Han is 4,000 such runs)
MAX_MARKS = 30  # combining marks kept in a row (UAX #15's stream-safe text format allows 30 non-starters)
NFKC_PIECE = 4096  # characters normalised at a time by nfkc_size
# scripts that stem (languages.py) and are told apart by their first letter
SCRIPTS = ("Latin", "Cyrillic", "Greek", "Arabic", "Devanagari", "Armenian", "Tamil", "Hebrew", "Bengali", "Georgian")
_SCRIPT_OF: dict[str, str] = {}
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


@functools.cache
def _rx() -> SimpleNamespace:
    """The compiled patterns, on first use: importing `regex` and compiling its script classes takes
    about 70 ms, which start-up does not pay."""
    import regex

    return SimpleNamespace(
        token=regex.compile(_TOKEN, regex.V1),
        ignorable=regex.compile(r"\p{Default_Ignorable_Code_Point}+"),
        marks=regex.compile(rf"\p{{M}}{{{MAX_MARKS + 1},}}"),
        cluster=regex.compile(r"\X"),
        mark=regex.compile(r"\p{M}"),
        scripts=[(name, regex.compile(rf"\p{{Script={name}}}")) for name in SCRIPTS],
    )


def stream_safe(text: str) -> str:
    """The text with every run of combining marks cut to its first MAX_MARKS: what normalisation may take in
    time linear in its length."""
    return _rx().marks.sub(lambda m: m.group()[:MAX_MARKS], text)


def nfkc_size(text: str, stop: int | None = None) -> int:
    """UTF-8 bytes of the text's NFKC form (of its stream-safe form), normalised NFKC_PIECE characters at a
    time: as soon as the count passes `stop`, that count (more than `stop`) without normalising the rest."""
    if text.isascii():
        return len(text)
    text = stream_safe(text)
    if unicodedata.is_normalized("NFKC", text):
        return len(text.encode("utf-8", "surrogatepass"))
    total, pos, end_of_text = 0, 0, len(text)
    mark = _rx().mark
    while pos < end_of_text:
        end = min(pos + NFKC_PIECE, end_of_text)
        while end < end_of_text and mark.match(text, end):  # a letter's marks stay with it (at most MAX_MARKS)
            end += 1
        total += len(unicodedata.normalize("NFKC", text[pos:end]).encode("utf-8", "surrogatepass"))
        if stop is not None and total > stop:
            return total
        pos = end
    return total


def normalize(text: str) -> str:
    """NFKC, case folding, default-ignorable code points removed (the Turkish dotted capital I folds to i);
    runs of combining marks cut to MAX_MARKS first (`stream_safe`)."""
    if text.isascii():
        return text.lower()
    text = unicodedata.normalize("NFKC", stream_safe(_rx().ignorable.sub("", text))).casefold()
    if "\u0307" in text:
        text = text.replace("i\u0307", "i")
    return unicodedata.normalize("NFC", text)


def script_of(word: str) -> str:
    """The script of a word's first letter; '' for a word of digits alone, 'Other' beyond the known scripts."""
    for ch in word:
        if ch.isascii():
            if ch.isalpha():
                return "Latin"
            continue
        found = _SCRIPT_OF.get(ch)
        if found is None:
            found = next((name for name, rx in _rx().scripts if rx.match(ch)), "Other")
            if len(_SCRIPT_OF) < 65536:
                _SCRIPT_OF[ch] = found
        if found != "Other" or not ch.isdigit():
            return found
    return ""


def ascii_words(text: str) -> list[str]:
    """The words of ASCII text: runs of letters and digits."""
    return _ASCII_WORD.findall(text)


def runs(text: str) -> Iterator[tuple[str, str]]:
    """(kind, run) of normalised text, in order: kind is 'cjk', 'hangul', 'sea' or 'word'. Runs of the
    spaceless scripts longer than MAX_RUN come in pieces that overlap by one cluster, so no bigram is lost
    (a cluster of MAX_RUN characters or more is a piece of its own: each character is looked at a bounded
    number of times, so the time is linear in the text)."""
    if text.isascii():  # most chat: words of letters and digits, as `re` finds them (10x faster than `regex`)
        for word in _ASCII_WORD.findall(text):
            yield "word", word
        return
    rx = _rx()
    for m in rx.token.finditer(text):
        kind = m.lastgroup
        run = m.group()
        if kind == "word" or len(run) <= MAX_RUN:
            yield kind, run
            continue
        start = 0
        while start < len(run):
            end = min(start + MAX_RUN, len(run))
            while end < len(run) and rx.mark.match(run, end):  # a cluster is never cut
                end += 1
            yield kind, run[start:end]
            if end >= len(run):
                break
            # the next piece starts at this one's last cluster, so no bigram is lost; never at or before this
            # piece's start: a cluster of MAX_RUN characters or more (a letter with hundreds of marks) once
            # sent it back to where it began, for ever
            back = end - 1
            while back > start and rx.mark.match(run, back):
                back -= 1
            start = back if back > start else end


def clusters(run: str) -> list[str]:
    """The grapheme clusters of a run (a letter with its marks): its characters when it has no mark."""
    rx = _rx()
    return rx.cluster.findall(run) if rx.mark.search(run) else list(run)


def bigrams(run: str) -> list[str]:
    """Overlapping bigrams of the run's clusters; a run of one cluster is itself (a unigram)."""
    units = clusters(run)
    if len(units) < 2:
        return units
    return [a + b for a, b in pairwise(units)]


def fold_marks(word: str) -> str:
    """A Latin word without its accents (café -> cafe): what users type is often unaccented."""
    if word.isascii():
        return word
    return unicodedata.normalize(
        "NFC", "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))
    )


_SPACELESS_SCRIPTS = (
    ("CJK ", "Han"),
    ("HIRAGANA", "Hiragana"),
    ("KATAKANA", "Katakana"),
    ("THAI", "Thai"),
    ("LAO ", "Lao"),
    ("KHMER", "Khmer"),
    ("MYANMAR", "Myanmar"),
)


def letters_by_script(text: str) -> dict[str, int]:
    """How many letters of the text are in each script: a word's letters in its script (`script_of`, 'Other'
    beyond the known ones), Han, Hiragana, Katakana, Hangul, Thai, Lao, Khmer and Myanmar by character;
    digits, marks, punctuation and emoji not counted."""
    normal = normalize(text)
    if normal.isascii():
        letters = sum(map(len, _ASCII_WORD.findall(normal))) - sum(c.isdigit() for c in normal)
        return {"Latin": letters} if letters else {}
    out: dict[str, int] = {}
    for kind, run in runs(normal):
        if kind == "word":
            script = script_of(run)
            if script:
                out[script] = out.get(script, 0) + sum(c.isalpha() for c in run)
        elif kind == "hangul":
            out["Hangul"] = out.get("Hangul", 0) + sum(c.isalpha() for c in run)
        else:
            for ch in run:
                name = unicodedata.name(ch, "")
                found = next((s for prefix, s in _SPACELESS_SCRIPTS if name.startswith(prefix)), None)
                if found is not None and ch.isalpha():
                    out[found] = out.get(found, 0) + 1
    return out


def written_in(text: str, scripts: frozenset[str] | None, share: float = 0.5) -> bool:
    """Whether no more than `share` of the text's letters are outside these scripts (None: every script; a
    text without letters: True). What a model reading those scripts can read of it (messages/ranking.py)."""
    if scripts is None:
        return True
    letters = letters_by_script(text)
    outside = sum(n for script, n in letters.items() if script not in scripts)
    return outside <= share * sum(letters.values())


_SPACELESS_NAMES = ("CJK ", "HIRAGANA", "KATAKANA", "IDEOGRAPHIC", "THAI", "LAO ", "KHMER", "MYANMAR")


def written_without_spaces(ch: str) -> bool:
    """A character of a script written without spaces between words (Han, Kana, Thai, Lao, Khmer, Myanmar),
    or CJK punctuation."""
    if ch.isascii():
        return False
    return unicodedata.name(ch, "").startswith(_SPACELESS_NAMES) or "\u3000" <= ch <= "\u303f"
