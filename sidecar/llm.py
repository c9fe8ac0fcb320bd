"""A small client for any OpenAI-compatible chat-completions server (Ollama, llama.cpp, LM Studio,
vLLM, OpenAI), used for consolidation decisions and fact extraction.

Standard library only (urllib): one POST per call, a timeout per call, retries with exponential
backoff, and strict validation of the JSON the model answers. Every failure (connection, HTTP status,
timeout, a reply that is not the JSON asked for) is an `LLMError`; nothing here raises anything else.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

from .facts import ACTIONS, Decision, normalise_category, normalise_text

log = logging.getLogger("sidecar.llm")
T = TypeVar("T")

MAX_RESPONSE_BYTES = 1 << 20


class LLMError(Exception):
    pass


class _BadRequest(Exception):
    """HTTP 400: maybe the server does not know response_format."""


@dataclass(frozen=True)
class LLMSettings:
    base_url: str  # e.g. http://127.0.0.1:11434/v1 (the part before /chat/completions)
    model: str
    api_key: str | None = None
    timeout: float = 30.0
    retries: int = 2  # extra attempts after the first, for background work
    backoff: float = 1.0  # seconds before the first retry; doubles each time, capped at 30 s


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

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def parse_json_object(content: str) -> dict[str, Any]:
    """The JSON object in a model's answer, tolerating code fences and text around it."""
    text = _FENCE.sub("", content.strip())
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise LLMError(f"answer is not JSON: {content[:120]!r}") from None
        try:
            obj = json.loads(text[start:end + 1])
        except json.JSONDecodeError:
            raise LLMError(f"answer is not JSON: {content[:120]!r}") from None
    if not isinstance(obj, dict):
        raise LLMError(f"answer is not a JSON object: {content[:120]!r}")
    return obj


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
    return Decision(action, None, "llm")


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


class LLMClient:
    def __init__(self, settings: LLMSettings, stop: threading.Event | None = None):
        self.settings = settings
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self.stop = stop or threading.Event()
        # JSON mode is asked for until the server refuses it once (LM Studio, older servers answer 400)
        self.json_mode = True

    def _post(self, system: str, user: str, timeout: float | None = None) -> str:
        try:
            return self._post_once(system, user, self.json_mode, timeout)
        except _BadRequest as exc:
            if not self.json_mode:
                raise LLMError(str(exc)) from None
            log.warning("LLM server refused response_format json_object (%s); asking without it from now on", exc)
            self.json_mode = False
            try:
                return self._post_once(system, user, False, timeout)
            except _BadRequest as exc2:
                raise LLMError(str(exc2)) from None

    def _post_once(self, system: str, user: str, json_mode: bool, timeout: float | None) -> str:
        s = self.settings
        request: dict[str, Any] = {
            "model": s.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": 0,
            "stream": False,
        }
        if json_mode:
            request["response_format"] = {"type": "json_object"}
        body = json.dumps(request).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if s.api_key:
            headers["Authorization"] = f"Bearer {s.api_key}"
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout or s.timeout) as resp:  # noqa: S310 - URL from configuration
                raw = resp.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            detail = exc.read(300).decode("utf-8", "replace") if exc.fp else ""
            message = f"HTTP {exc.code} from {self.url}: {detail.strip()[:200]}"
            if exc.code == 400:
                raise _BadRequest(message) from None
            raise LLMError(message) from None
        except OSError as exc:  # URLError, timeouts and refused connections are all OSErrors
            reason = getattr(exc, "reason", exc)
            raise LLMError(f"cannot reach {self.url}: {reason}") from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise LLMError("answer larger than 1 MiB")
        try:
            payload = json.loads(raw)
            content = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(f"not a chat-completions answer: {raw[:160]!r}") from None
        if not isinstance(content, str):
            raise LLMError("chat-completions answer without text content")
        return content

    def _with_retries(self, what: str, call: Callable[[], T], retries: int | None) -> T:
        """Run `call`; on LLMError wait (backoff, doubling, capped) and try again `retries` extra times."""
        retries = self.settings.retries if retries is None else retries
        delay = self.settings.backoff
        for attempt in range(retries + 1):
            try:
                return call()
            except LLMError as exc:
                if attempt >= retries:
                    raise
                log.warning("LLM %s failed (attempt %d of %d): %s; retrying in %.1f s", what, attempt + 1,
                            retries + 1, exc, delay)
                if self.stop.wait(delay):
                    raise LLMError(f"stopped while retrying: {exc}") from None
                delay = min(delay * 2, 30.0)
        raise AssertionError("unreachable")

    def decide(self, new_text: str, old_text: str, retries: int | None = None,
               timeout: float | None = None) -> Decision:
        """KEEP / INVALIDATE / MERGE for one existing fact given a new one."""
        user = json.dumps({"EXISTING": old_text, "NEW": new_text}, ensure_ascii=False)
        return self._with_retries(
            "decision", lambda: parse_decision(parse_json_object(self._post(DECIDE_SYSTEM, user, timeout))), retries)

    def extract(self, message: str, categories: Sequence[str], retries: int | None = None) -> list[tuple[str, str]]:
        """(text, category) facts about the author of `message`."""
        system = EXTRACT_SYSTEM.format(categories=", ".join(categories))
        return self._with_retries(
            "extraction", lambda: parse_extraction(parse_json_object(self._post(system, message)), categories),
            retries)
