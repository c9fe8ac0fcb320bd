"""One background thread working through a bounded queue of jobs: what both LLM tiers (fact
extraction, the graph's deep tier) need. Jobs of a forgotten user leave the queue and the running
one is marked cancelled (`wanted()` tells it); `stop` drops what is queued and waits for the thread.
A job that raises is the runner's business: `run_one` must catch what it expects."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

log = logging.getLogger("sidecar.llm")


class JobQueue:
    def __init__(self, run_one: Callable[[Any], None], name: str, max_queue: int, drop_oldest: bool = False):
        self.run_one = run_one
        self.max_queue = max_queue
        self.drop_oldest = drop_oldest  # full: drop the oldest job (else the new one)
        self._jobs: deque[Any] = deque()
        self._cond = threading.Condition()
        self.current: Any = None
        self._cancelled = False
        self._stopping = False
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Any) -> bool:
        """Queue a job; False when the queue was full and the job itself was dropped."""
        with self._cond:
            if len(self._jobs) >= self.max_queue:
                self.dropped += 1
                if not self.drop_oldest:
                    return False
                self._jobs.popleft()
            self._jobs.append(job)
            self._cond.notify_all()
            return True

    def forget(self, matches: Callable[[Any], bool]) -> int:
        """Drop the queued jobs that match and cancel a running one that does; returns how many left."""
        with self._cond:
            before = len(self._jobs)
            self._jobs = deque(j for j in self._jobs if not matches(j))
            if self.current is not None and matches(self.current):
                self._cancelled = True
            self._cond.notify_all()
            return before - len(self._jobs)

    def wanted(self) -> bool:
        """Whether the running job should go on (its user not forgotten, not shutting down)."""
        with self._cond:
            return not self._cancelled and not self._stopping

    def pending(self) -> int:
        with self._cond:
            return len(self._jobs) + (self.current is not None)

    def wait_idle(self, timeout: float) -> int:
        """Wait until nothing is queued or running, at most `timeout` seconds; returns what is left."""
        with self._cond:
            self._cond.wait_for(lambda: not self._jobs and self.current is None, timeout=timeout)
            return len(self._jobs) + (self.current is not None)

    def stop(self, timeout: float = 5.0) -> int:
        """Drop what is queued and wait for the running job; returns how many jobs were not run."""
        with self._cond:
            self._stopping = True
            left = len(self._jobs)
            self._jobs.clear()
            self._cond.notify_all()
        self._thread.join(timeout)
        return left

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._jobs or self._stopping)
                if self._stopping:
                    return
                self.current = self._jobs.popleft()
                self._cancelled = False
            try:
                self.run_one(self.current)
            except Exception:
                log.exception("background job failed")
            finally:
                with self._cond:
                    self.current = None
                    self._cond.notify_all()
