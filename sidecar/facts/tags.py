"""Find and strip <memory category="...">fact</memory> tags in an LLM reply.

Every memory tag is removed from the reply, valid or not: the user must never see one. The rules,
chosen for what LLMs actually emit:

- Tag names and attribute names are case-insensitive (`<MEMORY CATEGORY="Preference">`), spaces
  inside the tag are allowed (`< memory category = 'x' >`, `</ memory >`), the category value may be
  double-quoted, single-quoted or bare, and is compared lower-cased. Other attributes are ignored.
- Content may span lines; it is saved as one line with single spaces.
- A tag with no category, a category outside the configured set, or empty content is rejected.
- Nested tags: each inner tag is judged on its own; the outer one is rejected (`nested`).
- An opening tag never closed is rejected (`unclosed`) and removed with its text up to the end of
  its line (or the next memory tag), so the half-written fact is not shown either.
- An opening tag cut off before its `>` (a truncated stream) is removed up to the end of its line
  (`unterminated`); a stray `</memory>` (`unmatched_close`) and a self-closing `<memory ... />`
  (`self_closing`) are removed and rejected.
- `<memories>` or `<memory_x>` are other tags and are left alone.

Whitespace around a removed tag is tidied: a tag alone on its line removes the line, a tag between
words leaves one space, a tag before punctuation (of any script: "。", "؟") leaves none, and a tag
glued to Chinese, Japanese or Thai text leaves none either (those scripts put no space between words).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from ..text import written_without_spaces
from .rules import MAX_FACT_CHARS, normalise_category, normalise_text

_OPEN = re.compile(r"<\s*memory(?=[\s>/])([^<>]*)>", re.IGNORECASE)
_OPEN_CUT = re.compile(r"<\s*memory(?=[\s/]|$)[^<>\n]*(?=<|\n|$)", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*memory\s*>", re.IGNORECASE)
_ATTR = re.compile(r"""([A-Za-z_][\w.-]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`/]+))""")
_TOKEN = re.compile(f"{_OPEN.pattern}|{_CLOSE.pattern}|{_OPEN_CUT.pattern}", re.IGNORECASE)


@dataclass(frozen=True)
class Found:
    text: str
    category: str


@dataclass(frozen=True)
class Rejected:
    tag: str  # the raw text removed from the reply (capped)
    reason: str  # stable code: missing_category, unknown_category, empty, too_long, nested, unclosed,
    #              unterminated, unmatched_close, self_closing
    message: str


@dataclass(frozen=True)
class Extraction:
    reply: str
    facts: list[Found]
    rejected: list[Rejected]


def _attrs(raw: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _ATTR.finditer(raw):
        name = m.group(1).lower()
        if name not in out:
            out[name] = next(g for g in (m.group(2), m.group(3), m.group(4)) if g is not None)
    return out


def _cap(raw: str, limit: int = 200) -> str:
    return raw if len(raw) <= limit else raw[: limit - 1] + "…"


def _join(left: str, right: str) -> str:
    """Glue the text around a removed tag back together."""
    lt, rt = left.rstrip(" \t"), right.lstrip(" \t")
    if not lt or lt.endswith("\n"):
        # tag at the start of a line: drop the rest of a line that held only the tag
        if rt.startswith("\r\n"):
            return lt + rt[2:]
        if rt.startswith("\n"):
            return lt + rt[1:]
        return lt + rt
    if not rt or rt[0] in "\r\n":
        return lt + rt
    if rt[0] in ".,;:!?)]}'\"" or lt[-1] in "([{":
        return lt + rt
    if unicodedata.category(rt[0]) in ("Pe", "Pf", "Po") or unicodedata.category(lt[-1]) in ("Ps", "Pi"):
        return lt + rt  # "。", "」", "؟", "«": punctuation of any script
    if (written_without_spaces(lt[-1]) or written_without_spaces(rt[0])) and (lt, rt) == (left, right):
        return lt + rt  # Chinese, Japanese, Thai: no space between words, none added
    return lt + " " + rt


@dataclass
class _Open:
    start: int
    end: int
    raw: str
    attrs: dict[str, str]
    has_child: bool = False


def _judge(reply: str, o: _Open, content: str, close_end: int, categories: Sequence[str]) -> Found | Rejected:
    """What one closed tag yields: a fact, or the reason it is refused."""
    raw = reply[o.start : close_end]
    if o.has_child:
        return Rejected(_cap(raw), "nested", "a memory tag inside another memory tag; the outer tag is not saved")
    cat = o.attrs.get("category")
    text = normalise_text(content)
    if cat is None or not cat.strip():
        return Rejected(_cap(raw), "missing_category", "the tag has no category attribute")
    if normalise_category(cat) not in categories:
        return Rejected(
            _cap(raw), "unknown_category", f"category {cat.strip()!r} is not one of: {', '.join(categories)}"
        )
    if not text:
        return Rejected(_cap(raw), "empty", "the tag has no content")
    if len(text) > MAX_FACT_CHARS:
        return Rejected(_cap(raw), "too_long", f"the fact has {len(text)} characters, over {MAX_FACT_CHARS}")
    return Found(text, normalise_category(cat))


def _remove_spans(reply: str, spans: list[tuple[int, int]]) -> str:
    """The reply without the union of the spans, tidying whitespace at each cut."""
    if not spans:
        return reply
    merged: list[list[int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    segments = [reply[: merged[0][0]]]
    for i, (_s, e) in enumerate(merged):
        segments.append(reply[e : merged[i + 1][0]] if i + 1 < len(merged) else reply[e:])
    out = segments[0]
    for seg in segments[1:]:
        out = _join(out, seg)
    return re.sub(r"\n{3,}", "\n\n", out).strip()


def extract(reply: str, categories: Sequence[str]) -> Extraction:
    # 1. tokens: opening tags, closing tags, cut-off opening tags
    spans: list[tuple[int, int]] = []  # text ranges to remove
    found: list[tuple[int, Found | Rejected]] = []
    stack: list[_Open] = []
    for m in _TOKEN.finditer(reply):
        tok = m.group(0)
        if _CLOSE.fullmatch(tok):
            if not stack:
                found.append((m.start(), Rejected(tok, "unmatched_close", "a closing tag without an opening tag")))
                spans.append((m.start(), m.end()))
                continue
            o = stack.pop()
            if stack:
                stack[-1].has_child = True
            found.append((o.start, _judge(reply, o, reply[o.end : m.start()], m.end(), categories)))
            # the whole tag (with its content) goes; inner spans inside it are covered by it
            spans.append((o.start, m.end()))
        elif tok.endswith(">"):
            attrs_raw = _OPEN.fullmatch(tok).group(1)  # type: ignore[union-attr]
            if attrs_raw.rstrip().endswith("/"):
                if stack:
                    stack[-1].has_child = True
                found.append((m.start(), Rejected(_cap(tok), "self_closing", "a self-closing tag has no content")))
                spans.append((m.start(), m.end()))
                continue
            stack.append(_Open(m.start(), m.end(), tok, _attrs(attrs_raw)))
        else:  # an opening tag cut off before its '>'
            found.append((m.start(), Rejected(_cap(tok), "unterminated", "an opening tag without its closing '>'")))
            spans.append((m.start(), m.end()))

    # 2. opening tags never closed: remove to the end of the line or the next memory tag
    for o in stack:
        nxt = _TOKEN.search(reply, o.end)
        nl = reply.find("\n", o.end)
        stop = min(x for x in (nxt.start() if nxt else len(reply), nl if nl >= 0 else len(reply)))
        found.append(
            (
                o.start,
                Rejected(
                    _cap(reply[o.start : stop]),
                    "unclosed",
                    "an opening tag that is never closed; removed up to the end of its line",
                ),
            )
        )
        spans.append((o.start, stop))

    # 3. remove the union of all spans
    found.sort(key=lambda x: x[0])
    return Extraction(
        _remove_spans(reply, spans),
        [f for _, f in found if isinstance(f, Found)],
        [r for _, r in found if isinstance(r, Rejected)],
    )
