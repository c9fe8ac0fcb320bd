"""The background worker that embeds long memories chunk by chunk (see `chunks.py`).

A memory is acknowledged once its row (with its first window's vector) is durable; its chunks come after,
off the request path: the text is tokenized in pieces (the tokenizer releases the GIL), the windows are
embedded a few at a time, and a request's embedding stops the run in progress (`Embedder.embed_ids`), so
storing a 1 MB memory never holds up other requests. Until its chunks are in, a long memory is found by
its first window and by keyword search over its whole text.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .chunks import CHUNK_OVERLAP, CHUNK_TOKENS, PendingChunks

log = logging.getLogger("sidecar.store")

Windows = Callable[[str, int, int], tuple[list[tuple[int, int]], list[np.ndarray]]]
EmbedWindows = Callable[[list[np.ndarray]], Iterator[np.ndarray]]
# (row, spans, vectors) -> stored (False: the memory was deleted meanwhile)
Commit = Callable[[dict[str, Any], list[tuple[int, int]], np.ndarray], bool]


class Chunker:
    def __init__(
        self,
        pending: PendingChunks,
        windows: Windows,
        embed: EmbedWindows,
        fetch: Callable[[str], dict[str, Any] | None],
        commit: Commit,
    ):
        self.pending = pending
        self._windows = windows
        self._embed = embed
        self._fetch = fetch  # a stored memory's row by id (None: gone)
        self._commit = commit
        self._jobs: deque[dict[str, Any] | str] = deque(pending.ids)  # rows, or ids to read (after a restart)
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="chunker", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def queue(self, rows: list[dict[str, Any]]) -> None:
        """Memories that may run past the window; the pending list is written (durable) before this returns."""
        self.pending.add([r["id"] for r in rows])
        with self._cond:
            self._jobs.extend(rows)
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                job = self._jobs.popleft()
            rid = job if isinstance(job, str) else job["id"]
            try:
                self._run(job)
            except Exception:
                log.exception("chunking memory %s failed", rid)

    def _run(self, job: dict[str, Any] | str) -> None:
        rid = job if isinstance(job, str) else job["id"]
        if rid not in self.pending.ids:  # deleted meanwhile (`done` without chunks)
            return
        row = self._fetch(rid) if isinstance(job, str) else job
        if row is None:
            self.pending.done([rid])
            return
        spans, windows = self._windows(row["content"], CHUNK_TOKENS, CHUNK_OVERLAP)
        if not windows:  # within the window after all
            self.pending.done([rid])
            return
        parts = []
        for vectors in self._embed(windows):
            if rid not in self.pending.ids:  # deleted while being embedded: the store drops what was written
                return
            if self._stopping:
                return  # still pending: resumed at the next start
            parts.append(vectors)
        if self._commit(row, spans, np.concatenate(parts)):
            log.info("memory %s: %d chunks embedded", rid, len(spans))
        self.pending.done([rid])

    def stop(self) -> None:
        """Stops between two embedding runs; unfinished memories stay pending."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join()
        self.pending.close()
