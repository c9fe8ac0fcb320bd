"""The facts domain's questions to an LLM: a consolidation decision (KEEP / INVALIDATE / MERGE) and
fact extraction from a message, with strict validation of the answers."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Literal, cast

from ..llm import LLMClient, LLMError
from .rules import ACTIONS, Decision, normalise_category, normalise_text

log = logging.getLogger("sidecar.llm")

DECIDE_SYSTEM = """You maintain a memory of short facts about a user. You get an EXISTING fact and a NEW fact about the same user. Decide what to do with the EXISTING fact:
- KEEP: the facts are about different things; both stay.
- INVALIDATE: the NEW fact contradicts or replaces the EXISTING one (e.g. "Lives in New York" then "Moved to Los Angeles"); the existing fact becomes history.
- MERGE: same topic and both still true, so they combine into one fact (e.g. "Owns an Xbox" + "Bought a PS5" -> "Owns both an Xbox and a PS5"); give the combined fact, short and in the third person, in merged_text.
Answer with one JSON object only, no prose: {"action": "KEEP" | "INVALIDATE" | "MERGE", "merged_text": string or null}"""

EXTRACT_SYSTEM = """You extract long-term facts about the author of a chat message, for a memory that helps future conversations.
Only facts about the author that will still be true later: preferences, work, habits, answers they gave. Not passing moods, greetings, opinions about the current conversation, or facts about other people.
Write each fact as a short third-person statement without the author's name (e.g. "Prefers dark roast coffee").
Allowed categories: {categories}.
Answer with one JSON object only, no prose: {{"facts": [{{"text": string, "category": string}}]}}; use {{"facts": []}} when there is nothing worth keeping."""


def parse_decision(obj: dict[str, Any]) -> Decision:
    action = obj.get("action")
    if not isinstance(action, str) or action.strip().upper() not in ACTIONS:
        raise LLMError(f"answer has no valid action (KEEP, INVALIDATE or MERGE): {obj!r:.160}")
    action = action.strip().upper()
    merged = obj.get("merged_text")
    if action == "MERGE":
        if not isinstance(merged, str) or not normalise_text(merged):
            raise LLMError("MERGE answer without merged_text")
        return Decision("MERGE", normalise_text(merged), "llm")
    return Decision(cast(Literal["KEEP", "INVALIDATE"], action), None, "llm")  # (one of ACTIONS)


def parse_extraction(obj: dict[str, Any], categories: Sequence[str]) -> list[tuple[str, str]]:
    facts = obj.get("facts")
    if not isinstance(facts, list):
        raise LLMError(f"answer has no `facts` list: {obj!r:.160}")
    out: list[tuple[str, str]] = []
    for item in facts:
        if not isinstance(item, dict):
            continue
        text, cat = item.get("text"), item.get("category")
        if not isinstance(text, str) or not normalise_text(text) or not isinstance(cat, str):
            log.info("LLM extraction: skipped malformed item %r", item)
            continue
        cat = normalise_category(cat)
        if cat not in categories:
            log.info("LLM extraction: skipped fact with unknown category %r", cat)
            continue
        out.append((normalise_text(text), cat))
    return out


def decide(
    llm: LLMClient, new_text: str, old_text: str, retries: int | None = None, timeout: float | None = None
) -> Decision:
    """KEEP / INVALIDATE / MERGE for one existing fact given a new one."""
    user = json.dumps({"EXISTING": old_text, "NEW": new_text}, ensure_ascii=False)
    return llm.ask_json("decision", DECIDE_SYSTEM, user, parse_decision, retries, timeout)


def extract(
    llm: LLMClient, message: str, categories: Sequence[str], retries: int | None = None
) -> list[tuple[str, str]]:
    """(text, category) facts about the author of `message`."""
    system = EXTRACT_SYSTEM.format(categories=", ".join(categories))
    return llm.ask_json("extraction", system, message, lambda obj: parse_extraction(obj, categories), retries)
