"""Domain rules of facts: consolidation (duplicate rule, candidates, KEEP / INVALIDATE / MERGE by the
LLM or the host), inline memory tags, reading facts, history, corrections and context blocks.

Takes typed requests, returns typed responses, raises SidecarError; testable without pipes.
Thread-safe: the background extraction worker and the request loop both call `consolidate`.
LLM calls are made outside the write lock, and decisions are applied only to candidates that are
still active when the answer comes back.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, overload

import numpy as np

from ..embedding.embedder import Embedder
from ..llm import LLMClient, LLMError
from ..storage import sql_in, sql_num, sql_str
from ..wire import (
    Consolidation,
    DecisionOut,
    ExtractedResponse,
    ExtractInlineRequest,
    FactEventOut,
    FactHistoryRequest,
    FactHistoryResponse,
    FactOut,
    FactResponse,
    FactsRequest,
    FactsResponse,
    ForgetFactRequest,
    InstructionsResponse,
    MemoryInstructionsRequest,
    OkResponse,
    RecallRequest,
    RecallResponse,
    RejectedTag,
    RememberedResponse,
    RememberRequest,
    ResolvedResponse,
    ResolveRequest,
    UpdateFactRequest,
    UserFacts,
)
from ..wire.errors import InvalidRequest, NotFound, TooLarge, quote
from . import llm_tasks
from .context import ContextBlocks
from .rules import (
    CANDIDATE_THRESHOLD,
    DUPLICATE_THRESHOLD,
    MAX_CANDIDATES,
    MAX_FACT_CHARS,
    Decision,
    is_duplicate,
    memory_instructions,
    normalise_category,
    normalise_text,
    plan_decisions,
)
from .store import FactStore
from .tags import extract

log = logging.getLogger("sidecar.facts")

SAME_FACT_KEPT = 4_096  # `same_fact` answers kept (all dropped when full)
SAME_FACT_CHARS = 300  # only for texts up to this long (a relation's object has no length limit)
SAME_FACT_TTL = 60.0  # seconds an answer is kept at most (on a shared store: runtime/app.py)

DEFAULT_CONFIDENCE = {"manual": 1.0, "chat": 0.8, "extraction": 0.7}


@overload
def _ts(value: float) -> int: ...
@overload
def _ts(value: None) -> None: ...
def _ts(value: float | None) -> int | None:
    return None if value is None else math.floor(value)


class FactService(ContextBlocks):
    def __init__(
        self,
        embedder: Embedder,
        facts: FactStore,
        *,
        categories: Sequence[str],
        duplicate_threshold: float = DUPLICATE_THRESHOLD,
        candidate_threshold: float = CANDIDATE_THRESHOLD,
        llm: LLMClient | None = None,
        max_limit: int = 100,
        max_users: int = 100,
        clock: Callable[[], float] = time.time,
    ):
        self.embedder = embedder
        self.facts = facts
        self.categories = tuple(categories)
        self.duplicate_threshold = duplicate_threshold
        self.candidate_threshold = candidate_threshold
        self.llm = llm
        self.max_limit = max_limit
        self.max_users = max_users  # users in one recall or context (one search each)
        self.clock = clock
        self.write_lock = threading.RLock()
        self._same: dict[tuple[str, str], tuple[int, float, str | None]] = {}  # `same_fact`'s recent answers
        self.answers_ttl = SAME_FACT_TTL

    # ------------------------------------------------------------------ helpers

    def set_names(self, names: Mapping[str, str | None]) -> None:
        clean = {u: n.strip() for u, n in names.items() if isinstance(n, str) and n.strip()}
        if clean:
            self.facts.set_names(clean)

    def _category(self, category: str) -> str:
        c = normalise_category(category)
        if c not in self.categories:
            raise InvalidRequest(
                f"category {quote(category)} is not one of: {', '.join(self.categories)} (--fact-categories)"
            )
        return c

    def _text(self, text: str) -> str:
        t = normalise_text(text)
        if len(t) > MAX_FACT_CHARS:
            raise TooLarge(f"fact has {len(t)} characters, over the limit of {MAX_FACT_CHARS}")
        return t

    def text_over_limit(self, text: str) -> str | None:
        """Why a fact's text is too long (an imported one: the rule `remember` has), or None."""
        try:
            self._text(text)
        except TooLarge as exc:
            return exc.message
        return None

    def _out(self, row: dict[str, Any], similarity: float | None = None) -> FactOut:
        return FactOut(
            id=row["id"],
            user_id=row["user_id"],
            username=self.facts.name(row["user_id"]),
            text=row["text"],
            category=row["category"],
            source=row["source"],
            confidence=round(float(row["confidence"]), 6),
            message_id=row.get("message_id"),
            created_at=_ts(row["created_at"]),
            updated_at=_ts(row["updated_at"]),
            active=row["active"],
            superseded_by=row.get("superseded_by"),
            superseded_at=_ts(row.get("superseded_at")),
            superseded_reason=row.get("superseded_reason"),
            similarity=None if similarity is None else round(similarity, 6),
        )

    def _get(self, fact_id: str, user_id: str | None = None) -> dict[str, Any]:
        owner = "" if user_id is None else f" AND user_id = {sql_str(user_id)}"  # another user's: not_found
        rows = self.facts.get(f"id = {sql_str(fact_id)}{owner}")
        if not rows:
            raise NotFound(f"no fact with id {quote(fact_id)}")
        return rows[0]

    def _candidates(self, user_id: str, vector: np.ndarray) -> list[dict[str, Any]]:
        rows = self.facts.search(vector, f"user_id = {sql_str(user_id)} AND active = true", MAX_CANDIDATES)
        return [r for r in rows if r["similarity"] >= self.candidate_threshold]

    def same_fact(self, user_id: str, text: str) -> str | None:
        """The id of the user's active fact that states `text` (similarity at the duplicate threshold).

        The graph builder asks this for every relation it finds, again each time one is stated again (an
        embedding and a table search, about 9 ms beside requests: docs/graph.md, "Crash safety and speed"), so
        an answer is kept while this process writes no fact, for `answers_ttl` seconds (other sidecars)."""
        key, changes, now = (user_id, text), self.facts.changes, time.monotonic()
        kept = self._same.get(key)
        if kept is not None and kept[0] == changes and now - kept[1] < self.answers_ttl:
            return kept[2]
        where = f"user_id = {sql_str(user_id)} AND active = true"
        rows = self.facts.search_unlocked(self.embedder.embed_passage(text), where, 1)  # compared with stored facts
        found = rows[0]["id"] if rows and rows[0]["similarity"] >= self.duplicate_threshold else None
        if len(self._same) >= SAME_FACT_KEPT:
            self._same.clear()
        if len(text) <= SAME_FACT_CHARS:  # `changes` as read before the search: a write meanwhile voids it
            self._same[key] = (changes, now, found)
        return found

    @staticmethod
    def _event(fact: dict[str, Any], action: str, **extra: Any) -> dict[str, Any]:
        return {
            "id": str(uuid.uuid4()),
            "fact_id": fact["id"],
            "user_id": fact["user_id"],
            "action": action,
            "text": fact["text"],
            **extra,
        }

    # ------------------------------------------------------------------ consolidation

    def consolidate(
        self,
        user_id: str,
        text: str,
        category: str,
        source: str,
        confidence: float,
        message_id: str | None,
        *,
        llm_retries: int = 0,
        background: bool = False,
        wanted: Callable[[], bool] | None = None,
    ) -> Consolidation | None:
        """Store one new fact unless it duplicates an active one, and settle it against its candidates.

        On the request path (background=False) all LLM decisions share one --llm-timeout budget and are
        tried once, so a request never waits longer than that for the LLM. `wanted` is checked under the
        write lock before anything is written: background work for a user forgotten meanwhile stops."""
        text = self._text(text)
        vector = self.embedder.embed_passage(text)
        with self.write_lock:
            if wanted is not None and not wanted():
                return None
            found = self._candidates(user_id, vector)
            scripts = self.facts.model_scripts
            dup = next(
                (c for c in found if is_duplicate(text, c["text"], c["similarity"], self.duplicate_threshold, scripts)),
                None,
            )
            if dup is not None:
                return self._confirm(dup, confidence)
            if self.llm is None or not found:
                return self._add(user_id, text, category, source, confidence, message_id, vector, found)
        # ask the LLM without holding the lock; each candidate that gets no answer is left to the host
        decisions: list[tuple[dict[str, Any], Decision | None]] = []
        error: str | None = None
        deadline = None if background else time.monotonic() + self.llm.settings.timeout
        for c in found:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left < 0.05:
                error = f"no time left within --llm-timeout ({self.llm.settings.timeout:g} s)"
                decisions.append((c, None))
                continue
            try:
                decisions.append((c, llm_tasks.decide(self.llm, text, c["text"], retries=llm_retries, timeout=left)))
            except LLMError as exc:
                log.warning("LLM could not decide about fact %s: %s; the host decides", c["id"], exc)
                error = str(exc)
                decisions.append((c, None))
        with self.write_lock:
            if wanted is not None and not wanted():
                return None
            result = self._add(user_id, text, category, source, confidence, message_id, vector, [])
            new = self._get(result.fact.id)
            planned = iter(plan_decisions([d for _, d in decisions if d is not None]))
            settled = [(c, next(planned) if d is not None else None) for c, d in decisions]
            pending: list[FactOut] = []
            applied: list[DecisionOut] = []
            survivor = new  # after a MERGE, the merged fact: later decisions point at it
            for c, d in settled:
                current = self.facts.get(f"id = {sql_str(c['id'])}")
                if not current or not current[0]["active"]:
                    continue  # changed meanwhile (another decision or the host): nothing to do
                if d is None:
                    pending.append(self._out(current[0], c["similarity"]))
                    continue
                survivor = self._apply(survivor, current[0], d) or survivor
                applied.append(
                    DecisionOut(
                        candidate_id=c["id"],
                        action=d.action,
                        decided_by=d.decided_by,
                        merged_text=d.merged_text,
                        reason=d.reason,
                    )
                )
            action: Literal["merged", "added"] = "merged" if survivor["id"] != new["id"] else "added"
            return Consolidation(
                action=action,
                fact=self._out(self._get(survivor["id"])),
                candidates=pending,
                decisions=applied,
                llm_error=error,
            )

    def _confirm(self, old: dict[str, Any], confidence: float) -> Consolidation:
        now = self.clock()
        conf = max(float(old["confidence"]), confidence)
        self.facts.update(sql_str(old["id"]), {"updated_at": now, "confidence": conf})
        self.facts.add_events(
            [
                self._event(
                    old,
                    "confirmed",
                    decided_by="rule",
                    at=now,
                    reason=f"near-identical new fact (similarity {old['similarity']:.3f})",
                )
            ]
        )
        return Consolidation(action="duplicate", fact=self._out(self._get(old["id"]), old["similarity"]))

    def _add(
        self,
        user_id: str,
        text: str,
        category: str,
        source: str,
        confidence: float,
        message_id: str | None,
        vector: np.ndarray,
        candidates: list[dict[str, Any]],
    ) -> Consolidation:
        now = self.clock()
        row = {
            "id": str(uuid.uuid4()),
            "user_id": user_id,
            "text": text,
            "category": category,
            "source": source,
            "confidence": float(confidence),
            "message_id": message_id,
            "created_at": now,
            "updated_at": now,
            "active": True,
            "superseded_by": None,
            "superseded_at": None,
            "superseded_reason": None,
        }
        self.facts.add([row], vector[None, :])
        self.facts.add_events([self._event(row, "created", decided_by=source, at=now)])
        return Consolidation(
            action="added", fact=self._out(row), candidates=[self._out(c, c["similarity"]) for c in candidates]
        )

    def _apply(self, new: dict[str, Any], old: dict[str, Any], d: Decision) -> dict[str, Any] | None:
        """Apply one decision about candidate `old`; returns the surviving fact for a MERGE."""
        now = self.clock()
        if d.action == "KEEP":
            self.facts.add_events(
                [self._event(new, "kept", other_fact_id=old["id"], decided_by=d.decided_by, reason=d.reason, at=now)]
            )
            return None
        if d.action == "INVALIDATE":
            self.facts.update(
                sql_str(old["id"]),
                {"active": False, "superseded_by": new["id"], "superseded_at": now, "superseded_reason": "invalidated"},
            )
            self.facts.add_events(
                [
                    self._event(
                        old, "invalidated", other_fact_id=new["id"], decided_by=d.decided_by, reason=d.reason, at=now
                    ),
                    self._event(
                        new, "replaced", other_fact_id=old["id"], decided_by=d.decided_by, reason=d.reason, at=now
                    ),
                ]
            )
            return None
        merged = self._text(d.merged_text or "")
        vector = self.embedder.embed_passage(merged)
        self.facts.update(
            sql_str(old["id"]),
            {"text": merged, "updated_at": now, "confidence": max(float(old["confidence"]), float(new["confidence"]))},
            vector=vector,
        )
        self.facts.update(
            sql_str(new["id"]),
            {"active": False, "superseded_by": old["id"], "superseded_at": now, "superseded_reason": "merged"},
        )
        self.facts.add_events(
            [
                self._event(
                    {**old, "text": merged},
                    "merged",
                    previous_text=old["text"],
                    other_fact_id=new["id"],
                    decided_by=d.decided_by,
                    reason=d.reason,
                    at=now,
                ),
                self._event(
                    new, "merged_into", other_fact_id=old["id"], decided_by=d.decided_by, reason=d.reason, at=now
                ),
            ]
        )
        return self._get(old["id"])

    # ------------------------------------------------------------------ commands

    def remember(self, req: RememberRequest) -> RememberedResponse:
        self.set_names({req.user_id: req.username})
        confidence = float(req.confidence) if req.confidence is not None else DEFAULT_CONFIDENCE[req.source]
        result = self.consolidate(
            req.user_id, req.text, self._category(req.category), req.source, confidence, req.message_id
        )
        assert result is not None
        return RememberedResponse(**result.model_dump())

    def extract_inline(self, req: ExtractInlineRequest) -> ExtractedResponse:
        self.set_names({req.user_id: req.username})
        found = extract(req.reply, self.categories)
        results = [
            r
            for f in found.facts
            if (
                r := self.consolidate(
                    req.user_id, f.text, f.category, "chat", DEFAULT_CONFIDENCE["chat"], req.message_id
                )
            )
            is not None
        ]
        return ExtractedResponse(
            reply=found.reply,
            facts=results,
            rejected=[
                RejectedTag(tag=r.tag, reason=r.reason, message=r.message)  # type: ignore[arg-type]
                for r in found.rejected
            ],
        )

    def instructions(self, req: MemoryInstructionsRequest | None = None) -> InstructionsResponse:
        return InstructionsResponse(text=memory_instructions(self.categories), categories=list(self.categories))

    def resolve(self, req: ResolveRequest) -> ResolvedResponse:
        if req.fact_id == req.candidate_id:
            raise InvalidRequest("fact_id and candidate_id must be different facts")
        with self.write_lock:
            new = self._get(req.fact_id, req.user_id)
            old = self._get(req.candidate_id, req.user_id)
            if new["user_id"] != old["user_id"]:
                raise InvalidRequest("fact_id and candidate_id belong to different users")
            for row, field in ((new, "fact_id"), (old, "candidate_id")):
                if not row["active"]:
                    raise InvalidRequest(
                        f"`{field}` {quote(row['id'])} is no longer active "
                        f"({row.get('superseded_reason')} by {row.get('superseded_by')})"
                    )
            reason = req.reason if req.reason and req.reason.strip() else None
            self._apply(new, old, Decision(req.action, req.merged_text, "host", reason))
            return ResolvedResponse(
                action=req.action, fact=self._out(self._get(new["id"])), candidate=self._out(self._get(old["id"]))
            )

    def _where(
        self, user_id: str, category: str | list[str] | None, include_inactive: bool, as_of: float | None = None
    ) -> str:
        clauses = [f"user_id = {sql_str(user_id)}"]
        if as_of is not None:  # made by then, and (unless the inactive are asked for too) not yet replaced then
            clauses.append(f"created_at <= {sql_num(as_of)}")
            if not include_inactive:
                clauses.append(f"(active = true OR superseded_at > {sql_num(as_of)})")
        elif not include_inactive:
            clauses.append("active = true")
        if category is not None:
            cats = [category] if isinstance(category, str) else category
            if not cats:
                raise InvalidRequest("field `category`: give at least one category")
            clauses.append("category IN (" + ", ".join(sql_str(normalise_category(c)) for c in cats) + ")")
        return " AND ".join(clauses)

    def _user_rows(
        self,
        user_id: str,
        text_vector: np.ndarray | None,
        category: str | list[str] | None,
        include_inactive: bool,
        limit: int,
        text: str | None = None,
        mode: str = "semantic",
        as_of: float | None = None,
    ) -> list[dict[str, Any]]:
        """Best first for the text (semantic: by similarity, ties most recent then id; keyword/hybrid: by
        rank), or most recent first without a text. `as_of`: the facts as they were then (`_then`)."""
        where = self._where(user_id, category, include_inactive, as_of)
        if text_vector is not None:
            rows = self._then(self.facts.search(text_vector, where, limit, text=text, mode=mode), as_of)
            if mode == "semantic":
                rows.sort(key=lambda r: (-round(r["similarity"], 6), -r["updated_at"], r["id"]))
            return rows
        rows = self._then(self.facts.get(where), as_of)
        rows.sort(key=lambda r: (-r["updated_at"], r["id"]))
        return rows[:limit]

    def _then(self, rows: list[dict[str, Any]], as_of: float | None) -> list[dict[str, Any]]:
        """The rows as they were at `as_of`, from their history (fact_events): the text they had then (the
        `previous_text` of the first change after it), last changed at the latest event by then, active unless
        replaced by then (what replaced them later is not known then). Rows unchanged without `as_of`."""
        if as_of is None or not rows:
            return rows
        events = self.facts.history(sql_in("fact_id", [r["id"] for r in rows]))
        changed: dict[str, float] = {}
        text: dict[str, str] = {}
        for e in events:  # oldest first
            if e["at"] <= as_of:
                changed[e["fact_id"]] = max(changed.get(e["fact_id"], 0.0), e["at"])
            elif e.get("previous_text") is not None:
                text.setdefault(e["fact_id"], e["previous_text"])
        out = []
        for r in rows:
            r = {**r, "text": text.get(r["id"], r["text"])}
            r["updated_at"] = max(float(r["created_at"]), changed.get(r["id"], 0.0))
            if r.get("superseded_at") is not None and r["superseded_at"] > as_of:
                r.update(active=True, superseded_by=None, superseded_at=None, superseded_reason=None)
            out.append(r)
        return out

    def _user_facts(
        self,
        user_id: str,
        text_vector: np.ndarray | None,
        category: str | list[str] | None,
        include_inactive: bool,
        limit: int,
        text: str | None = None,
        mode: str = "semantic",
        as_of: float | None = None,
    ) -> list[FactOut]:
        return [
            self._out(r, r.get("similarity"))
            for r in self._user_rows(user_id, text_vector, category, include_inactive, limit, text, mode, as_of)
        ]

    def _check_limit(self, limit: int, field: str = "limit") -> None:
        if limit > self.max_limit:
            raise TooLarge(f"{field} {limit} is over the maximum of {self.max_limit}")

    def check_users(self, users: dict[str, str | None]) -> None:
        """A recall or context names at most --max-users users (checked before any of their work)."""
        if len(users) > self.max_users:
            raise TooLarge(
                f"{len(users)} users are over the limit of {self.max_users} per request (--max-users): "
                "split the users over several requests"
            )

    def _vector(self, text: str | None) -> np.ndarray | None:
        return self.embedder.embed_query(text) if text is not None and text.strip() else None

    def list_facts(self, req: FactsRequest) -> FactsResponse:
        self._check_limit(req.limit)
        self.set_names({req.user_id: req.username})
        return FactsResponse(
            facts=self._user_facts(
                req.user_id,
                self._vector(req.text),
                req.category,
                req.include_inactive,
                req.limit,
                req.text,
                req.mode,
                req.as_of,
            )
        )

    def recall(self, req: RecallRequest) -> RecallResponse:
        self._check_limit(req.limit)
        self.check_users(req.users)
        self.set_names(req.users)
        vector = self._vector(req.text)
        return RecallResponse(
            users=[
                UserFacts(
                    user_id=u,
                    username=self.facts.name(u),
                    facts=self._user_facts(u, vector, req.category, False, req.limit, req.text, req.mode),
                )
                for u in req.users
            ]
        )

    def history(self, req: FactHistoryRequest) -> FactHistoryResponse:
        fact = self._get(req.fact_id, req.user_id)
        events = self.facts.history(f"fact_id = {sql_str(req.fact_id)}")
        return FactHistoryResponse(
            fact=self._out(fact),
            events=[
                FactEventOut(
                    at=round(e["at"], 3),
                    action=e["action"],
                    text=e.get("text"),
                    previous_text=e.get("previous_text"),
                    other_fact_id=e.get("other_fact_id"),
                    decided_by=e.get("decided_by"),
                    reason=e.get("reason"),
                )
                for e in events
            ],
        )

    def update(self, req: UpdateFactRequest) -> FactResponse:
        with self.write_lock:
            fact = self._get(req.fact_id, req.user_id)
            if not fact["active"]:
                raise InvalidRequest(
                    f"fact {quote(req.fact_id)} is no longer active "
                    f"({fact.get('superseded_reason')} by {fact.get('superseded_by')}); "
                    "correct the fact that replaced it"
                )
            values: dict[str, Any] = {"updated_at": self.clock(), "confidence": 1.0}
            vector = None
            if req.category is not None:
                values["category"] = self._category(req.category)
            if req.text is not None:
                values["text"] = self._text(req.text)
                vector = self.embedder.embed_passage(values["text"])
            self.facts.update(sql_str(fact["id"]), values, vector=vector)
            reason = req.reason if req.reason and req.reason.strip() else "correction"
            self.facts.add_events(
                [
                    self._event(
                        {**fact, **values},
                        "updated",
                        previous_text=fact["text"],
                        decided_by="host",
                        reason=reason,
                        at=values["updated_at"],
                    )
                ]
            )
            return FactResponse(fact=self._out(self._get(fact["id"])))

    def forget(self, req: ForgetFactRequest) -> OkResponse:
        fid, owner = sql_str(req.fact_id), "" if req.user_id is None else f" AND user_id = {sql_str(req.user_id)}"
        with self.write_lock:
            deleted = self.facts.delete(f"id = {fid}{owner}", f"fact_id = {fid}{owner}")
        if not deleted:
            raise NotFound(f"no fact with id {quote(req.fact_id)}")
        return OkResponse(deleted=deleted)

    def forget_user(self, user_id: str) -> int:
        with self.write_lock:
            return self.facts.forget_user(sql_str(user_id), user_id)

    def active_count(self) -> int:
        return self.facts.count("active = true")
