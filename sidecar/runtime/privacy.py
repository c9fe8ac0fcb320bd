"""The one place where text enters: every request that stores text, or has it sent to an LLM, is cleaned here
before its service sees it (private spans dropped, secrets replaced: sidecar/text/secrets.py). Every face hands
its requests to the dispatcher, which calls `clean_request`; import cleans its records with the same
`Redaction` (portable/importer.py)."""

from __future__ import annotations

from typing import Any

from ..text import Redaction
from ..wire import ExtractInlineRequest, RememberRequest, ResolveRequest, StoreRequest, UpdateFactRequest
from ..wire.errors import InvalidRequest

# The text fields of the requests that store text (facts: their text and the reasons kept in their history)
TEXT_FIELDS: dict[type, tuple[str, ...]] = {
    RememberRequest: ("text",),
    ExtractInlineRequest: ("reply",),
    UpdateFactRequest: ("text", "reason"),
    ResolveRequest: ("merged_text", "reason"),
}


def clean_request(request: Any, redaction: Redaction) -> int:
    """Rewrites the request's stored text in place; how many secrets were replaced. InvalidRequest when a text
    that must not be blank is nothing but private spans."""
    if isinstance(request, StoreRequest):
        if request.messages is None:
            assert request.content is not None  # (the model's validator)
            request.content, n = _clean(request.content, redaction, "content")
            return n
        total = 0
        for i, m in enumerate(request.messages):
            m.content, n = _clean(m.content, redaction, f"messages[{i}].content")
            total += n
        return total
    total = 0
    for name in TEXT_FIELDS.get(type(request), ()):
        value = getattr(request, name)
        if isinstance(value, str):
            cleaned, n = _clean(value, redaction, name, blank_ok=name in ("reason", "reply"))
            setattr(request, name, cleaned)
            total += n
    return total


def _clean(text: str, redaction: Redaction, field: str, blank_ok: bool = False) -> tuple[str, int]:
    cleaned, n = redaction.clean(text)
    if not blank_ok and not cleaned.strip():
        raise InvalidRequest(f"field `{field}` is empty once its <private> spans are dropped: nothing to store")
    return cleaned, n
