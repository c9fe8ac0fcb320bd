"""A small client for any OpenAI-compatible chat-completions server (Ollama, llama.cpp, LM Studio,
vLLM, OpenAI). Knows no prompt: the domains bring theirs (facts/llm_tasks.py).

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

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
            obj = json.loads(text[start : end + 1])
        except json.JSONDecodeError:
            raise LLMError(f"answer is not JSON: {content[:120]!r}") from None
    if not isinstance(obj, dict):
        raise LLMError(f"answer is not a JSON object: {content[:120]!r}")
    return obj


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
            with urllib.request.urlopen(req, timeout=timeout or s.timeout) as resp:
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
                log.warning(
                    "LLM %s failed (attempt %d of %d): %s; retrying in %.1f s",
                    what,
                    attempt + 1,
                    retries + 1,
                    exc,
                    delay,
                )
                if self.stop.wait(delay):
                    raise LLMError(f"stopped while retrying: {exc}") from None
                delay = min(delay * 2, 30.0)
        raise AssertionError("unreachable")

    def ask_json(
        self,
        what: str,
        system: str,
        user: str,
        parse: Callable[[dict[str, Any]], T],
        retries: int | None = None,
        timeout: float | None = None,
    ) -> T:
        """One system + user prompt; the answer's JSON object through `parse` (which raises LLMError on
        anything unexpected), with retries (see `_with_retries`)."""
        return self._with_retries(what, lambda: parse(parse_json_object(self._post(system, user, timeout))), retries)

    def reachable(self, timeout: float = 2.0) -> bool:
        """Whether the server answers at all (GET <base>/models; any HTTP status counts as an answer)."""
        req = urllib.request.Request(self.settings.base_url.rstrip("/") + "/models", method="GET")
        try:
            with urllib.request.urlopen(req, timeout=timeout):
                return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False
