"""Domain rules of the memory: per-user scoping, storing, semantic recall, expiry, forgetting, stats.

Testable without pipes: takes typed requests, returns typed responses, raises SidecarError.
"""

from __future__ import annotations

import functools
import logging
import math
import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import __version__
from ..embedding.embedder import Embedder
from ..storage import SCHEMA_VERSION, sql_num, sql_str
from ..text import nfkc_size
from ..wire import (
    PROTOCOL_VERSION,
    CleanupRequest,
    DeleteRequest,
    ForgetUserRequest,
    MessageOut,
    ModelInfo,
    OkResponse,
    QueryRequest,
    Removed,
    ResultsResponse,
    StatsRequest,
    StatsResponse,
    StoreRequest,
    Tombstone,
)
from ..wire.errors import Disabled, InvalidRequest, NotFound, SidecarError, TooLarge, quote
from . import padding
from .interface import Companion, GraphSearch, Supersession
from .ranking import POOL, fuse_window
from .store import MessageStore
from .supersession import supersede
from .timewords import named_window

log = logging.getLogger("sidecar.service")

DAY = 86_400.0
LIKENESS = frozenset({"hybrid", "semantic"})  # modes ranked by likeness to the text: the padding floor applies


def content_over_limit(
    content: str,
    max_bytes: int,
    max_chars: int | None = None,
    what: str = "content",
    options: tuple[str, str] = ("--max-content-bytes", "--max-content-chars"),
) -> str | None:
    """Why a memory's content (or another text: `what`, its limits' `options`) is too large (a sentence naming
    the limit), or None. The limit is in UTF-8 bytes: what the request line, the write-ahead log and the disk
    hold, and what its NFKC form holds (keyword search reads that: U+FDFA becomes 18 characters), measured in
    bounded work (text.nfkc_size); the characters, when max_chars is set, as well."""
    if max_chars is not None and len(content) > max_chars:
        return f"{what} has {len(content)} characters, over the limit of {max_chars} ({options[1]})"
    if len(content) * 4 > max_bytes:  # a character takes at most 4 bytes: only then count them
        size = len(content.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            return f"{what} has {size} bytes (UTF-8), over the limit of {max_bytes} bytes ({options[0]})"
    if len(content) * 18 * 4 > max_bytes and not content.isascii():  # NFKC makes a character 18 at most
        grown = nfkc_size(content, stop=max_bytes)
        if grown > max_bytes:
            return (
                f"{what} grows to more than {max_bytes} bytes under NFKC normalisation (compatibility characters "
                f"such as U+FDFA expand up to 18 times), over the limit of {max_bytes} bytes ({options[0]})"
            )
    return None


def _ts_out(value: float) -> int:
    return int(value)  # timestamps are >= 0 (validated), so this is the floor


@functools.cache
def _library_versions() -> dict[str, str]:
    # module attributes, not importlib.metadata: a frozen binary carries no dist-info
    import lancedb
    import onnxruntime
    import pyarrow
    import tokenizers

    return {m.__name__: m.__version__ for m in (lancedb, onnxruntime, pyarrow, tokenizers)}


def past_expiry_note(past: int, of: int, ttl_days: float) -> str:
    """What a store answer says when memories were stored with timestamps already past the expiry."""
    if of == 1:
        which = "This memory's timestamp is"
    else:
        which = f"{past} of these {of} memories' timestamps {'is' if past == 1 else 'are'}"
    return (
        f"{which} older than the expiry (--ttl-days {ttl_days:g}): stored, and deleted at the next automatic "
        "cleanup (at start-up and every --cleanup-interval-hours). To keep old memories, run with a larger "
        "--ttl-days, or 0 to keep everything."
    )


class MemoryService:
    def __init__(
        self,
        embedder: Embedder,
        store: MessageStore,
        *,
        ttl_days: float = 30.0,
        max_content_bytes: int = 1_000_000,
        max_content_chars: int | None = None,
        max_batch: int = 1_000,
        max_limit: int = 100,
        clock: Callable[[], float] = time.time,
        companions: tuple[Companion, ...] = (),
        graph_search: GraphSearch | None = None,
        supersession: Supersession | None = None,
    ):
        self.embedder = embedder
        self.store = store
        self.ttl_days = ttl_days
        self.max_content_bytes = max_content_bytes
        self.max_content_chars = max_content_chars
        self.max_batch = max_batch
        self.max_limit = max_limit
        self.clock = clock
        self.started = time.monotonic()
        self.companions = companions  # other domains told of every store and forget (facts, graph)
        self.graph_search = graph_search  # query mode "graph" (graph memory on)
        self.supersession = supersession  # which memories a later one replaced (graph memory, facts)

    def content_over_limit(self, content: str) -> str | None:
        """Why a memory's content is over this sidecar's limits (every face: store, import, MCP), or None."""
        return content_over_limit(content, self.max_content_bytes, self.max_content_chars)

    # ------------------------------------------------------------------ commands

    def store_messages(self, req: StoreRequest) -> OkResponse:
        rows = self._rows(req)
        return self._stored(req, rows, self._commit(rows))

    def store_group(self, reqs: list[StoreRequest]) -> list[OkResponse | SidecarError]:
        """Group commit: several queued store requests embedded as one batch and written in one
        LanceDB commit. Each gets its own answer; one request's bad input fails only that one."""
        prepared: list[list[dict[str, Any]] | SidecarError] = []
        for req in reqs:
            try:
                prepared.append(self._rows(req))
            except SidecarError as exc:
                prepared.append(exc)
        vectors = self._commit([r for rows in prepared if isinstance(rows, list) for r in rows])
        out: list[OkResponse | SidecarError] = []
        at = 0
        for req, rows in zip(reqs, prepared):
            if isinstance(rows, SidecarError):
                out.append(rows)
            else:
                out.append(self._stored(req, rows, vectors[at : at + len(rows)]))
                at += len(rows)
        return out

    def _rows(self, req: StoreRequest) -> list[dict[str, Any]]:
        items = req.items()
        if len(items) > self.max_batch:
            raise TooLarge(f"batch of {len(items)} messages is over the limit of {self.max_batch}")
        now = self.clock()
        rows: list[dict[str, Any]] = []
        for n, m in enumerate(items):
            where = f"messages[{n}]: " if req.messages is not None else ""
            over = content_over_limit(m.content, self.max_content_bytes, self.max_content_chars)
            if over is not None:
                raise TooLarge(where + over)
            rows.append(
                {
                    "id": str(uuid.uuid4()),
                    "user_id": m.user_id,
                    "content": m.content,
                    "is_bot": m.is_bot,
                    "timestamp": float(m.timestamp) if m.timestamp is not None else now,
                    "message_id": m.message_id,
                    "channel_id": m.channel_id,
                    "reply_to": m.reply_to,
                    "username": m.username,
                }
            )
        return rows

    def _commit(self, rows: list[dict[str, Any]]) -> np.ndarray:
        """Embed and store the rows; returns their vectors."""
        if not rows:
            return np.empty((0, self.store.dim), dtype=np.float32)
        vectors, long = self.embedder.embed_flagged([r["content"] for r in rows], "passage")
        self.store.add(rows, vectors, long)  # the long ones are chunked in the background
        return vectors

    def _stored(self, req: StoreRequest, rows: list[dict[str, Any]], vectors: np.ndarray) -> OkResponse:
        """The answer to a committed store, after the other domains heard of it (display names, fact
        extraction, graph building: each queues its slow work)."""
        for companion in self.companions:
            companion.on_stored(rows, vectors, req.extract)
        ids = [r["id"] for r in rows]
        expires = [self.expires_at(r["timestamp"]) for r in rows]
        past = sum(1 for e in expires if e is not None and e <= self.clock())
        note = past_expiry_note(past, len(rows), self.ttl_days) if past else None
        if req.messages is not None:
            return OkResponse(ids=ids, expires_at=expires, note=note)
        return OkResponse(id=ids[0], expires_at=expires[0], note=note)

    def expires_at(self, timestamp: float) -> int | None:
        """When a memory of this timestamp expires (unix seconds), None when expiry is off."""
        if not self.ttl_days or self.ttl_days <= 0:
            return None
        return math.ceil(timestamp + self.ttl_days * DAY)

    def query(self, req: QueryRequest) -> ResultsResponse:
        if req.limit > self.max_limit:
            raise TooLarge(f"limit {req.limit} is over the maximum of {self.max_limit}")
        for companion in self.companions:
            companion.on_query(req.user_id, req.username)
        text = req.text
        vector: list[np.ndarray] = []
        limit = padding.fetch(req.limit, req.min_score)  # room for what the padding step drops
        if req.mode == "graph":
            if self.graph_search is None:
                raise Disabled("query mode `graph` needs graph memory, which is switched off (--graph false)")
            vector.append(self.embedder.embed_query(text))
            rows = self.graph_search(req.user_id, text, vector[0], limit, req.since, req.until)
            rows = [r for r in rows if req.include_bot or not r["is_bot"]]
        else:
            rows = self._search(req, limit, vector)
        # no padding: small talk, and results by likeness below the floor sharing no term with the text
        rows = padding.drop_padding(rows, text, req.min_score, likeness=req.mode in LIKENESS)
        rows = supersede(  # what is true now, first: marks in every mode, the order in hybrid and graph
            rows,
            self.supersession,
            req.user_id,
            text,
            self.clock(),
            lambda ids: self._heads(req, ids, vector),
            req.limit,
            reorder=req.mode in ("hybrid", "graph"),
        )[: req.limit]
        out = []
        for r in rows:
            if req.min_similarity is not None and r["similarity"] < req.min_similarity:
                continue
            r["similarity"] = round(r["similarity"], 6)
            r["score"] = round(r.get("score", r["similarity"]), 6)  # semantic: ranked by the cosine itself
            r["timestamp"] = _ts_out(r["timestamp"])
            out.append(MessageOut(**r))
        return ResultsResponse(messages=out)

    def _search(self, req: QueryRequest, limit: int, vector: list[np.ndarray]) -> list[dict[str, Any]]:
        """The ranked rows of a semantic, keyword or hybrid query, `limit` of them (`vector`: the query's vector
        once computed)."""
        text = req.text

        def embed() -> np.ndarray:  # computed inside search, beside the full-text queries; once
            if not vector:
                vector.append(self.embedder.embed_query(text))
            return vector[0]

        window = (
            named_window(text, self.clock())
            if req.mode == "hybrid" and req.since is None and req.until is None
            else None
        )
        rows = self.store.search(
            embed,
            req.user_id,
            max(limit, POOL) if window else limit,
            include_bot=req.include_bot,
            since=req.since,
            until=req.until,
            text=text,
            mode=req.mode,
        )
        if window:  # the query names a time: what is inside it ranks up (messages/timewords.py)
            inside = self.store.search(
                embed,
                req.user_id,
                POOL,
                include_bot=req.include_bot,
                since=window[0],
                until=window[1],
                text=text,
                mode="hybrid",
            )
            rows = fuse_window(rows, inside, limit)
        return rows

    def _heads(self, req: QueryRequest, ids: list[str], vector: list[np.ndarray]) -> dict[str, dict[str, Any]]:
        """The rows of these current memories (the user's own only) that the query's filters let through, with
        their similarity to the query."""
        rows, vectors = self.store.embedded(ids, req.user_id)
        if not vector:
            vector.append(self.embedder.embed_query(req.text))
        out: dict[str, dict[str, Any]] = {}
        for r, v in zip(rows, vectors):
            if (
                r["user_id"] != req.user_id
                or (r["is_bot"] and not req.include_bot)
                or (req.since is not None and r["timestamp"] < req.since)
                or (req.until is not None and r["timestamp"] > req.until)
            ):
                continue
            out[r["id"]] = {**r, "similarity": float(v @ vector[0])}
        return out

    def cleanup(self, req: CleanupRequest) -> OkResponse:
        ttl = req.ttl_days if req.ttl_days is not None else self.ttl_days
        if not ttl or ttl <= 0:
            raise InvalidRequest("cleanup needs ttl_days > 0 (automatic expiry is disabled: --ttl-days 0)")
        return OkResponse(deleted=self.expire(float(ttl), req.user_id))

    def expire(self, ttl_days: float, user_id: str | None = None, background: bool = False) -> int:
        """background (the automatic expiry): no request waits for a compaction; the background
        schedule compacts the deleted rows away."""
        cutoff = self.clock() - ttl_days * DAY
        where = f"timestamp < {sql_num(cutoff)}"
        if user_id is not None:
            where += f" AND user_id = {sql_str(user_id)}"
        deleted = self.store.delete(where, exclusive=not background, on_gone=self._gone)
        if not deleted and not background:
            self.store.compact()  # a cleanup request always leaves the table compacted
        log.info("expired %d memories older than %g days", deleted, ttl_days)
        return deleted

    def delete(self, req: DeleteRequest) -> OkResponse:
        where = f"id = {sql_str(req.id)}"
        if req.user_id is not None:  # only that user's: another user's id is not_found, like an unknown one
            where += f" AND user_id = {sql_str(req.user_id)}"
        deleted = self.store.delete(where, on_gone=self._gone)
        if not deleted:  # nothing was forgotten: no tombstone either (an id never stored stays unknown)
            raise NotFound(f"no memory with id {quote(req.id)}")
        at = self.clock()
        self.store.tombstones.write("memory", [req.id], at)
        return OkResponse(deleted=deleted, tombstone=Tombstone(of="memory", id=req.id, at=int(at)))

    def _gone(self, ids: list[str]) -> None:
        for companion in self.companions:
            companion.on_deleted(ids)

    def forget_user(self, req: ForgetUserRequest) -> OkResponse:
        """Messages, and everything the other domains keep for the user (facts, their history, the
        display name, the graph): all deleted, then compacted away together with the messages. A tombstone
        (the user id and when, nothing else) is written first, so that an import of an older backup does not
        bring the user back; it is written for a user never seen too (nothing of theirs may come back)."""
        at = self.clock()
        self.store.tombstones.write("user", [req.user_id], at)
        extra: dict[str, int] = {}
        for companion in self.companions:
            extra.update(companion.forget_user(req.user_id))
        chunks = self.store.chunks_of(req.user_id)
        deleted = self.store.delete(f"user_id = {sql_str(req.user_id)}")
        if not deleted:
            self.store.compact()  # the other domains' rows leave the disk even when no message was left
        removed = Removed(
            memories=deleted,
            facts=extra.get("facts_deleted", 0),
            graph_episodes=extra.get("graph_episodes_deleted", 0),
            chunks=chunks,
        )
        tombstone = Tombstone(of="user", id=req.user_id, at=int(at))
        # extra: the companions' counts, as before
        return OkResponse.model_validate({"deleted": deleted, **extra, "removed": removed, "tombstone": tombstone})

    def stats(self, req: StatsRequest | None = None) -> StatsResponse:
        files = self.embedder.files
        return StatsResponse(
            memories=self.store.count(),
            users=self.store.users(),
            cache=self.store.cache_stats(),
            chunks=self.store.chunk_stats(),
            reembed=self.store.reembed_stats(),
            disk_bytes=self.store.disk_bytes(),
            model=ModelInfo(
                name=files.name, dim=files.dim, digest=files.digest, source=files.source, **files.spec.describe()
            ),
            version=__version__,
            protocol=PROTOCOL_VERSION,
            schema_version=SCHEMA_VERSION,
            uptime_seconds=round(time.monotonic() - self.started, 3),
            data_dir=str(self.store.data_dir),
            versions=_library_versions(),
            **{k: v for c in self.companions for k, v in c.stats().items()},
        )
