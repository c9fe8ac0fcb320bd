"""Secrets never stored, private spans dropped: what a text becomes before anything stores it or sends it to an LLM
(pure; docs/privacy.md).

`Redaction.clean(text)` (the `--redact` setting: on, off, or on but for the kinds it keeps) first drops every
`<private>...</private>` span (tags and what is between them; an unclosed one runs to the end of the text, nested
ones to their outermost close, a stray close tag is dropped alone), then replaces each known secret shape by a typed
placeholder, `[redacted: <kind>]`, and says how many it replaced.

Hand-written, not a detector library: detect-secrets (the well-kept offline one) is built to scan source files
line by line for a yes/no, has no detector for Anthropic or Google keys, card numbers, IBANs or passwords stated in
words in any language, and its keyword and entropy plugins fire on ordinary prose (precision first here). The
shapes below are the providers' published prefixes and lengths; card numbers pass Luhn and a network's prefix, IBANs
their country's length and the mod-97 check, so a random word or number is not eaten.

Linear time on any input (a 1 MB line of key-like text is one of the tests): every pattern starts at a token's
first character (a look-behind refuses the middle of a longer token), its runs are possessive (`{20,}+`, never
given back) or bounded, and the private-span scan is one pass over its tags.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

PLACEHOLDER = "[redacted: {}]"

_TOKEN = "A-Za-z0-9_\\-"
_START = f"(?<![{_TOKEN}])"  # not inside a longer token


def _mixed(value: str) -> bool:
    """A random key: has a digit and a letter."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card_network(digits: str) -> bool:
    """The issuer prefixes and lengths of the card networks people paste (Visa, Mastercard, Amex, Discover, JCB,
    Diners, UnionPay, Maestro)."""
    n = len(digits)
    two, four = int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)  # Visa
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return n == 16  # Mastercard
    if two in (34, 37):
        return n == 15  # Amex
    if digits.startswith(("6011", "65")) or 644 <= int(digits[:3]) <= 649:
        return 16 <= n <= 19  # Discover
    if 3528 <= four <= 3589:
        return 16 <= n <= 19  # JCB
    if two in (36, 38, 39) or 300 <= int(digits[:3]) <= 305:
        return 14 <= n <= 19  # Diners
    if two == 62:
        return 16 <= n <= 19  # UnionPay
    if two in (50, 56, 57, 58, 63, 67):
        return 12 <= n <= 19  # Maestro
    return False


def _card(value: str) -> bool:
    seps = {c for c in value if not c.isdigit()}
    if len(seps) > 1:  # "4111 1111-1111 1111": not one card's writing
        return False
    digits = value.replace(" ", "").replace("-", "")
    if not 13 <= len(digits) <= 19 or len(set(digits)) < 2:
        return False
    if seps:  # written in groups of 4 to 6 (Amex: 4-6-5), the last one shorter
        groups = value.split(seps.pop())
        if any(not 4 <= len(g) <= 6 for g in groups[:-1]) or not 1 <= len(groups[-1]) <= 6:
            return False
    return _card_network(digits) and _luhn(digits)


# The length of each country's IBAN (the SWIFT registry)
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29, "BY": 28,
    "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
    "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
    "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
    "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15,
    "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19,
    "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip


def _iban_ok(compact: str) -> bool:
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


class Lazy:
    """A pattern compiled at its first use: compiling them all at import was 7 ms of every start-up, for a
    sidecar that may serve queries only."""

    def __init__(self, source: str, flags: int = 0):
        self.source, self.flags = source, flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled

    def finditer(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text, pos, endpos)

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.search(text, pos)

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.match(text, pos)


class Shape(NamedTuple):
    kind: str
    pattern: Lazy
    hints: tuple[str, ...]  # one of these is in every match: a text without any is not searched
    check: Callable[[str], bool] = lambda _v: True


def _shape(kind: str, hints: tuple[str, ...], pattern: str, check: Callable[[str], bool] = lambda _v: True) -> Shape:
    return Shape(kind, Lazy(pattern), hints, check)


SHAPES: tuple[Shape, ...] = (
    _shape("private key", ("PRIVATE KEY",), r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"),
    _shape("anthropic key", ("sk-ant-",), _START + r"sk-ant-[A-Za-z0-9_\-]{20,}+", _mixed),
    _shape("openai key", ("sk-",), _START + r"sk-(?!ant-)[A-Za-z0-9_\-]{20,}+", _mixed),
    _shape(
        "aws access key id",
        ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA"),
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}(?![A-Za-z0-9])",
    ),
    _shape(
        "github token",
        ("gh", "github_pat_"),
        _START + r"(?:gh[pousr]_[A-Za-z0-9]{36,}+|github_pat_[A-Za-z0-9_]{22,}+)",
        _mixed,
    ),
    _shape("gitlab token", ("gl",), _START + r"gl(?:pat|dt|rt|ptt|cbt|ft|imt|soat|oas)-[A-Za-z0-9_\-]{20,}+", _mixed),
    _shape(
        "slack token",
        ("xox", "xapp-", "hooks.slack.com"),
        _START + r"(?:xox[abposrec]-[A-Za-z0-9\-]{10,}+|xapp-[0-9]-[A-Za-z0-9\-]{10,}+"
        r"|https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}+)",
        _mixed,
    ),
    _shape("stripe key", ("_live_", "_test_"), _START + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}+", _mixed),
    _shape("google api key", ("AIza",), _START + r"AIza[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_\-])"),
    _shape("jwt", ("eyJ",), _START + r"eyJ[A-Za-z0-9_\-]{8,}+\.eyJ[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}+"),
    _shape("card number", tuple("0123456789"), r"(?<![\w.,\-])(?:[0-9][ \-]?){11,18}[0-9](?![\w\-]|[.,][0-9])", _card),
)

_AWS_SECRET = Lazy(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_SECRET_KEYWORD = Lazy(r"(?i:aws_?secret(?:_?access)?_?key)[\"']?\s*[:=]\s*[\"']?")
_AWS_NEAR = 200  # characters after (or before) an access key id where its secret key is looked for
_IBAN = Lazy(r"(?<![A-Za-z0-9])([A-Z]{2})[0-9]{2}(?: ?[A-Z0-9]){10,30}+")
_KEY_END = Lazy(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_KEY_BODY = Lazy(r"(?:\s*+[A-Za-z0-9+/=]{16,}+)*+")  # base64 lines


def _aws_secret(value: str) -> bool:
    return any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)


# ------------------------------------------------------------------ passwords stated in words

# The word for a password (and "my password") in the languages keyword search stems, and a few more; then what
# says "is" in each. Case-insensitive.
_PW_WORDS = (
    # en
    r"password|passwd|pwd|pw|passcode|passphrase|pin(?: code| number)?|wifi key",  # (a pin: digits only)
    # de, nl, sv, da, no, fi, pl, cs, hu, ro, it, tr, id
    r"passwort|kennwort|wachtwoord|lösenord|losenord|adgangskode|kodeord|passord|salasana|salasanani|hasło|haslo"
    r"|heslo|jelszó|jelszavam|parola|parolă|şifre|şifrem|şifremiz|sifre|sifrem|kata sandi|sandi"
    r"|passordet|adgangskoden|kodeordet|lösenordet|wachtwoordje",
    # fr, es, pt, ca
    r"mot de passe|mdp|contraseña|contrasena|clave|senha|palavra-passe|contrasenya",
    # ru, el, ar, hi
    r"пароль|паролем|κωδικός|κωδικός πρόσβασης|συνθηματικό|كلمة المرور|كلمة السر|पासवर्ड",
)
_PW_COPULA = r"is|was|ist|lautet|war|est|c'est|es|era|é|e|è|är|er|on|to|jest|brzmi|je|este|adalah|это|είναι|هي"
# what may stand between the word and its "is": "password for the router", "clave del wifi", "kata sandi saya"
_PW_FOR = (
    r"for|of|on|to|für|von|vom|pour|de|du|des|del|della|da|para|per|voor|van|för|til|do|dla|от|для|на|saya|aku|anda"
)
_PW_CJK = r"密码|密碼|パスワード|비밀번호|암호"
_SP = r"[^\S\n]"  # a space, not a line break
_PASSWORD = Lazy(
    r"(?i:(?<!\w)(?P<word>" + "|".join(_PW_WORDS) + r"))(?!\w)"
    rf"(?:{_SP}+(?i:{_PW_FOR})(?:{_SP}+[^\s:=.!?]{{1,30}}){{0,3}})?"  # "password for the wifi", not past a sentence
    rf"(?P<sep>{_SP}*+[:=]{_SP}*+|'s{_SP}++|{_SP}+(?i:{_PW_COPULA})(?:{_SP}*:)?{_SP}++|{_SP}++|—{_SP}*+)"
    r"(?P<value>\"[^\"\n]{3,100}\"|'[^'\n]{3,100}'|“[^”\n]{3,100}”|«[^»\n]{3,100}»|[^\s\"'“«]{1,128}+)"
    rf"|(?:{_PW_CJK})(?P<csep>是|は|는|은|:|：|=){_SP}*+(?P<cjk>[!-~]{{4,128}}+)"
)
_PW_TRAILING = ".,;:)!?"
# one of these is in every password match (lower case): a text without any is not searched
_PW_HINTS = (
    "pass", "pw", "pin", "wort", "word", "ord", "kode", "sana", "has", "hesl", "jelsz", "parol", "şifre", "sifre",
    "sandi", "mdp", "contras", "clave", "senha", "пароль", "κωδικ", "συνθηματ", "كلمة", "पासवर्ड", "密", "パスワード",
    "비밀번호", "암호", "key",
)  # fmt: skip


def _password_hint(text: str) -> bool:
    low = text.lower()
    return any(h in low for h in _PW_HINTS)


def _password_like(value: str, stated: bool, last: bool) -> bool:
    """Does this word look like a password and not like the next word of a sentence: with a digit, a symbol or a
    capital inside; a plain word only after a colon or "=" ("pw: sunshine") and at the end of its sentence: after
    "is" a plain word is as often the next word of the sentence ("das Passwort ist abgelaufen")."""
    if len(value) < 4 or value.lower().startswith(("http://", "https://", "www.")):  # "password: https://…/reset"
        return False
    if any(c.isdigit() for c in value) or any(not c.isalnum() for c in value) or any(c.isupper() for c in value[1:]):
        return True
    return stated and last and value.isalpha() and len(value) >= 6


def _passwords(text: str) -> Iterator[tuple[int, int]]:
    for m in _PASSWORD.finditer(text):
        if m.group("cjk") is not None:
            start, end = m.span("cjk")
            stated = True
        else:
            start, end = m.span("value")
            sep = m.group("sep")
            if text[start] in "\"'“«":
                yield start + 1, end - 1  # a quoted password: the quotes stay
                continue
            stated = ":" in sep or "=" in sep
        stripped = text[start:end].rstrip(_PW_TRAILING)
        end = start + len(stripped)
        after = text[end : end + 2]
        last = after[:1] in ("", "\n") or (after[:1] in (".", "!", "?") and after[1:2] in ("", " ", "\n"))
        if m.group("word") is not None and m.group("word").lower().startswith("pin") and not stripped.isdigit():
            continue  # "a spiderman pin on your purse": a PIN is digits
        if _password_like(stripped, stated, last):
            yield start, end


# ------------------------------------------------------------------ finding and replacing

KINDS: tuple[str, ...] = (
    *(s.kind for s in SHAPES),
    "aws secret key",
    "iban",
    "password",
)


def _ibans(text: str) -> Iterator[tuple[int, int]]:
    for m in _IBAN.finditer(text):
        length = IBAN_LENGTHS.get(m.group(1))
        if length is None:
            continue
        # walk the match to the country's length (spaces between groups skipped), then want no more of it
        count, end = 0, m.start()
        for i in range(m.start(), m.end()):
            if text[i] != " ":
                count += 1
                if count == length:
                    end = i + 1
                    break
        if count < length or (end < len(text) and text[end].isalnum()):
            continue
        compact = text[m.start() : end].replace(" ", "")
        if _iban_ok(compact):
            yield m.start(), end


def _key_blocks(text: str, begin: Lazy) -> Iterator[tuple[int, int]]:
    """A private key block: from its BEGIN line to its END line, or without one, to the end of the base64 after
    it. Each END line is found once (a text of many BEGIN lines stays linear)."""
    ends = [m.end() for m in _KEY_END.finditer(text)]
    pos, e = 0, 0
    while (m := begin.search(text, pos)) is not None:
        while e < len(ends) and ends[e] - 1 < m.end():
            e += 1
        end = ends[e] if e < len(ends) else _KEY_BODY.match(text, m.end()).end()  # type: ignore[union-attr]
        yield m.start(), end
        pos = end


def _aws_secrets(text: str, ids: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    for start, end in ids:
        lo, hi = max(0, start - _AWS_NEAR), min(len(text), end + _AWS_NEAR)
        for m in _AWS_SECRET.finditer(text, lo, hi):
            if _aws_secret(m.group()):
                yield m.span()
    for k in _AWS_SECRET_KEYWORD.finditer(text):
        found = _AWS_SECRET.match(text, k.end())
        if found is not None and _aws_secret(found.group()):
            yield found.span()


def find(text: str, keep: Iterable[str] = ()) -> list[tuple[int, int, str]]:
    """The secrets in a text, as (start, end, kind), in order and not overlapping (the earlier, then the longer
    one wins: a JWT inside a URL is the JWT), leaving out the kinds in `keep`."""
    kept = frozenset(keep)
    spans: list[tuple[int, int, str]] = []
    aws_ids: list[tuple[int, int]] = []
    for shape in SHAPES:
        if shape.kind in kept or not any(h in text for h in shape.hints):
            continue
        if shape.kind == "private key":
            spans.extend((s, e, shape.kind) for s, e in _key_blocks(text, shape.pattern))
            continue
        for m in shape.pattern.finditer(text):
            if shape.check(m.group()):
                spans.append((*m.span(), shape.kind))
                if shape.kind == "aws access key id":
                    aws_ids.append(m.span())
    if "aws secret key" not in kept:
        spans.extend((s, e, "aws secret key") for s, e in _aws_secrets(text, aws_ids))
    if "iban" not in kept:
        spans.extend((s, e, "iban") for s, e in _ibans(text))
    if "password" not in kept and _password_hint(text):
        spans.extend((s, e, "password") for s, e in _passwords(text))
    spans.sort(key=lambda s: (s[0], -s[1]))
    out: list[tuple[int, int, str]] = []
    for span in spans:
        if out and span[0] < out[-1][1]:
            continue
        out.append(span)
    return out


def redact(text: str, keep: Iterable[str] = ()) -> tuple[str, int]:
    """The text with each secret replaced by `[redacted: <kind>]`, and how many were."""
    spans = find(text, keep)
    if not spans:
        return text, 0
    parts: list[str] = []
    at = 0
    for start, end, kind in spans:
        parts.append(text[at:start])
        parts.append(PLACEHOLDER.format(kind))
        at = end
    parts.append(text[at:])
    return "".join(parts), len(spans)


# ------------------------------------------------------------------ private spans

_PRIVATE_TAG = Lazy(r"<(/?)private>", re.IGNORECASE)


def strip_private(text: str) -> str:
    """The text without its `<private>...</private>` spans: the tags and what is between them dropped, the rest
    kept. Nested spans end at the outermost close; an unclosed one runs to the end; a close tag with no open one is
    dropped alone. Where a span stood between two spaces, one space stays."""
    if "<" not in text:
        return text
    parts: list[str] = []
    depth = 0
    at = 0
    for m in _PRIVATE_TAG.finditer(text):
        closing = bool(m.group(1))
        if depth == 0:
            _join(parts, text[at : m.start()])
            if not closing:
                depth = 1
        elif closing:
            depth -= 1
        else:
            depth += 1
        at = m.end()
    if depth == 0:
        _join(parts, text[at:])
    return "".join(parts)


def _join(parts: list[str], piece: str) -> None:
    if parts and parts[-1][-1:] in (" ", "\t") and piece[:1] in (" ", "\t"):
        piece = piece.lstrip(" \t")
    if piece:
        parts.append(piece)


# ------------------------------------------------------------------ the setting


@dataclass(frozen=True)
class Redaction:
    """`--redact`: on (every kind), off, or on but for the kinds kept."""

    enabled: bool = True
    keep: frozenset[str] = frozenset()

    def clean(self, text: str) -> tuple[str, int]:
        """What a text becomes before it is stored or sent: private spans dropped, then (unless off) secrets
        replaced; and how many secrets were."""
        text = strip_private(text)
        if not self.enabled:
            return text, 0
        return redact(text, self.keep)

    def __str__(self) -> str:
        if not self.enabled:
            return "off"
        return "on" if not self.keep else "keep=" + ",".join(sorted(self.keep))


def parse_redact(value: str) -> Redaction:
    """`--redact`: `on` (the default), `off`, or `keep=KIND,KIND` (those kinds stored as written; the kinds are
    `KINDS`, spaces written as `-` or `_` also accepted)."""
    v = value.strip()
    low = v.lower()
    if low in ("on", "true", "1", "yes", ""):
        return Redaction()
    if low in ("off", "false", "0", "no"):
        return Redaction(enabled=False)
    if low.startswith("keep="):
        kinds = [k.strip().replace("-", " ").replace("_", " ") for k in low[5:].split(",") if k.strip()]
        unknown = [k for k in kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"unknown kind {unknown[0]!r}; the kinds are: {', '.join(KINDS)}")
        return Redaction(keep=frozenset(kinds))
    raise ValueError(f"expected on, off or keep=KIND,KIND, got {v!r}")


REDACT_ON = Redaction()  # the default: every kind replaced


def warm() -> None:
    """Compile every pattern now (about 6 ms), off the path of the first store: the background warm-up calls it."""
    for pattern in (*(shape.pattern for shape in SHAPES), _AWS_SECRET, _AWS_SECRET_KEYWORD, _IBAN, _KEY_END):
        pattern.compiled  # noqa: B018 - compiled on first read
    for pattern in (_KEY_BODY, _PASSWORD, _PRIVATE_TAG):
        pattern.compiled  # noqa: B018
