"""Import: records read in batches of one kind, validated, checked against what is stored (the conflict
policy), and written through each domain's own write path: messages through the message store's
write-ahead log (durable before they count), facts, their events, names and graph rows merged on their
keys. Ids are kept, so running an import again after a crash converges to the same state.

With `strict` or on_conflict `fail`, a first pass reads the whole file and refuses it before anything is
written; otherwise a bad record is reported with its line number and skipped. Either walk stops with
`bad_file` at the file's bounds (fileio.Limits: bad records, gzip expansion); what was written before stays
(ids are kept: a rerun with a higher bound goes on where it stopped). The first MAX_ERRORS bad records
are logged on stderr, the rest only counted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..embedding.model import vector_family
from ..storage import model_differences, same_model, vector_problems
from ..wire.errors import MAX_QUOTE, clip, quote
from .fileio import Limits, LineProblem, OverLimit, Reader, Refused, Repeat, shown
from .records import KEYS, MessageRecord, decode_vector

log = logging.getLogger("sidecar.portable")

BATCH = 1000  # records written together (one embedding batch, one commit)
MAX_ERRORS = 20  # line errors listed in the answer and logged on stderr (all are counted)
GRAPH_QUEUE = 20_000  # messages waiting for the graph builder before the import waits for it


__all__ = ["GRAPH_QUEUE", "Importer", "Outcome", "Refused"]


@dataclass
class Outcome:
    messages: int = 0
    facts: int = 0
    fact_events: int = 0
    users: int = 0
    graph: int = 0
    skipped: int = 0
    forgotten: int = 0  # records a tombstone covers, skipped
    tombstones: int = 0  # the file's tombstones written
    overwritten: int = 0
    invalid: int = 0
    reembedded: int = 0
    redacted: int = 0  # secrets replaced by a placeholder in what was written
    errors: list[tuple[int, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    graph_users: set[str] = field(default_factory=set)
    max_invalid: int = 0  # more invalid records than this (0: no limit): OverLimit
    problems: int = 0

    def problem(self, line: int, message: str, record: bool = True) -> None:
        message = clip(message, 2 * MAX_QUOTE)  # what a record's own problem quotes is clipped already
        self.invalid += record
        self.problems += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append((line, message))
            log.warning("import: line %d: %s", line, message)
        if record and 0 < self.max_invalid < self.invalid:
            raise OverLimit(
                f"more than {self.max_invalid} invalid records (the last at line {line}: {message}; "
                f"max_invalid {self.max_invalid})"
            )

    def any_written(self) -> bool:
        return any((self.messages, self.facts, self.fact_events, self.users, self.graph, self.tombstones))

    def written(self) -> str:
        return (
            f"{self.messages} messages, {self.facts} facts, {self.fact_events} fact events, {self.users} names "
            f"and {self.graph} graph rows"
        )


MAX_NUMBER = 253_402_300_799  # the largest timestamp (end of year 9999): no graph number is larger


def _number_problem(row: dict[str, Any]) -> str | None:
    """Why a graph row's numbers (timestamps, weights, activations) cannot be stored or scored, or None: each
    is finite and within +-MAX_NUMBER (JSON carries no NaN; 1e308 is a number, and an infinity in float32)."""
    for key, value in row.items():
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, float | int) and not isinstance(v, bool) and not -MAX_NUMBER <= v <= MAX_NUMBER:
                return f"row.{clip(key)} is {clip(repr(v))}, outside -{MAX_NUMBER}..{MAX_NUMBER}"
    return None


# The text fields cleaned on import, by record kind (portable/records.py), and a graph row's
CLEANED = {
    "message": ("content", "search_text"),
    "fact": ("text",),
    "fact_event": ("text", "previous_text", "reason"),
}
GRAPH_CLEANED = ("name", "aliases", "object_value", "summary")


def _kind(record: Any) -> str:
    return f"graph:{record.table}" if record.kind == "graph" else record.kind


class Importer:
    def __init__(
        self,
        stores: Any,
        identity: dict[str, Any],
        on_conflict: str = "skip",
        strict: bool = False,
        progress: Callable[[str, int], None] | None = None,
        limits: Limits = Limits(),
        restore_forgotten: bool = False,
    ):
        self.s = stores  # portable.service.Stores
        self.identity = identity
        self.dim = int(identity["dim"])
        self.on_conflict = on_conflict
        self.strict = strict
        self.progress = progress or (lambda _what, _n: None)
        self.limits = limits
        self.out = Outcome(max_invalid=limits.max_invalid)
        self.reuse = False  # the file's vectors are this model's
        self.restore_graph = False  # the file's graph rows are used (else the graph is rebuilt)
        self.plain = False  # plain JSON Lines (no header)
        self.oldest = float("inf")  # timestamp of the oldest message written
        # the file's vectors are used only when finite and, for a normalising model, of length 1
        self.normalized = bool((identity.get("embedding") or {}).get("normalize", True))
        # forgotten stays forgotten: of -> {id: when}, the stored tombstones and then the file's (read first)
        self.restore_forgotten = restore_forgotten
        self.dead: dict[str, dict[str, float]] = {"user": {}, "memory": {}}
        self.used: dict[str, set[str]] = {"user": set(), "memory": set()}  # restore_forgotten: to clear
        self.dropped_users: set[str] = set()  # users with a record skipped as forgotten: their graph is rebuilt
        self.ignored = 0  # restore_forgotten: the file's tombstones not applied
        self.rebuilt: set[str] = set()  # users whose graph rows were left out (built from their messages)

    def run(self, path: Path) -> Outcome:
        try:
            reader = Reader(path, self.limits)  # its first line may lie past a bound (blank lines, expansion)
            self.dead = self.s.messages.tombstones.latest()
            self._plan(reader)
            if self.strict or self.on_conflict == "fail":
                self._check(reader)
            self._walk(reader)
        except OverLimit as exc:
            if self.out.any_written():
                self._finish()
                done = f"imported before it stopped: {self.out.written()} (a rerun with a higher bound skips them)"
            else:
                done = "nothing was imported"
            raise Refused("bad_file", f"import stopped: {exc}; {done}") from None
        finally:
            if self.out.problems > len(self.out.errors):
                log.warning(
                    "import: %d problems in all (%d invalid records); the first %d are logged above",
                    self.out.problems,
                    self.out.invalid,
                    len(self.out.errors),
                )
        self._finish()
        return self.out

    def _walk(self, reader: Reader) -> None:
        batch: list[tuple[int, Any]] = []
        for n, record in reader.records():
            if isinstance(record, LineProblem):
                self.out.problem(n, record.message, record=record.record)
                continue
            if isinstance(record, Repeat):  # the same record as a line before: like a stored id
                self.out.skipped += 1
                continue
            problem = self._clean(record)
            if problem is not None:
                self.out.problem(n, problem)
                continue
            if batch and (_kind(batch[0][1]) != _kind(record) or len(batch) >= BATCH):
                self._write(batch)
                batch = []
            if record.kind != "end":
                batch.append((n, record))
        if batch:
            self._write(batch)

    def _clean(self, record: Any) -> str | None:
        """What a `store` does to text, done to the record's (private spans dropped, secrets replaced: the file may
        come from a sidecar that kept them); a message or fact whose text changed is embedded again. Why the
        record cannot be written (its text was all private), or None."""
        clean = self.s.clean
        fields = CLEANED.get(record.kind, ())
        for name in fields:
            value = getattr(record, name)
            if not isinstance(value, str):
                continue
            cleaned, n = clean(value)
            if cleaned == value:
                continue
            if name in ("content", "text") and record.kind in ("message", "fact") and not cleaned.strip():
                return f"`{name}` is empty once its <private> spans are dropped: not imported"
            setattr(record, name, cleaned)
            self.out.redacted += n
            if name in ("content", "text"):
                record.vector = None  # the file's vector was made from the text as it was
        if record.kind == "graph":
            row = record.row
            for name in GRAPH_CLEANED:
                value = row.get(name)
                if isinstance(value, str):
                    row[name], n = clean(value)
                    self.out.redacted += n
                elif isinstance(value, list):
                    cleaned_list = [clean(v) if isinstance(v, str) else (v, 0) for v in value]
                    row[name] = [v for v, _ in cleaned_list]
                    self.out.redacted += sum(n for _, n in cleaned_list)
        return None

    def _plan(self, reader: Reader) -> None:
        h = reader.header
        if h is None:
            self.plain = True
            self.out.notes.append("plain JSON Lines: every message embedded, the graph built from them")
            return
        made_by = {**h.model.model_dump(), "vectors": vector_family(h.model.digest)}
        same = same_model(made_by, self.identity)
        self.reuse = h.vectors and same
        self.restore_graph = self.reuse and h.graph and self.s.graph is not None
        if h.vectors and not same:
            self.out.notes.append(
                "the file's vectors were made otherwise: "
                f"{clip('; '.join(model_differences(made_by, self.identity)))}; "
                "they are not used: messages and facts are re-embedded and the graph is rebuilt from the messages"
            )
        elif not h.vectors:
            self.out.notes.append(
                "the file has no vectors: messages and facts are re-embedded and the graph is rebuilt from the messages"
            )

    # ------------------------------------------------------------------ the first pass (strict, fail)

    def _check(self, reader: Reader) -> None:
        pending: dict[str, dict[str, int]] = {}
        for n, record in reader.records():
            if isinstance(record, LineProblem):
                if self.strict:
                    raise Refused("bad_file", f"{shown(reader.path)}: line {n}: {record.message}; nothing was imported")
                continue
            if isinstance(record, Repeat):
                continue
            if self.strict:
                problem = self._too_large(record)
                if problem is None and self.reuse and getattr(record, "vector", None) is not None:
                    try:
                        problem = self._vector_problem(decode_vector(record.vector, self.dim))
                    except ValueError as exc:
                        problem = str(exc)
                if problem is not None:
                    raise Refused("bad_file", f"{shown(reader.path)}: line {n}: {problem}; nothing was imported")
            if self.on_conflict == "fail" and record.kind in KEYS:
                ids = pending.setdefault(record.kind, {})
                ids[str(getattr(record, KEYS[record.kind]))] = n
                if len(ids) >= BATCH:
                    self._conflicts(reader.path, record.kind, pending.pop(record.kind))
        for kind, ids in pending.items():
            self._conflicts(reader.path, kind, ids)

    def _conflicts(self, path: Path, kind: str, ids: dict[str, int]) -> None:
        found = self.s.existing(kind, list(ids))
        if found:
            first = min(found, key=lambda i: ids[i])
            raise Refused(
                "conflict",
                f"{shown(path)}: line {ids[first]}: {kind} {quote(first)} is already stored "
                f"({len(found)} in that part of the file); on_conflict is `fail`, nothing was imported",
            )

    # ------------------------------------------------------------------ writing

    def _too_large(self, record: Any) -> str | None:
        """Why a message's content or a fact's text is over the limits a `store` or `remember` has, or None."""
        if record.kind == "message":
            return self.s.over_limit("message", record.content)
        if record.kind == "fact":
            return self.s.over_limit("fact", record.text)
        return None

    def _vector_problem(self, vector: np.ndarray) -> str | None:
        return vector_problems(vector, self.normalized)[0]

    def _write(self, batch: list[tuple[int, Any]]) -> None:
        kind = _kind(batch[0][1])
        if kind == "tombstone":
            self._tombstones(batch)
            return
        if kind.startswith("graph:"):
            if self.restore_graph:
                self._graph(kind[6:], batch)
            return
        batch = self._not_forgotten(kind, batch)
        if not batch:
            return
        if kind in ("message", "fact"):
            fitting = []
            for n, r in batch:
                over = self._too_large(r)
                if over is None:
                    fitting.append((n, r))
                else:
                    self.out.problem(n, over)
            batch = fitting
            if not batch:
                return
        batch = self._policy(batch[0][1].kind, batch)
        if not batch:
            return
        if kind == "message":
            self._messages(batch)
        elif kind == "fact":
            self._facts(batch)
        elif kind == "fact_event":
            self.s.facts.restore_events(
                [r.model_dump(exclude={"kind"}) for _, r in batch], self.on_conflict == "overwrite"
            )
            self.out.fact_events += len(batch)
        elif kind == "user":
            self.s.facts.restore_users(
                [r.model_dump(exclude={"kind"}) for _, r in batch], self.on_conflict == "overwrite"
            )
            self.out.users += len(batch)

    def _tombstones(self, batch: list[tuple[int, Any]]) -> None:
        """The file's tombstones: each newer than what is known here is written, and covers the records after
        it (with restore_forgotten none is applied: the request restores what was forgotten)."""
        if self.restore_forgotten:
            self.ignored += len(batch)
            return
        new: dict[tuple[str, str], float] = {}
        for _n, r in batch:
            at = float(r.at)
            if at > self.dead[r.of].get(r.id, -1.0):
                self.dead[r.of][r.id] = at
                new[(r.of, r.id)] = at
        if new:
            self.s.messages.tombstones.add([{"of": of, "id": i, "at": at} for (of, i), at in new.items()])
            self.out.tombstones += len(new)

    def _covered(self, kind: str, r: Any) -> tuple[str, str] | None:
        """The tombstone (of, id) that covers this record, or None: a deleted memory's id, or a forgotten user's
        record dated at or before the user was forgotten."""
        if kind == "message":
            if r.id in self.dead["memory"]:
                return ("memory", r.id)
            when = r.timestamp
        else:
            when = {"fact": "created_at", "fact_event": "at", "user": "updated_at"}[kind]
            when = getattr(r, when)
        at = self.dead["user"].get(r.user_id)
        return ("user", r.user_id) if at is not None and when <= at else None

    def _not_forgotten(self, kind: str, batch: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
        """The batch without what a tombstone covers (counted in `forgotten`); with restore_forgotten, all of
        it, and the tombstones it used are cleared at the end."""
        if not (self.dead["user"] or self.dead["memory"]):
            return batch
        kept = []
        for n, r in batch:
            covered = self._covered(kind, r)
            if covered is None:
                kept.append((n, r))
            elif self.restore_forgotten:
                self.used[covered[0]].add(covered[1])
                kept.append((n, r))
            else:
                self.out.forgotten += 1
                self.dropped_users.add(r.user_id)
        return kept

    def _policy(self, kind: str, batch: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
        """The batch without records repeated in it, and without stored ids (skip), or with the stored
        ones counted as overwritten (overwrite; a message is deleted first)."""
        key = KEYS[kind]
        unique: dict[str, tuple[int, Any]] = {}
        for n, r in batch:
            unique.setdefault(str(getattr(r, key)), (n, r))
        self.out.skipped += len(batch) - len(unique)
        found = self.s.existing(kind, list(unique))
        if not found:
            return list(unique.values())
        if self.on_conflict == "overwrite":
            self.out.overwritten += len(found)
            if kind == "message":
                self.s.delete_messages(sorted(found))
            return list(unique.values())
        self.out.skipped += len(found)
        return [v for k, v in unique.items() if k not in found]

    def _vectors(self, batch: list[tuple[int, Any]], texts: list[str]) -> tuple[list[tuple[int, Any]], np.ndarray]:
        """The records whose vector could be decoded (or all, re-embedded) and their vectors."""
        if not self.reuse:
            self.out.reembedded += len(batch)
            return batch, np.asarray(self.s.embed(texts), dtype=np.float32).reshape(len(batch), self.dim)
        kept: list[tuple[int, Any]] = []
        vectors: list[np.ndarray] = []
        missing: list[int] = []
        for n, r in batch:
            try:
                vector = None if r.vector is None else decode_vector(r.vector, self.dim)
                if vector is not None and (problem := self._vector_problem(vector)) is not None:
                    self.out.problem(n, f"{problem}: not used, the record is embedded again", record=False)
                    vector = None
                if vector is None:
                    missing.append(len(kept))
                    vector = np.zeros(self.dim, dtype=np.float32)
                vectors.append(vector)
                kept.append((n, r))
            except ValueError as exc:
                self.out.problem(n, str(exc))
        out = np.stack(vectors) if vectors else np.empty((0, self.dim), dtype=np.float32)
        if missing:  # a record without a usable vector in a file with vectors: embedded here
            out[missing] = self.s.embed([texts[i] for i in missing])
            self.out.reembedded += len(missing)
        return kept, out

    def _messages(self, batch: list[tuple[int, MessageRecord]]) -> None:
        batch, vectors = self._vectors(batch, [r.content for _, r in batch])
        if not batch:
            return
        rows = [r.model_dump(exclude={"kind", "vector"}) for _, r in batch]
        for row in rows:
            row["timestamp"] = float(row["timestamp"])
            self.oldest = min(self.oldest, row["timestamp"])
            if row["search_text"] is None:
                for k in ("search_text", "prev_id", "prev2_id"):
                    row.pop(k)
        self.s.add_messages(rows, vectors, build_graph=not self.restore_graph, names=self.plain)
        self.out.messages += len(rows)
        self.progress("messages", self.out.messages)

    def _facts(self, batch: list[tuple[int, Any]]) -> None:
        batch, vectors = self._vectors(batch, [r.text for _, r in batch])
        if batch:
            self.s.facts.restore_facts(
                [r.model_dump(exclude={"kind", "vector"}) for _, r in batch], vectors, self.on_conflict == "overwrite"
            )
            self.out.facts += len(batch)

    def _graph(self, table: str, batch: list[tuple[int, Any]]) -> None:
        rows = []
        for n, r in batch:
            user = r.row["user_id"]
            if not self.restore_forgotten and (user in self.dropped_users or user in self.dead["user"]):
                self.rebuilt.add(user)  # something of theirs forgotten: their graph is built from what was imported
                continue
            row = dict(r.row)
            problem = _number_problem(row)
            if problem is None and table == "traces":
                try:
                    vector = decode_vector(str(row.get("vector")), self.dim)
                    problem = self._vector_problem(vector)
                    row["vector"] = vector.tolist()
                except ValueError as exc:
                    problem = str(exc)
            if problem is not None:
                self.out.problem(n, f"{table[:-1]} {problem}")
                continue
            rows.append((n, row))
        bad, written = self.s.graph.store.restore("graph_" + table, rows, self.on_conflict == "overwrite")
        for n, message in bad:
            self.out.problem(n, message)
        self.out.graph += written
        self.out.skipped += len(rows) - len(bad) - written  # stored already (on_conflict skip)
        self.out.graph_users.update(row["user_id"] for _, row in rows)

    def _finish(self) -> None:
        cleared = 0
        for of, ids in self.used.items():
            self.s.messages.tombstones.clear(of, sorted(ids))
            cleared += len(ids)
        self.used = {"user": set(), "memory": set()}
        if cleared:
            self.out.notes.append(
                f"restore_forgotten: {cleared} tombstone{'' if cleared == 1 else 's'} cleared (what they covered was "
                "imported)"
            )
        if self.rebuilt:
            self.out.notes.append(
                f"the graph of {len(self.rebuilt)} users with something forgotten is built again from the messages "
                "imported, not restored"
            )
        if self.ignored:
            self.out.notes.append(f"restore_forgotten: the file's {self.ignored} tombstones were not applied")
        if self.s.graph is None:
            return
        if self.out.graph_users:
            self.s.graph.reload(sorted(self.out.graph_users))
        # every imported message without an episode is built in the background (the catch-up blocks)
        self.s.graph.catch_up_in_background()
