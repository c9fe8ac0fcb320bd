"""A sidecar's RSS over time, to tell what a peak was made of: VmRSS every INTERVAL seconds, and whenever it
reaches a new high (HIGH_STEP MiB above the last recorded) its kinds of mapping (procfs.rss_by_kind_mib) and
LanceDB's code pages beside it; marks name the phases between. Written as JSON: {"samples": [[s, MiB]],
"highs": [[s, MiB, kinds, lancedb_code_mib]], "marks": [[s, name]], "peak": [s, MiB]}, seconds from the start."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .output import log, write_json
from .procfs import rss_by_kind_mib, rss_of_file_mib, status_kib

INTERVAL = 0.2
HIGH_STEP = 10  # MiB


class RssTimeline:
    def __init__(self, pid: int):
        self.pid, self.t0 = pid, time.perf_counter()
        self.samples: list[list[float]] = []
        self.highs: list[list[Any]] = []
        self.marks: list[list[Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="rss-timeline", daemon=True)

    def _now(self) -> float:
        return round(time.perf_counter() - self.t0, 2)

    def _poll(self) -> None:
        high = 0.0
        while not self._stop.is_set():
            try:
                rss = status_kib(self.pid)["VmRSS"] / 1024
                self.samples.append([self._now(), round(rss, 1)])
                if rss >= high + HIGH_STEP:
                    high = rss
                    self.highs.append(
                        [self._now(), round(rss, 1), rss_by_kind_mib(self.pid), rss_of_file_mib(self.pid, "_lancedb")]
                    )
            except (OSError, KeyError):  # the process is gone, or not yet readable
                pass
            self._stop.wait(INTERVAL)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def mark(self, name: str) -> None:
        self.marks.append([self._now(), name])

    def result(self) -> dict[str, Any]:
        peak = max(self.samples, key=lambda s: s[1], default=None)
        return {"samples": self.samples, "highs": self.highs, "marks": self.marks, "peak": peak}


class _NoTimeline:
    def mark(self, name: str) -> None:
        pass


@contextmanager
def rss_timeline(path: Path | None, pid: int) -> Iterator[RssTimeline | _NoTimeline]:
    """An RssTimeline of `pid` written to `path` when the block ends (nothing when path is None)."""
    if path is None:
        yield _NoTimeline()
        return
    tl = RssTimeline(pid)
    tl.start()
    try:
        yield tl
    finally:
        tl.stop()
        out = tl.result()
        write_json(path, out)
        if out["peak"]:
            highs = [h for h in tl.highs if h[0] <= out["peak"][0]]
            kinds = highs[-1][2] if highs else {}
            log(f"RSS timeline: peak {out['peak'][1]:.0f} MiB at {out['peak'][0]:.1f} s ({kinds}); {path}")
