"""The deep entity tier: an OpenAI-compatible LLM, off by default (`--graph-llm`), asked in the
background about the episodes the fast tier flags (a named mention, or a first-person statement),
for the entities it names and the relations it states. Answers are validated strictly: only names,
types and predicates are taken (never ids), anything else is dropped; a failure or a reply that is
not the JSON asked for is logged and counted, and the episode keeps what the fast tier found.

The queue is bounded (the oldest job is dropped past DEEP_QUEUE_MAX, counted); the client retries with
backoff. Jobs not run at shutdown are not redone at the next start: the fast tier's graph stands.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..llm import LLMClient, LLMError
from ..llm.worker import JobQueue

log = logging.getLogger("sidecar.graph")

DEEP_QUEUE_MAX = 1_000
TYPES = {"person", "place", "organisation", "organization", "thing", "event", "other"}
MAX_ENTITIES = 20
LLM_CONFIDENCE = 0.8

SYSTEM = """You read one chat message and list what a personal memory should know about the people, places, organisations, things (products, works, pets) and events it names, and what the author states about themself.
Answer with one JSON object only, no prose:
{"entities": [{"name": string, "type": "person"|"place"|"organisation"|"thing"|"event"|"other"}],
 "relations": [{"predicate": string, "object": string}]}
Entities: only proper names that appear in the message, as written; no pronouns, no common nouns, no dates.
Relations: only what the AUTHOR states about themself (subject is always the author), with a snake_case predicate such as lives_in, works_at, job_title, studies_at, partner, sister, brother, mother, father, son, daughter, relative, friend, colleague, has_pet, likes, dislikes, born_in, birthday, or another short one; the object as written in the message.
The message may be in any language: read it in its own language; predicates stay the snake_case names above, and names and objects are copied exactly as written in the message (never translated or romanised).
Use {"entities": [], "relations": []} when there is nothing."""


@dataclass(frozen=True)
class DeepJob:
    user_id: str
    episode_id: str
    content: str
    username: str | None


def parse(obj: dict[str, Any], content: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(name, type) entities that occur in the message and (predicate, object) relations; raises
    LLMError when the answer is not of the shape asked for."""
    ents, rels = obj.get("entities"), obj.get("relations", [])
    if not isinstance(ents, list) or not isinstance(rels, list):
        raise LLMError(f"answer has no `entities`/`relations` lists: {obj!r:.160}")
    folded = content.casefold()
    entities = []
    for e in ents[:MAX_ENTITIES]:
        if not isinstance(e, dict) or not isinstance(e.get("name"), str) or e.get("type") not in TYPES:
            continue
        name = re.sub(r"\s+", " ", e["name"]).strip()
        if 1 < len(name) <= 80 and name.casefold() in folded:  # invented names are dropped
            entities.append((name, "organisation" if e["type"] == "organization" else e["type"]))
    relations = []
    for r in rels[:MAX_ENTITIES]:
        if not isinstance(r, dict) or not isinstance(r.get("predicate"), str) or not isinstance(r.get("object"), str):
            continue
        predicate = re.sub(r"[^a-z_]", "", r["predicate"].strip().lower().replace(" ", "_"))[:40]
        obj_text = re.sub(r"\s+", " ", r["object"]).strip()
        if predicate and 0 < len(obj_text) <= 80 and obj_text.casefold() in folded:
            relations.append((predicate, obj_text))
    return entities, relations


class DeepTier:
    """One worker thread. `apply(job, entities, relations)` merges an answer into the graph."""

    def __init__(self, llm: LLMClient, apply: Callable[[DeepJob, list, list], None]):
        self.llm = llm
        self.apply = apply
        self.done = self.failed = 0
        self._reachable: tuple[float, bool | None] = (0.0, None)  # (when checked, whether the LLM answered)
        self.jobs = JobQueue(self._one, "graph-llm", DEEP_QUEUE_MAX, drop_oldest=True)

    @property
    def dropped(self) -> int:
        return self.jobs.dropped

    def submit(self, job: DeepJob) -> None:
        self.jobs.submit(job)

    def forget(self, user_id: str) -> None:
        self.jobs.forget(lambda j: j.user_id == user_id)

    def pending(self) -> int:
        return self.jobs.pending()

    def health(self) -> dict[str, Any]:
        """Whether its server answers (checked at most every 30 s), and its jobs."""
        at, ok = self._reachable
        if time.monotonic() - at > 30:
            ok = self.llm.reachable()
            self._reachable = (time.monotonic(), ok)
        return {
            "configured": True,
            "reachable": ok,
            "pending": self.pending(),
            "done": self.done,
            "failed": self.failed,
            "dropped": self.dropped,
        }

    def stop(self) -> None:
        self.jobs.stop()

    def _one(self, job: DeepJob) -> None:
        try:
            user = json.dumps(
                {"author": job.username or "the author", "message": job.content[:2000]}, ensure_ascii=False
            )
            entities, relations = self.llm.ask_json(
                "graph extraction", SYSTEM, user, lambda obj: parse(obj, job.content)
            )
            self.apply(job, entities, relations)
            self.done += 1
        except LLMError as exc:
            self.failed += 1
            log.warning("graph LLM tier gave up on episode %s: %s", job.episode_id, exc)
        except Exception:
            self.failed += 1
            log.exception("graph LLM tier failed on episode %s", job.episode_id)
