"""One user's graph in memory: entities with their aliases and mentions, episodes, relations with
their validity, traces and the links between them (the records themselves: records.py). Pure data and the
rules that change it (entity resolution, relation validity, merging); the store loads and saves it, the
builder feeds it.

Derived state is never stored twice: an entity's mention count, first/last seen and salience come
from its mentions; a relation's validity from its episodes' times.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from .records import Entity, Episode, Relation, Trace, compact, fold, stable_id
from .validity import Validity

SALIENCE_STEP = 0.1  # each resolved mention raises salience by this, up to 1
# Resident bytes per item of a loaded graph (tracemalloc; see UserGraph.approx_bytes)
EPISODE_BYTES = 400
ENTITY_BYTES = 1_050
RELATION_BYTES = 620
RELATION_INDEX_BYTES = 150  # its key in the relation index (an estimate: a list slot, a set entry, a shared key)
TRACE_BYTES = 1_470
LINK_BYTES = 125
VIEW_EPISODE_BYTES = 90
VIEW_TRACE_BYTES = 300
NAME_VECTOR_BYTES = 950  # float16, with its key
ARRAY_BYTES = 112  # a numpy array's own header, on top of its data

# a key wholly in a script written without spaces (or Korean): the fast tier looks for it inside runs of text
_SPACELESS_KEY = re.compile(
    "[\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff\u1100-\u11ff\u3040-\u30ff"
    "\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
)
USERNAMES = 512


Similar = Callable[["UserGraph", str, str], "Entity | None"]  # (graph, folded name, type) -> a known entity


@dataclass
class UserGraph(Validity):
    user_id: str
    entities: dict[str, Entity] = field(default_factory=dict)
    episodes: dict[str, Episode] = field(default_factory=dict)
    relations: dict[str, Relation] = field(default_factory=dict)
    traces: dict[str, Trace] = field(default_factory=dict)
    links: dict[tuple[str, str], float] = field(default_factory=dict)  # trace <-> trace, a < b
    by_key: dict[str, str] = field(default_factory=dict)  # folded name or alias -> entity id
    by_compact: dict[str, str] = field(default_factory=dict)  # compact(name or alias) -> entity id
    name_vectors: dict[str, Any] = field(default_factory=dict)  # folded name -> its vector (resolution by meaning)
    by_message_id: dict[str, str] = field(default_factory=dict)  # platform message id -> episode id
    recent: list = field(default_factory=list)  # vectors of the latest episodes built (not stored)
    version: int = 0  # raised by every change of structure (recall caches its view of the graph by it)
    max_words: int = 1  # the longest indexed name, in words
    first_names: dict[str, set[str]] = field(default_factory=dict)  # a person's first name -> ids (full names)
    last_names: dict[str, set[str]] = field(default_factory=dict)  # a person's last name -> ids (full names)
    single_names: dict[str, set[str]] = field(default_factory=dict)  # a one-word person name -> ids
    # (subject id, predicate) -> (object key -> relation ids, ids of the current ones): built on first use, dropped
    # by whatever moves or removes relations (a user with 10,000 relations made adding one a scan of all of them)
    rel_index: dict[tuple[str, str], tuple[dict[str, list[str]], set[str]]] | None = None
    spaceless_lengths: set[int] = field(default_factory=set)  # lengths of the keys in scripts without spaces
    usernames: dict[str, str] = field(default_factory=dict)  # folded -> as written: the speakers seen (not stored)
    languages: dict[str, int] = field(default_factory=dict)  # the user's memories built per language (not stored)
    view: Any = None  # (version, recall's view of this graph): cached here so it leaves with the graph
    replaced: Any = None  # (version, supersession.replaced(self)): which episodes later ones replaced

    def approx_bytes(self) -> int:
        """Resident bytes of this graph and its recall view, for the LRU budget. The per-item figures are
        tracemalloc's, on graphs loaded from the store (docs/graph.md, "Memory")."""
        size = 4_000 + EPISODE_BYTES * len(self.episodes) + ENTITY_BYTES * len(self.entities)
        size += RELATION_BYTES * len(self.relations) + TRACE_BYTES * len(self.traces) + LINK_BYTES * len(self.links)
        size += NAME_VECTOR_BYTES * len(self.name_vectors)
        if self.rel_index is not None:
            size += RELATION_INDEX_BYTES * len(self.relations)
        if self.recent:  # the latest vectors, all of one size (summing them: 5% of a soak's samples, 2026-11-27)
            size += len(self.recent) * (self.recent[-1].nbytes + ARRAY_BYTES)
        if self.view is not None:
            size += VIEW_EPISODE_BYTES * len(self.episodes) + VIEW_TRACE_BYTES * len(self.traces)
        return size

    # ------------------------------------------------------------------ entities

    def index(self, entity: Entity) -> None:
        for key in entity.keys():
            self.by_key.setdefault(key, entity.id)
            self.max_words = max(self.max_words, len(key.split()))
            if len(key) > 1 and _SPACELESS_KEY.fullmatch(key):
                self.spaceless_lengths.add(len(key))
            if len(compact(key)) > 1:
                self.by_compact.setdefault(compact(key), entity.id)
        if entity.type == "person":
            tokens = fold(entity.name).split()
            if tokens:
                bucket = self.first_names if len(tokens) > 1 else self.single_names
                bucket.setdefault(tokens[0], set()).add(entity.id)
                if len(tokens) > 1:
                    self.last_names.setdefault(tokens[-1], set()).add(entity.id)

    def gazetteer(self) -> tuple[Mapping[str, str], int]:
        """(folded name or alias -> entity type, the longest name in words) for the fast tier: a live view
        of the index, so a new name costs nothing to add (read as a Mapping: `get`, `len`, its keys)."""
        return cast("Mapping[str, str]", _Types(self)), self.max_words

    def note_username(self, username: str | None) -> None:
        """A speaker's username: the fast tier finds it when a message names them, in any script (kept in
        memory only, the USERNAMES most recent; once mentioned, the person is an entity like any other)."""
        if username is None:
            return
        key = fold(username)
        if len(key) < 2 or key in self.usernames or key in self.by_key:
            return
        if len(self.usernames) >= USERNAMES:
            del self.usernames[next(iter(self.usernames))]
        self.usernames[key] = username
        self.max_words = max(self.max_words, len(key.split()))
        if _SPACELESS_KEY.fullmatch(key):
            self.spaceless_lengths.add(len(key))

    def resolve(self, name: str, type_: str, similar: Similar | None = None) -> tuple[Entity, bool]:
        """The entity a mention names, created when none matches; True when it is new.

        Exact name, then alias (case and diacritics folded), then the compact name ("the Grand
        Canyon" = "Grand-Canyon"); for people, then a first name that names exactly one known full
        name ("Alice" -> "Alice Smith"), else a last name that does ("Miller" -> "Bob Miller"), or a
        full name whose first name is exactly one known single-name person ("Alice Smith" -> "Alice",
        who is renamed and keeps "Alice" as an alias);
        for anything else, `similar` (a known name of the same type close in meaning: "NYC" -> "New
        York City"). Otherwise a new entity."""
        key = fold(name)
        if key in self.by_key and self.by_key[key] in self.entities:
            return self.entities[self.by_key[key]], False
        match = self.entities.get(self.by_compact.get(compact(key), ""))
        if match is None and type_ == "person":
            match = self._person_match(key)
        elif match is None and similar is not None and key:
            match = similar(self, key, type_)
        if match is not None:
            if match.type == "person" and len(key.split()) > len(fold(match.name).split()):
                match.aliases.add(match.name)  # a person's full name is their name
                match.name = name
            else:
                match.aliases.add(name)
            self.index(match)
            return match, False
        entity = Entity(stable_id(self.user_id, type_, key), name, type_)
        while entity.id in self.entities:  # the same key once merged away: keep ids unique
            entity.id = stable_id(entity.id, "again")
        self.entities[entity.id] = entity
        self.index(entity)
        return entity, True

    def _person_match(self, key: str) -> Entity | None:
        tokens = key.split()
        if not tokens:
            return None
        if len(tokens) == 1:  # a first name: the one known full name it starts (else the one it ends)
            found = []
            for index, at in ((self.first_names, 0), (self.last_names, -1)):
                ids = index.get(tokens[0], ())
                found = [
                    self.entities[i]
                    for i in ids
                    if i in self.entities
                    and self.entities[i].type == "person"
                    and len(fold(self.entities[i].name).split()) > 1
                    and fold(self.entities[i].name).split()[at] == tokens[0]
                ]
                if found:
                    break
        else:  # a full name: the one known person of that single name
            ids = self.single_names.get(tokens[0], ())
            found = [
                self.entities[i]
                for i in ids
                if i in self.entities and self.entities[i].type == "person" and fold(self.entities[i].name) == tokens[0]
            ]
        return found[0] if len(found) == 1 else None

    def salience(self, entity: Entity) -> float:
        return min(1.0, SALIENCE_STEP * len(entity.episodes))

    def seen(self, entity: Entity) -> tuple[float, float]:
        times = [self.episodes[e].ts for e in entity.episodes if e in self.episodes]
        return (min(times), max(times)) if times else (0.0, 0.0)

    def find(self, name: str) -> Entity | None:
        eid = self.by_key.get(fold(name))
        return self.entities.get(eid) if eid else None

    def merge(self, source: Entity, target: Entity) -> dict[str, int]:
        """Move everything of `source` to `target` and drop `source`."""
        moved = {"aliases": 0, "mentions": len(source.episodes), "relations": 0}
        for alias in {source.name, *source.aliases} - {target.name} - target.aliases:
            target.aliases.add(alias)
            moved["aliases"] += 1
        target.episodes = list(dict.fromkeys(target.episodes + source.episodes))
        for ep_id in source.episodes:
            ep = self.episodes.get(ep_id)
            if ep is not None:
                ep.entity_ids = list(dict.fromkeys(target.id if e == source.id else e for e in ep.entity_ids))
        for rel in self.relations.values():
            if source.id in (rel.subject_id, rel.object_id):
                rel.subject_id = target.id if rel.subject_id == source.id else rel.subject_id
                rel.object_id = target.id if rel.object_id == source.id else rel.object_id
                if rel.object_id == target.id:
                    rel.object_value = target.name
                moved["relations"] += 1
        self.rel_index = None
        for trace in self.traces.values():
            if source.id in trace.entity_ids:
                trace.entity_ids = list(dict.fromkeys(target.id if e == source.id else e for e in trace.entity_ids))
        del self.entities[source.id]
        for index in (self.by_key, self.by_compact):
            for key, eid in list(index.items()):
                if eid == source.id:
                    index[key] = target.id
        self.index(target)
        return moved

    # ------------------------------------------------------------------ relations

    # ------------------------------------------------------------------ forgetting

    def remove_episodes(self, ids: set[str]) -> set[str]:
        """Drop episodes (deleted messages) from everything that refers to them. Returns the ids of the
        traces that lost episodes (to consolidate again)."""
        touched: set[str] = set()
        for ep_id in ids & self.episodes.keys():
            ep = self.episodes.pop(ep_id)
            if ep.message_id and self.by_message_id.get(ep.message_id) == ep_id:
                del self.by_message_id[ep.message_id]
            if ep.trace_id:
                touched.add(ep.trace_id)
        for entity in list(self.entities.values()):
            entity.episodes = [e for e in entity.episodes if e not in ids]
        for rel_id, rel in list(self.relations.items()):
            rel.episode_ids = [e for e in rel.episode_ids if e not in ids]
            if not rel.episode_ids:
                del self.relations[rel_id]
                self.rel_index = None
        for trace_id in touched & self.traces.keys():
            trace = self.traces[trace_id]
            trace.episode_ids = [e for e in trace.episode_ids if e not in ids]
        return touched


class _Types:
    """folded name -> entity type, read through a user's index (what the fast tier looks names up in)."""

    def __init__(self, g: UserGraph):
        self.g = g

    def get(self, key: str) -> str | None:
        entity = self.g.entities.get(self.g.by_key.get(key, ""))
        if entity is None:
            return "person" if key in self.g.usernames else None
        return entity.type

    @property
    def spaceless_lengths(self) -> set[int]:
        return self.g.spaceless_lengths

    def __bool__(self) -> bool:
        return bool(self.g.by_key) or bool(self.g.usernames)

    def __len__(self) -> int:
        return len(self.g.by_key) + len(self.g.usernames)

    def __iter__(self):
        yield from self.g.by_key
        yield from self.g.usernames
