"""Keyword terms of a text, the same way for every index (the messages' in-process BM25, the facts'
full-text index): normalised and cut by script (tokens.py), then

- Han, Kana, Thai, Lao, Khmer, Myanmar runs: overlapping bigrams of grapheme clusters (a run of one
  cluster is a unigram), as Lucene's CJKBigramFilter; never stemmed, no stop words;
- Hangul: bigrams of each word, so 김치찌개 finds 김치찌개예요 (Korean glues particles and endings to the
  word) and 찌개 finds it too; a word that is one syllable before its particle (차를, 책이) adds that
  syllable, so 차 finds it. Stripping particles instead was measured worse: a noun ending in a syllable
  that is also a particle (치과, "dentist's") lost it (docs/languages.md);
- other words: stemmed by Snowball in the memory's language when the word is in that language's script,
  else in its script's default language (languages.py); stop words dropped; Latin words lose their
  accents (after stemming, so the stemmer sees them: English folds before, as LanceDB's tokenizer did);
  words of 40 characters or more dropped.

A query is analysed in every language its index holds: each word becomes one term per distinct stem
(`query_terms`), so a German query finds German memories stemmed in German beside English ones.

Grams, a second field beside the terms: the distinct overlapping character trigrams of each word as
written (normalised, accents folded; stop words have none), marked with GRAM_MARK so they never meet a
term, in every language but English. They meet the forms of one word a stemmer leaves apart: a prefix it
does not take off (Indonesian me-/di-/ber-, Arabic verb prefixes), a vowel that comes and goes inside the
stem (Russian щенок / щенка), a suffix it does not know or a particle it takes off wrongly (Indonesian
menikah -> meni). Taken from the word, not its stem, so a stemmer's mistake is not repeated in them. A
query word's grams stand in for its stems where they score more, at a lower weight, and never add to
them (messages/keywords.py, facts/keywords.py). English is left out: its stemmer already meets its
inflections (every inflected query of the sample found without grams) and its keyword index would grow
3 to 4 times (docs/languages.md).

Unigrams, in the same second field: each distinct character (grapheme cluster) of a Han, Kana or Hangul run,
marked as a gram is, as Lucene's CJKBigramFilter with `outputUnigrams` has them beside the bigrams. Chinese
and Japanese write many words in one character (猫, 叫, 住) and Korean glues endings to one-syllable stems
(살아, 살지): a bigram alone never meets them. A query's unigrams add to its score at UNIGRAM_WEIGHT
(messages/keywords.py, facts/keywords.py): a row holding a query's bigram holds its two characters too, so
it still ranks above a row holding them apart. Not for Thai, Lao, Khmer and Myanmar, whose letters are not
words.

Pure: no I/O. The stemmers are imported on first use (languages.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from .languages import KNOWN_LANGUAGES, SCRIPT_OF_LANGUAGE, STEMMERS, Languages, stemmer
from .stopwords import STOP_WORDS
from .tokens import ascii_words, bigrams, clusters, fold_marks, normalize, runs, script_of

MAX_TOKEN_CHARS = 40
GRAM = 3  # characters of a gram
GRAM_MARK = "~"  # a gram's first character: never in a term (terms are letters, digits and their marks)
GRAMLESS = frozenset({"en"})  # languages whose words have no grams
UNIGRAM_KINDS = frozenset({"cjk", "hangul"})  # runs (tokens.py) whose characters are unigrams too
UNIGRAM_WEIGHT = 1.0  # a query's unigrams against its terms (a bigram's score is 1)
_STEMS: dict[str, dict[str, str | None]] = {}  # language -> word -> term (None: dropped)
_STEMS_MAX = 200_000  # words held per language
_MISS = object()
_SETTINGS = {"languages": Languages()}

# Korean particles and copula endings, longest first (hangul_terms)
HANGUL_ENDINGS = tuple(
    sorted(
        """
    이에요 예요 입니다 이야 이다 이고 이랑 랑 에서는 에서도 에서 에게서 에게 한테서 한테 께서 께 으로는 으로 로는 로
    은 는 이 가 을 를 의 에는 에도 에 와 과 도 만 까지 부터 보다 처럼 마다 야 아""".split(),
        key=len,
        reverse=True,
    )
)


def configure(languages: list[str] | None) -> None:
    """The languages memories may be in (ISO 639-1 codes; None: every language the detector knows). The
    stemmer of the first stemmed one is imported here, at start-up, so a missing or broken stemmer package
    is a start-up failure naming it, not an error at the first store."""
    _SETTINGS["languages"] = Languages(languages)
    first = next((code for code in (languages or ["en"]) if code in STEMMERS), None)
    if first is not None:
        stemmer(first)


def parse_languages(value: str) -> tuple[str, ...] | None:
    """`--languages`: `auto` (None: every language the detector tells apart) or ISO 639-1 codes, comma-separated."""
    v = value.strip().lower()
    codes = tuple(dict.fromkeys(c.strip() for c in v.split(",") if c.strip())) if v != "auto" else ()
    if v != "auto" and not codes:  # "" or ",,,": no language named (auto must be asked for by name)
        raise ValueError(
            f"names no language (got {value[:16]!r}): give ISO 639-1 codes such as en,de, or auto for any "
            "language (docs/languages.md)"
        )
    unknown = [c for c in codes if c not in KNOWN_LANGUAGES]
    if unknown:
        raise ValueError(
            f"unknown language code(s) {', '.join(c[:16] for c in unknown[:8])}: use ISO 639-1 codes such as "
            f"{', '.join(sorted(KNOWN_LANGUAGES)[:12])}, ... or auto (docs/languages.md)"
        )
    return codes or None


def settings() -> Languages:
    return _SETTINGS["languages"]


def _stem(word: str, language: str | None) -> str | None:
    """One word's term in a language: stemmed, folded; None for a stop word or an over-long word."""
    cache = _STEMS.get(language or "")
    if cache is None:
        cache = _STEMS[language or ""] = {}
    found = cache.get(word, _MISS)
    if found is not _MISS:
        return cast("str | None", found)
    term = cache[word] = _stem_now(word, language)
    if len(cache) >= _STEMS_MAX:
        cache.clear()
    return term


def _stem_now(word: str, language: str | None) -> str | None:
    if len(word) >= MAX_TOKEN_CHARS:
        return None
    latin = script_of(word) == "Latin"
    stem = stemmer(language) if language else None
    if language in (None, "en"):  # as LanceDB's tokenizer: accents folded first, the stem checked for a stop word
        word = fold_marks(word) if latin else word
        term: str | None = stem(word) if stem else word
        return None if term in STOP_WORDS["en"] and language == "en" else term
    assert language is not None  # (None went the English way above)
    if word in STOP_WORDS.get(language, ()):
        return None
    term = stem(word) if stem else word
    return fold_marks(term) if latin else term


def hangul_terms(word: str) -> list[str]:
    """A Hangul word as bigrams, and the syllable before its particle when one is all there is (차를 -> 차)."""
    found = bigrams(word)
    if len(word) > 1:
        for ending in HANGUL_ENDINGS:
            if word.endswith(ending) and len(word) == len(ending) + 1:
                found.append(word[0])
                break
    return found


def grams(word: str) -> list[str]:
    """A word's distinct grams (normalised, accents folded), marked; none for a word shorter than GRAM."""
    return list(dict.fromkeys(GRAM_MARK + word[i : i + GRAM] for i in range(len(word) - GRAM + 1)))


def unigrams(run: str) -> list[str]:
    """A Han, Kana or Hangul run's distinct characters (grapheme clusters), marked as grams are."""
    return [GRAM_MARK + u for u in dict.fromkeys(clusters(run))]


def language_of(text: str) -> str | None:
    """The language a memory's words are stemmed in (None: no script of it stems)."""
    normal = normalize(text)
    words = [run for kind, run in runs(normal) if kind == "word"]
    scripts = {script_of(w) for w in words} - {""}
    return settings().decide(normal, scripts, words) if scripts else None


DECIDE = "?"  # `analyse`'s language when the memory's own is to be decided there


def analyse(text: str, language: str | None = DECIDE) -> tuple[str | None, list[str]]:
    """A memory's language (decided here unless given: `language_of`) and its index terms, in order, in one
    pass over the text."""
    language, out, _ = analyse_fields(text, language, with_grams=False)
    return language, out


def analyse_fields(
    text: str, language: str | None = DECIDE, with_grams: bool = True
) -> tuple[str | None, list[str], list[str]]:
    """`analyse`, and the memory's grams (each word's distinct ones, in order; the unigrams of each Han, Kana
    and Hangul run among them)."""
    normal = normalize(text)
    if normal.isascii():
        return _analyse_ascii(normal, language, with_grams)
    out: list[str] = []
    found: list[str] = []
    words: list[str] = []
    for kind, run in runs(normal):
        if kind == "word":
            words.append(run)
            continue
        out += hangul_terms(run) if kind == "hangul" else bigrams(run)
        if with_grams and kind in UNIGRAM_KINDS:
            found += unigrams(run)
    if not words:
        return (None if language == DECIDE else language), out, found
    langs = settings()
    scripts = [script_of(w) for w in words]
    if language == DECIDE:
        named = set(scripts) - {""}
        language = langs.decide(normal, named, words) if named else None
    own = SCRIPT_OF_LANGUAGE.get(language or "", "Latin")
    for w, script in zip(words, scripts):
        code = language if script == own and language else langs.default(script)
        term = _stem(w, code)
        if term is not None:
            out.append(term)
            if with_grams and script and code not in GRAMLESS:
                found += grams(fold_marks(w) if script == "Latin" else w)
    return language, out, found


def _analyse_ascii(normal: str, language: str | None, with_grams: bool) -> tuple[str | None, list[str], list[str]]:
    """`analyse_fields` of ASCII text, the common case made short: words only, each Latin or digits (no script)."""
    words = ascii_words(normal)
    if not words:
        return (None if language == DECIDE else language), [], []
    langs = settings()
    if language == DECIDE:
        language = langs.decide(normal, {"Latin"}, words) if not all(map(str.isdigit, words)) else None
    latin = language if language and SCRIPT_OF_LANGUAGE.get(language, "Latin") == "Latin" else langs.default("Latin")
    out: list[str] = []
    found: list[str] = []
    gram = with_grams and latin not in GRAMLESS
    for w in words:
        digits = w.isdigit()
        term = _stem(w, None if digits else latin)
        if term is not None:
            out.append(term)
            if gram and not digits:
                found += grams(w)
    return language, out, found


def terms(text: str, language: str | None = DECIDE) -> list[str]:
    """The index terms of a memory, in order. `language`: the memory's (`language_of`), else decided here."""
    return analyse(text, language)[1]


def query_terms(text: str, languages: Iterable[str]) -> list[str]:
    """The terms of a query against an index whose memories are in `languages`: each word in every one of
    them of its script (or its script's default when none is), each distinct stem once per word."""
    return query_fields(text, languages)[0]


def query_fields(text: str, languages: Iterable[str]) -> tuple[list[str], list[tuple[list[str], list[str]]], list[str]]:
    """`query_terms`; each word's stems and grams (those of the word in the languages that have grams), for
    the words that have grams; and the unigrams of its Han, Kana and Hangul runs (each run's distinct ones)."""
    normal = normalize(text)
    by_script: dict[str, list[str]] = {}
    for code in languages:
        by_script.setdefault(SCRIPT_OF_LANGUAGE.get(code, "Latin"), []).append(code)
    langs = settings()
    out: list[str] = []
    words: list[tuple[list[str], list[str]]] = []
    singles: list[str] = []
    for kind, run in runs(normal):
        if kind != "word":
            out += hangul_terms(run) if kind == "hangul" else bigrams(run)
            if kind in UNIGRAM_KINDS:
                singles += unigrams(run)
        else:
            script = script_of(run)
            chosen: list[str | None] = [*by_script.get(script, [])] or [langs.default(script)]
            stems = {code: _stem(run, code) for code in chosen}
            mine = sorted({v for v in stems.values() if v is not None})
            out += mine
            if not script:  # digits
                continue
            if any(v is not None and code not in GRAMLESS for code, v in stems.items()):
                found = grams(fold_marks(run) if script == "Latin" else run)
                if found:
                    words.append((mine, found))
    return out, words, singles
