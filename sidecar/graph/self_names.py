"""The names a user's own entity answers to, besides "me" (pure): the display name the host passes on `store`
(`username`), its readable part, and the name the user introduces themself with (docs/graph.md, "The user's
own names").

- **Readable part** of a display name: its runs of letters (cut at digits, "_", ".", "-", spaces and other
  marks, and between a lower-case and an upper-case letter: "maraVoss" -> "mara", "Voss"), the first of at
  least two letters that is not a handle word ("the", "real", "official", "mr", "xx", ...) nor an ordinary
  English word that is no given name (mentions.COMMON, but "will", "rose" ... stay), title-cased when it is
  all one case ("mara_v" -> "Mara", "MARA99" -> "Mara", "the_real_bob" -> "Bob", "DeShawn_7" -> "DeShawn",
  "小雨_88" -> "小雨"). None when no run qualifies ("_x_", "1234", "").
- **An introduction**: "I'm Mara", "I am Mara", "call me Theo", "my name is Léa", "je m'appelle Léa",
  "ich heiße Jonas", "me llamo Ana", "mi chiamo", "me chamo", "ik heet", "меня зовут Маша", "我叫小雨",
  "私の名前はユキです", "ユキと申します", "제 이름은 민수입니다", "اسمي سارة". In a script with case the name is
  one or two capitalised words (after "my name is" and its equivalents, a lower-case one is taken too and
  title-cased), never an ordinary English word, a nationality, or a state ("I'm Tired", "I'm Sorry", "I'm
  Vegan"), and the clause must end after it (punctuation, the end, or "and" / "from" ...): "I'm Mara's sister",
  "I'm Going home" make nothing. In a script without case the name is 1-4 letters ended by punctuation, a
  space or the end ("我叫小雨，" but not "我叫小雨住在北京"). "私は…です", "我是…", "저는 …입니다", "soy …" and
  "ich bin …" are not read: they say a job or a state as often as a name ("私は学生です", "ich bin Lehrer").
"""

from __future__ import annotations

import re

from .mentions import COMMON, NATIONALITIES, WORD_NAMES

# words of handles that are not the person's name
HANDLE_WORDS = frozenset(
    "the real official its im iam mr mrs ms mx dr sir lady lord king queen xx xxx xo user admin mod "
    "not just only mister miss gamer fan tv ttv yt".split()
)
# what people say they are, capitalised or not: never a name after "I'm"
STATES = frozenset(
    """
tired sick hungry thirsty bored busy fine sorry sure ready home back done here new lost confused excited scared
stressed exhausted sad angry mad upset nervous worried curious alive dead serious kidding joking lonely broke
rich poor old young fat ill awake asleep drunk high cold hot warm full starving proud grateful thankful blessed
lucky jealous shy anxious depressed alright interested impressed obsessed addicted allergic vegetarian vegan
catholic jewish muslim hindu buddhist atheist agnostic introvert introverted extrovert extroverted
human male female straight gay lesbian bi trans queer nonbinary married single engaged divorced widowed pregnant
retired unemployed employed freelance remote available away off out in up down cool chill tipsy sober stuck
screwed finished late early certain afraid glad happy well better worse healthy injured hurt alone free online
offline late sleepy hangry fed tall short blind deaf disabled autistic pregnant healed vaccinated okay ok good
great bad terrible awesome amazing sure fried dying crying laughing going coming leaving working studying
""".split()
)
# pronouns and the like that follow the cue words in other languages ("ich heiße Sie willkommen")
_NOT_AFTER_CUE = frozenset("sie dich euch ihn ihr du es la le les lo los las te se".split())

_LETTERS = re.compile(r"[^\W\d_]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")  # "maraVoss", "MaraVoss" (not "DeShawn", "McKenzie": see _parts)
# a capitalised name-shaped word: one capital, then lower-case letters (apostrophes and hyphens inside)
_CAP = r"[^\W\d_a-z](?:[^\W\d_A-Z]|['’-](?=[^\W\d_]))+"
_LOWER = r"[^\W\d_A-Z](?:[^\W\d_A-Z]|['’-](?=[^\W\d_]))+"
# the clause ends after the name: punctuation, an emoji, the end, or a word that starts another part
_AFTER = r"(?=[ \t]*(?:$|[^\w\s'’-])|[ \t]+(?i:and|und|et|y|e|и|from|aus|de|here|btw|by\s+the\s+way|but|so)\b)"
_CUES_LOOSE = (
    r"(?i:my[ \t]+name[ \t]+is|my[ \t]+name['’]s|name['’]s|je[ \t]+m['’][ \t]*appelle|mon[ \t]+nom[ \t]+est|"
    r"ich[ \t]+hei(?:ß|ss)e|mein[ \t]+name[ \t]+ist|me[ \t]+llamo|mi[ \t]+nombre[ \t]+es|mi[ \t]+chiamo|"
    r"il[ \t]+mio[ \t]+nome[ \t]+è|me[ \t]+chamo|meu[ \t]+nome[ \t]+é|ik[ \t]+heet|mijn[ \t]+naam[ \t]+is|"
    r"меня[ \t]+зовут|моё[ \t]+имя|мое[ \t]+имя)"
)
_CUES_STRICT = r"(?:\b(?:I|i)(?:['’]m|[ \t]+am)|\b(?i:call[ \t]+me|you[ \t]+can[ \t]+call[ \t]+me))"
_INTRO_LOOSE = re.compile(rf"(?<![\w'’]){_CUES_LOOSE}[ \t]+(?P<name>{_CAP}(?:[ \t]+{_CAP})?|{_LOWER}){_AFTER}")
_INTRO_STRICT = re.compile(rf"{_CUES_STRICT}[ \t]+(?P<name>{_CAP}(?:[ \t]+{_CAP})?){_AFTER}")
_HAN_KANA = r"[\u30a1-\u30fa\u30fc\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"  # kanji, katakana: no particles
_END = r"(?=$|[\s,.!?;:、，。！？：；…~〜)）])"
# scripts without case: the cue, the name (shortest first), and what must follow it
_INTRO_CASELESS = [
    re.compile(rf"(?:我叫|我的名字是|我的名字叫)(?P<name>{_HAN_KANA}{{1,4}}?){_END}"),
    re.compile(rf"(?:私|僕|俺)の名前は(?P<name>{_HAN_KANA}{{1,6}}?)(?:です|だ|{_END})"),
    re.compile(rf"(?P<name>{_HAN_KANA}{{1,6}})(?:と申します|といいます|と言います)"),
    re.compile(r"제[ \t]*이름은[ \t]*(?P<name>[\uac00-\ud7af]{1,5}?)(?:입니다|이에요|예요|이야|야|" + _END + ")"),
    re.compile(r"(?<![\u0600-\u06ff])اسمي[ \t]+(?P<name>[\u0600-\u06ff]{2,15})" + _END),
]


def _ordinary(word: str) -> bool:
    w = word.casefold().replace("’", "'")
    if w in WORD_NAMES:
        return False  # a given name that is also a word ("Will", "Rose"): a name when written as one
    return w in COMMON or w.split("'")[0] in COMMON or w in NATIONALITIES or w in STATES or w in HANDLE_WORDS


def _parts(run: str) -> list[str]:
    """A run of letters cut where a lower-case letter meets an upper-case one, except after a piece of fewer
    than three letters ("De|Shawn", "Mc|Kenzie" stay whole; "mara|Voss", "Mara|Voss" are cut)."""
    out: list[str] = []
    for piece in _CAMEL.split(run):
        if out and len(out[-1]) < 3 and out[-1][:1].isupper():
            out[-1] += piece
        else:
            out.append(piece)
    return out


def readable(display_name: str | None) -> str | None:
    """The readable part of a display name ("mara_v" -> "Mara"), or None."""
    if not display_name:
        return None
    for run in _LETTERS.findall(display_name):
        for part in _parts(run):
            if len(part) < 2 or part.casefold() in HANDLE_WORDS or _ordinary(part):
                continue
            return part.title() if part.islower() or part.isupper() else part
    return None


# a word every introduction holds (lower-cased): most messages hold none and are not read further
_CUE_WORDS = (
    "i'm", "i’m", "i am", "call me", "name", "appelle", "mon nom", "hei", "llamo", "nombre", "chiamo", "nome",
    "chamo", "heet", "naam", "зовут", "имя", "我叫", "我的名字", "名前", "申します", "といいます", "と言います", "이름",
    "اسمي",
)  # fmt: skip


def introduced(text: str) -> str | None:
    """The name the speaker introduces themself with in `text` ("Hi, I'm Mara" -> "Mara"), or None."""
    if len(text) > 2_000:
        text = text[:2_000]  # an introduction opens a conversation; a long text is not read whole for one
    lower = text.lower()
    if not any(cue in lower for cue in _CUE_WORDS):
        return None
    for rx in (_INTRO_STRICT, _INTRO_LOOSE):
        for m in rx.finditer(text):
            name = m.group("name")
            words = name.split()
            if any(_ordinary(w) or w.casefold() in _NOT_AFTER_CUE for w in words):
                continue
            return " ".join(w.title() if w.islower() else w for w in words)
    for rx in _INTRO_CASELESS:
        found = rx.search(text)
        if found:
            return found.group("name")
    return None
