"""The `export` and `import` commands: paths resolved (relative ones against the working directory, like
any command-line tool; never inside the data dir, whose files are the store's own), the exporter or importer
run against the data dir's stores, and the outcome as a typed response or a clear error."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..storage import sql_in
from ..wire import ExportedResponse, ExportRequest, ImportedResponse, ImportRequest, LineError
from ..wire.errors import BadFile, Conflict, InvalidRequest, IoError
from .exporter import Exporter
from .fileio import FileProblem, Limits, Refused, shown
from .importer import GRAPH_QUEUE, Importer

log = logging.getLogger("sidecar.portable")

DAY = 86_400.0


@dataclass
class Stores:
    """What export and import reach in the data dir, handed over by the composition root."""

    messages: Any  # messages.MessageStore
    facts: Any  # facts.FactStore
    graph: Any  # graph.GraphService, or None (graph memory off)
    embed: Callable[[list[str]], np.ndarray]
    names: Callable[[dict[str, str]], None]  # display names heard from stored messages
    gone: Callable[[list[str]], None]  # tells the other domains of deleted messages
    # why a message's content ("message") or a fact's text ("fact") is over the limits of `store` and
    # `remember` (a sentence naming the option), or None
    over_limit: Callable[[str, str], str | None] = lambda _kind, _text: None
    # what a text becomes before it is stored (private spans dropped, secrets replaced; --redact) and how many
    # secrets were replaced
    clean: Callable[[str], tuple[str, int]] = lambda text: (text, 0)

    def existing(self, kind: str, ids: list[str]) -> set[str]:
        """The ids (user ids for `user`) among these that are already stored."""
        if kind == "message":
            return self.messages.existing_ids(ids)
        return self.facts.existing(kind, ids)

    def delete_messages(self, ids: list[str]) -> None:
        self.messages.delete(sql_in("id", ids), exclusive=False, on_gone=self.gone)

    def add_messages(self, rows: list[dict[str, Any]], vectors: np.ndarray, build_graph: bool, names: bool) -> None:
        """Durable (write-ahead log) before it returns, like a `store`; the graph builder hears of them unless
        the file's graph rows are restored instead. names: the display names come from the messages (plain
        files; an export file carries its own `user` records)."""
        self.messages.add(rows, vectors)
        if names:
            self.names({r["user_id"]: r["username"] for r in rows if r.get("username")})
        if build_graph and self.graph is not None:
            self.graph.builder.submit(rows, vectors)
            if self.graph.builder.pending > GRAPH_QUEUE:
                self.graph.builder.wait_idle(600.0)


def resolve_path(path: str, field: str) -> Path:
    """An absolute path: `~` expanded, a relative one joined to the working directory (not resolved: the
    file's own name is never followed if it is a link)."""
    try:
        os.fsencode(path)
        p = Path(path)
        try:
            p = p.expanduser()
        except RuntimeError:
            pass  # `~name` of no known user: a name like any other
        return Path(os.path.abspath(p))
    except ValueError as exc:  # a lone surrogate: no file system can name it
        raise InvalidRequest(f"`{field}` {shown(path)} cannot be a file name here ({exc.__class__.__name__})") from None


REFUSALS = {"bad_file": BadFile, "conflict": Conflict, "invalid_request": InvalidRequest}


class PortableService:
    def __init__(
        self,
        stores: Stores,
        identity: dict[str, Any],
        data_dir: Path | None,
        ttl_days: float = 0.0,
        clock: Callable[[], float] = time.time,
    ):
        """data_dir: the local data dir, whose files no export may replace nor import read; None for an
        object store."""
        self.stores = stores
        self.identity = identity
        self.data_dir = data_dir
        self.ttl_days = ttl_days
        self.clock = clock

    def _outside_data_dir(self, path: Path, field: str) -> None:
        if self.data_dir is None:
            return
        # the folder's links resolved (a link to the data dir is the data dir), and the file's own for import
        real = Path(os.path.realpath(path if field == "path" else path.parent))
        data = Path(os.path.realpath(self.data_dir))
        if real == data or data in real.parents:
            raise InvalidRequest(
                f"`{field}` {shown(path)} is inside the data dir ({shown(data)}), whose files are "
                "the store's own; give a path outside it (a relative path is relative to the "
                "working directory)"
            )

    def export(self, req: ExportRequest, progress: Callable[[str, int], None] | None = None) -> ExportedResponse:
        out = resolve_path(req.out, "out")
        self._outside_data_dir(out, "out")
        t0 = time.monotonic()
        try:
            counts = Exporter(self.stores, self.identity, progress).run(out, req.user_id, req.vectors, req.overwrite)
        except Refused as exc:
            raise REFUSALS[exc.code](exc.message) from None
        except OSError as exc:
            raise IoError(f"cannot write {shown(out)}: {exc.strerror or exc}; nothing was written") from None
        log.info("exported %s to %s", counts, out)
        return ExportedResponse(
            path=str(out),
            bytes=counts["bytes"],
            messages=counts["messages"],
            facts=counts["facts"],
            fact_events=counts["fact_events"],
            users=counts["users"],
            tombstones=counts["tombstones"],
            graph=counts["graph"],
            vectors=req.vectors,
            seconds=round(time.monotonic() - t0, 3),
        )

    def import_(self, req: ImportRequest, progress: Callable[[str, int], None] | None = None) -> ImportedResponse:
        path = resolve_path(req.path, "path")
        self._outside_data_dir(path, "path")
        t0 = time.monotonic()
        importer = Importer(
            self.stores,
            self.identity,
            req.on_conflict,
            req.strict,
            progress,
            Limits(req.max_invalid, req.max_expansion),
            req.restore_forgotten,
        )
        try:
            out = importer.run(path)
        except FileProblem as exc:
            raise BadFile(str(exc)) from None
        except Refused as exc:
            raise REFUSALS[exc.code](exc.message) from None
        if self.ttl_days > 0 and out.messages and importer.oldest < self.clock() - self.ttl_days * DAY:
            out.notes.append(
                f"some imported messages are older than --ttl-days {self.ttl_days:g}: the next "
                "automatic expiry deletes them (start with --ttl-days 0 to keep them)"
            )
        log.info(
            "imported %s: %d messages, %d facts, %d skipped, %d forgotten, %d invalid",
            path,
            out.messages,
            out.facts,
            out.skipped,
            out.forgotten,
            out.invalid,
        )
        return ImportedResponse(
            path=str(path),
            format="plain" if importer.plain else "export",
            messages=out.messages,
            facts=out.facts,
            fact_events=out.fact_events,
            users=out.users,
            graph=out.graph,
            skipped=out.skipped,
            forgotten=out.forgotten,
            tombstones=out.tombstones,
            overwritten=out.overwritten,
            invalid=out.invalid,
            reembedded=out.reembedded,
            redacted=out.redacted,
            vectors="reused" if importer.reuse else "reembedded",
            graph_source="restored" if importer.restore_graph else "rebuilt",
            errors=[LineError(line=n, message=m) for n, m in out.errors],
            notes=out.notes,
            seconds=round(time.monotonic() - t0, 3),
        )
