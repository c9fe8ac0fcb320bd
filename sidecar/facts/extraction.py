"""Fact extraction from stored messages, in the background.

`store` only queues a job (the answer never waits for the LLM); one worker thread asks the LLM for
facts about the author, with retries and backoff, and sends each fact through consolidation.
A failed job is logged and counted, never raised: the message itself is already committed.
`sync` waits until the queue is empty and the worker idle.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from typing import Callable

from ..llm import LLMClient, LLMError
from . import llm_tasks

log = logging.getLogger("sidecar.extraction")

MIN_CHARS = 10  # shorter messages ("ok", "lol thanks") are never sent to the LLM
EXTRACTION_CONFIDENCE = 0.7


@dataclass(frozen=True)
class Job:
    user_id: str
    content: str
    message_id: str | None


class ExtractionWorker:
    def __init__(self, llm: LLMClient, categories: tuple[str, ...],
                 consolidate: Callable[..., object], max_queue: int = 10_000):
        self.llm = llm
        self.categories = categories
        self.consolidate = consolidate
        self.max_queue = max_queue
        self._jobs: deque[Job] = deque()
        self._cond = threading.Condition()
        self._current: Job | None = None
        self._cancelled = False  # the running job's user was forgotten meanwhile
        self._stopping = False
        self.done = 0
        self.failed = 0
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="extraction", daemon=True)
        self._thread.start()

    @staticmethod
    def wanted(content: str, is_bot: bool) -> bool:
        return not is_bot and len(content.strip()) >= MIN_CHARS

    def submit(self, job: Job) -> None:
        with self._cond:
            if len(self._jobs) >= self.max_queue:
                self.dropped += 1
                log.warning("extraction queue is full (%d jobs); message %s not queued", self.max_queue, job.message_id)
                return
            self._jobs.append(job)
            self._cond.notify_all()

    def forget(self, user_id: str) -> None:
        """Drop the user's queued jobs and cancel a running one (called before forget_user deletes)."""
        with self._cond:
            before = len(self._jobs)
            self._jobs = deque(j for j in self._jobs if j.user_id != user_id)
            if self._current is not None and self._current.user_id == user_id:
                self._cancelled = True
            dropped = before - len(self._jobs)
            self._cond.notify_all()
        if dropped:
            log.info("dropped %d queued extraction jobs of a forgotten user", dropped)

    def _wanted(self) -> bool:
        with self._cond:
            return not self._cancelled and not self._stopping

    def pending(self) -> int:
        with self._cond:
            return len(self._jobs) + (1 if self._current is not None else 0)

    def sync(self, timeout: float) -> int:
        """Wait until nothing is queued or running, at most `timeout` seconds; returns what is left."""
        with self._cond:
            self._cond.wait_for(lambda: not self._jobs and self._current is None, timeout=timeout)
            return len(self._jobs) + (1 if self._current is not None else 0)

    def stop(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._stopping = True
            left = len(self._jobs)
            self._jobs.clear()
            self._cond.notify_all()
        self.llm.stop.set()
        if left:
            log.warning("shutting down with %d extraction jobs not run (their messages are stored)", left)
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._jobs or self._stopping)
                if self._stopping:
                    return
                job = self._jobs.popleft()
                self._current = job
                self._cancelled = False
            try:
                self._one(job)
            finally:
                with self._cond:
                    self._current = None
                    self._cond.notify_all()

    def _one(self, job: Job) -> None:
        try:
            facts = llm_tasks.extract(self.llm, job.content, self.categories)
        except LLMError as exc:
            self.failed += 1
            log.error("fact extraction for message %s gave up after retries: %s", job.message_id, exc)
            return
        except Exception:  # noqa: BLE001 - the worker must survive anything
            self.failed += 1
            log.exception("fact extraction for message %s failed", job.message_id)
            return
        for text, category in facts:
            if not self._wanted():
                log.info("extraction for message %s cancelled (user forgotten or shutting down)", job.message_id)
                break
            try:
                self.consolidate(job.user_id, text, category, "extraction", EXTRACTION_CONFIDENCE, job.message_id,
                                 llm_retries=self.llm.settings.retries, background=True, wanted=self._wanted)
            except Exception:  # noqa: BLE001
                log.exception("storing extracted fact %r failed", text)
        self.done += 1
        log.info("extracted %d facts from message %s", len(facts), job.message_id)
