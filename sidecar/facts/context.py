"""The `context` block of the facts domain: the users' facts, what is true now (current relations, handed
over by graph memory) and the stored messages relevant to the request (handed over by the conversation
domain), a relation that says what a fact shown says left out, rendered by rules.py. A mixin of
FactService (service.py), which it reads facts through.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..wire import ContextRequest, ContextResponse
from .rules import (
    ContextFact,
    ContextMemory,
    ContextRelation,
    ContextUser,
    markdown_facts,
    render_markdown,
    render_xml,
    same_as_fact,
)

if TYPE_CHECKING:
    from ..embedding.embedder import Embedder
    from .store import FactStore

PREFERENCE = "preference"

# what `context` is handed by the graph and the conversation domains (runtime/dispatcher.py wires them)
# user, text, limit, as_of (None: now) -> relations
TrueNow = Callable[[str, "str | None", int, "float | None"], list[dict[str, Any]]]
# names, text, vector, limit, words, floor, min score, as_of -> lines by user
Memories = Callable[[dict[str, str], str, np.ndarray, int, int, float, float, "float | None"], dict[str, list[Any]]]


class ContextBlocks:
    if TYPE_CHECKING:  # FactService's (service.py), the class this one is a mixin of
        embedder: Embedder
        facts: FactStore
        categories: tuple[str, ...]

        def set_names(self, names: Mapping[str, str | None]) -> None: ...
        def _check_limit(self, limit: int, field: str = "limit") -> None: ...
        def check_users(self, users: dict[str, str | None]) -> None: ...
        def _vector(self, text: str | None) -> np.ndarray | None: ...
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
        ) -> list[dict[str, Any]]: ...

    def context(
        self, req: ContextRequest, true_now: TrueNow | None = None, memories: Memories | None = None
    ) -> ContextResponse:
        """The `context` block: the users' facts (`include` "facts"), what is true now (`true_now`: user id,
        text, limit -> current relations as graph memory reads them), the memories relevant to the text
        (`memories`: names, text, vector, limit, words -> memory lines by user), rendered in `format`. A
        relation that says what a fact shown says is left out (rules.same_as_fact)."""
        for field in ("limit", "preferences_limit", "relevant_limit"):
            self._check_limit(getattr(req, field), field)
        names = req.user_map()
        self.check_users(names)
        self.set_names(names)
        include = set(req.include)
        vector = self._vector(req.text)
        users: list[ContextUser] = []
        for uid in names:
            name = names[uid] or self.facts.name(uid) or uid
            relevant: list[dict[str, Any]] = []
            prefs: list[dict[str, Any]] = []
            if "facts" in include:
                per_user = req.limit if req.format == "xml" else req.relevant_limit + req.preferences_limit
                relevant = (
                    []
                    if per_user == 0
                    else self._user_rows(uid, vector, None, False, per_user, req.text, req.mode, req.as_of)
                )
                if req.min_similarity is not None and vector is not None:
                    relevant = [r for r in relevant if r["similarity"] >= req.min_similarity]
                prefs = (
                    []
                    if req.format == "xml" or req.preferences_limit == 0 or PREFERENCE not in self.categories
                    else self._user_rows(uid, None, PREFERENCE, False, req.preferences_limit, as_of=req.as_of)
                )
            users.append(
                ContextUser(
                    uid, name, [self._context_fact(r) for r in relevant], [self._context_fact(r) for r in prefs]
                )
            )
        if true_now is not None and "now" in include and req.now_limit:
            shown = self._shown(users, req)
            for u in users:  # twice the limit: room for those a fact shown already says
                u.now = self._not_said(true_now(u.user_id, req.text, 2 * req.now_limit, req.as_of), shown[u.user_id])
                u.now = u.now[: req.now_limit]
        if memories is not None and "memories" in include and vector is not None and req.memories_limit:
            found = memories(
                {u.user_id: u.name for u in users},
                req.text or "",
                vector,
                req.memories_limit,
                req.memories_words,
                req.memories_min_similarity,
                req.memories_min_score,
                req.as_of,
            )
            for u in users:
                u.memories = [ContextMemory(m.timestamp, m.label, m.text, m.outdated) for m in found.get(u.user_id, [])]
        # a past `as_of` says what was true then; a time in the future answers as now
        then = req.as_of if req.as_of is not None and req.as_of < time.time() else None
        if req.format == "xml":
            text = render_xml(users, then)
            count = sum(len(u.relevant) for u in users)
        else:
            text = render_markdown(users, req.preferences_limit, req.relevant_limit, then)
            count = sum(1 for line in text.splitlines() if line.startswith("- ["))
        return ContextResponse(
            format=req.format,
            text=text,
            facts=count,
            relations=sum(len(u.now) for u in users),
            memories=sum(len(u.memories) for u in users),
        )

    @staticmethod
    def _shown(users: list[ContextUser], req: ContextRequest) -> dict[str, list[ContextFact]]:
        """The facts the block shows, by user."""
        if req.format == "xml":
            return {u.user_id: list(u.relevant) for u in users}
        shown: dict[str, list[ContextFact]] = {u.user_id: [] for u in users}
        for part in markdown_facts(users, req.preferences_limit, req.relevant_limit):
            for u, f in part:
                shown[u.user_id].append(f)
        return shown

    def _not_said(self, relations: list[dict[str, Any]], facts: list[ContextFact]) -> list[ContextRelation]:
        """The relations no fact shown says already: not the one the graph linked it to (`fact_id`), nor one
        that rules.same_as_fact finds the same (the similarity computed only for the pairs it could decide
        either way: a fact naming the relation's object, with no word of another time)."""
        ids = {f.id for f in facts}
        rels = [r for r in relations if r.get("fact_id") is None or r["fact_id"] not in ids]
        maybe = [
            (i, f)
            for i, r in enumerate(rels)
            for f in facts
            if not same_as_fact(r["sentence"], r["object"], f.text, None)
            and same_as_fact(r["sentence"], r["object"], f.text, 1.0)
        ]
        sims: dict[tuple[int, str], float] = {}
        if maybe:
            texts = list(dict.fromkeys([rels[i]["sentence"] for i, _ in maybe] + [f.text for _, f in maybe]))
            vectors = dict(zip(texts, self.embedder.embed_passages(texts)))  # stored texts, both
            sims = {(i, f.id): float(vectors[rels[i]["sentence"]] @ vectors[f.text]) for i, f in maybe}
        said = {
            i
            for i, r in enumerate(rels)
            for f in facts
            if same_as_fact(r["sentence"], r["object"], f.text, sims.get((i, f.id)))
        }
        return [ContextRelation(r["sentence"], r.get("since")) for i, r in enumerate(rels) if i not in said]

    @staticmethod
    def _context_fact(row: dict[str, Any]) -> ContextFact:
        sim = row.get("similarity")
        return ContextFact(
            row["id"], row["text"], row["category"], float(row["updated_at"]), None if sim is None else round(sim, 6)
        )
