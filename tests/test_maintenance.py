"""The maintenance loop's schedule (pure logic: a fake clock, store, database and graph stand in for
the real ones, which the end-to-end tests drive): what runs when, what a failure changes, and when the
graph's catch-up starts."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from sidecar.runtime import maintenance


class Clock:
    def __init__(self, ticks: int):
        self.now, self.ticks = 1000.0, ticks

    def monotonic(self) -> float:
        return self.now

    # the loop's stop event
    def is_set(self) -> bool:
        return self.ticks <= 0

    def wait(self, seconds: float) -> None:
        self.now += seconds
        self.ticks -= 1


class Store:
    def __init__(self, log: list, warm_fails: bool = False, compact_fails: int = 0):
        self.log, self.warm_fails, self.compact_fails = log, warm_fails, compact_fails
        self.database = SimpleNamespace(maintains=lambda: self.holds, read_only_reason=lambda: None)
        self.holds = True

    def warm_cache(self) -> int:
        self.log.append("warm")
        if self.warm_fails:
            raise OSError("the warm-up failed")
        return 1

    def compact_due(self) -> bool:
        return self.compact_fails > 0

    def compact(self, exclusive: bool) -> None:
        self.compact_fails -= 1
        raise OSError("the compaction failed")


class Graph:
    def __init__(self, log: list):
        self.log, self.caught_up = log, threading.Event()

    def catch_up_in_background(self) -> None:
        self.log.append("catch-up")

    def consolidation_due(self) -> bool:
        return False


def run(monkeypatch, clock: Clock, store: Store, graph: Graph | None, ttl_days: float = 0.0, on_tick=None) -> None:
    monkeypatch.setattr(maintenance, "time", clock)
    monkeypatch.setattr(maintenance.native_memory, "trim", lambda: None)
    monkeypatch.setattr(maintenance.native_memory, "release_code_pages", lambda: 0)
    if on_tick is not None:
        wait = clock.wait
        clock.wait = lambda s: (wait(s), on_tick(clock))  # type: ignore[method-assign]
    service = SimpleNamespace(store=store, expire=lambda ttl, background: store.log.append(("expire", ttl)))
    cfg = SimpleNamespace(ttl_days=ttl_days, cleanup_interval_hours=24.0)
    maintenance.maintain(cfg, service, graph, clock)  # type: ignore[arg-type]


def test_a_failure_with_expiry_off_never_expires_anything(monkeypatch):
    """Regression: a failed step set the next expiry 60 s ahead even with --ttl-days 0, and expire(0)
    deletes every memory older than now, that is all of them."""
    log: list = []
    run(monkeypatch, Clock(300), Store(log, compact_fails=3), Graph(log), ttl_days=0.0)
    assert not [e for e in log if isinstance(e, tuple)], log


def test_a_failure_with_expiry_on_retries_it_a_minute_later(monkeypatch):
    log: list = []
    run(monkeypatch, Clock(300), Store(log, compact_fails=1), Graph(log), ttl_days=30.0)
    assert log.count(("expire", 30.0)) == 2  # at start, and once more after the failed compaction's minute


@pytest.mark.parametrize("warm_fails", [False, True])
def test_the_catch_up_starts_once_after_the_warm_up(monkeypatch, warm_fails):
    log: list = []
    run(monkeypatch, Clock(20), Store(log, warm_fails=warm_fails), Graph(log))
    assert log == ["warm", "catch-up"]


def test_the_catch_up_follows_the_lease(monkeypatch):
    """On a shared store only the lease holder builds what others stored: a sidecar that does not hold it
    starts no catch-up (and graph commands do not wait for one), and starts one each time the lease
    comes to it, never twice for one holding."""
    log: list = []
    store, graph = Store(log), Graph(log)
    store.holds = False
    timeline = {5: True, 9: False, 12: True}  # tick -> whether the lease is held from then on

    def on_tick(clock: Clock) -> None:
        store.holds = timeline.get(20 - clock.ticks, store.holds)

    run(monkeypatch, Clock(20), store, graph, on_tick=on_tick)
    assert log == ["warm", "catch-up", "catch-up"]
    assert graph.caught_up.is_set()
