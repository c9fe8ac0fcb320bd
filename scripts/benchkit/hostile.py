"""Hostile requests for the soak (`python scripts/bench.py soak --hostile 0.05`): the shapes that stalled,
bricked or hung the sidecar before issue 64, mixed into ordinary traffic. Each shape is a request (or a raw
line) and the answers it may get: a store that is answered `ok` is an acknowledged memory, and the soak checks
at its end that every acknowledged memory is in an export of the data dir.

Shapes (their weights in SHAPES):
- a Thai letter with 255 combining marks, twice (the tokeniser's step back at its cut), stored and queried;
- 32,000 characters of " and I live in Berlin" and of ", Rex" (the relation reader and mentions);
- U+FDFA repeated, which NFKC turns into 18 characters each, as a query and as a memory;
- memories over --max-content-bytes, a `context` and a `recall` for 1,000 users;
- lines that are not JSON, JSON that is not an object, undecodable bytes, unknown types, wrong field types,
  a `user_id` that tries SQL.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

COMBINING = ("ก" + "\u0e48" * 255) * 2
READER_WORST = (" and I live in Berlin" * 1600)[:32_000]
MENTIONS_WORST = (", Rex" * 6400)[:32_000]
NFKC_GROWS = "\ufdfa" * 20_000  # 20,000 characters, 360,000 after NFKC
OK_OR_ERROR = ("ok", "error")
RESULTS_OR_ERROR = ("results", "error")


@dataclass(frozen=True)
class Hostile:
    """One hostile request: `request` (a dict, or raw bytes without the newline), the answer types it may
    get, and whether an `ok` answer acknowledges a memory (a store)."""

    name: str
    request: dict[str, Any] | bytes
    answers: tuple[str, ...]
    stores: bool = False


def _store(user: str, content: str, name: str) -> Hostile:
    return Hostile(name, {"type": "store", "user_id": user, "content": content}, OK_OR_ERROR, stores=True)


def _query(user: str, text: str, name: str, mode: str | None = None) -> Hostile:
    req: dict[str, Any] = {"type": "query", "user_id": user, "text": text, "limit": 5}
    if mode:
        req["mode"] = mode
    return Hostile(name, req, RESULTS_OR_ERROR)


def _many_users(n: int) -> dict[str, str | None]:
    return {f"user-{k}": None for k in range(n)}


SHAPES: list[tuple[float, Callable[[str], Hostile]]] = [
    (3, lambda u: _store(u, COMBINING, "combining marks stored")),
    (3, lambda u: _query(u, COMBINING, "combining marks queried (keyword)", "keyword")),
    (3, lambda u: _query(u, COMBINING, "combining marks queried (hybrid)")),
    (1, lambda u: _store(u, READER_WORST, "32 KB of 'and I live in Berlin'")),
    (1, lambda u: _store(u, MENTIONS_WORST, "32 KB of ', Rex'")),
    (2, lambda u: _query(u, NFKC_GROWS, "U+FDFA x 20,000 queried")),
    (1, lambda u: _store(u, NFKC_GROWS[:2_000], "U+FDFA x 2,000 stored")),
    (1, lambda u: _store(u, "x" * 1_100_000, "a memory over --max-content-bytes")),
    (
        1,
        lambda u: Hostile(
            "context for 1,000 users",
            {"type": "context", "users": _many_users(1000), "text": "hi"},
            ("context", "error"),
        ),
    ),
    (
        1,
        lambda u: Hostile(
            "recall for 1,000 users", {"type": "recall", "users": _many_users(1000), "text": "hi"}, ("recall", "error")
        ),
    ),
    (
        2,
        lambda u: Hostile(
            "remember with combining marks",
            {"type": "remember", "user_id": u, "text": COMBINING},
            ("remembered", "error"),
        ),
    ),
    (3, lambda u: Hostile("not JSON", b"{not json", ("error",))),
    (2, lambda u: Hostile("a JSON array", b"[1, 2, 3]", ("error",))),
    (2, lambda u: Hostile("undecodable bytes", b"\xff\xfe\x00garbage\x80", ("error",))),
    (2, lambda u: Hostile("unknown type", {"type": "explode", "user_id": u}, ("error",))),
    (2, lambda u: Hostile("wrong field type", {"type": "store", "user_id": u, "content": 42}, ("error",))),
    (2, lambda u: _query("x' OR '1'='1", "anything at all", "a user_id that tries SQL")),
]


def draw(rng: random.Random, user: str) -> Hostile:
    weights = [w for w, _ in SHAPES]
    return rng.choices(SHAPES, weights)[0][1](user)
