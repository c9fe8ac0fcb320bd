"""Fact extraction from stored messages, in the background.

`store` only queues a job (the answer never waits for the LLM); one worker thread asks the LLM for
facts about the author, with retries and backoff, and sends each fact through consolidation.
A failed job is logged and counted, never raised: the message itself is already committed.
`sync` waits until the queue is empty and the worker idle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from ..llm import LLMClient, LLMError
from ..llm.worker import JobQueue
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
    def __init__(
        self, llm: LLMClient, categories: tuple[str, ...], consolidate: Callable[..., object], max_queue: int = 10_000
    ):
        self.llm = llm
        self.categories = categories
        self.consolidate = consolidate
        self.done = 0
        self.failed = 0
        self.jobs = JobQueue(self._one, "extraction", max_queue)

    @property
    def dropped(self) -> int:
        return self.jobs.dropped

    @staticmethod
    def wanted(content: str, is_bot: bool) -> bool:
        return not is_bot and len(content.strip()) >= MIN_CHARS

    def submit(self, job: Job) -> None:
        if not self.jobs.submit(job):
            log.warning(
                "extraction queue is full (%d jobs); message %s not queued", self.jobs.max_queue, job.message_id
            )

    def forget(self, user_id: str) -> None:
        """Drop the user's queued jobs and cancel a running one (called before forget_user deletes)."""
        dropped = self.jobs.forget(lambda j: j.user_id == user_id)
        if dropped:
            log.info("dropped %d queued extraction jobs of a forgotten user", dropped)

    def pending(self) -> int:
        return self.jobs.pending()

    def sync(self, timeout: float) -> int:
        """Wait until nothing is queued or running, at most `timeout` seconds; returns what is left."""
        return self.jobs.wait_idle(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        self.llm.stop.set()
        left = self.jobs.stop(timeout)
        if left:
            log.warning("shutting down with %d extraction jobs not run (their messages are stored)", left)

    def _one(self, job: Job) -> None:
        try:
            facts = llm_tasks.extract(self.llm, job.content, self.categories)
        except LLMError as exc:
            self.failed += 1
            log.error("fact extraction for message %s gave up after retries: %s", job.message_id, exc)
            return
        except Exception:
            self.failed += 1
            log.exception("fact extraction for message %s failed", job.message_id)
            return
        for text, category in facts:
            if not self.jobs.wanted():
                log.info("extraction for message %s cancelled (user forgotten or shutting down)", job.message_id)
                break
            try:
                self.consolidate(
                    job.user_id,
                    text,
                    category,
                    "extraction",
                    EXTRACTION_CONFIDENCE,
                    job.message_id,
                    llm_retries=self.llm.settings.retries,
                    background=True,
                    wanted=self.jobs.wanted,
                )
            except Exception:
                log.exception("storing extracted fact %r failed", text)
        self.done += 1
        log.info("extracted %d facts from message %s", len(facts), job.message_id)
