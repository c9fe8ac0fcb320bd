"""Python's object allocator inside a running sidecar: the count of its 1 MiB object arenas now and at their
high-water mark, the bytes its live objects take, and glibc's malloc totals. Python frees an arena only when
every object in it is gone, so the arenas a process once needed mostly stay (docs/graph.md, "Memory").

`enable(dir)` before starting sidecars (from source: `python -m sidecar`) puts pyheap_hook/ first on their
PYTHONPATH; `read(pid)` signals one (SIGUSR2) and returns what its hook wrote, or None (no hook loaded there: a
frozen binary, or a sidecar started before enable())."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

HOOK = Path(__file__).with_name("pyheap_hook")
_DIR: list[str] = []


def enable(directory: str | Path, types: bool = False, tracemalloc_frames: int = 0) -> None:
    """Sidecars started from now on load the hook, which writes into `directory` (a temporary one of the run);
    with `types`, also the count of live objects of the 15 most numerous types (`types`; of the objects made since
    `ready`: the sidecar freezes start-up's, which gc.get_objects() then leaves out) and LanceDB's cache bytes."""
    if not _DIR:
        _DIR.append(str(directory))
        os.environ["BENCH_PYHEAP_DIR"] = _DIR[0]
        if types:
            os.environ["BENCH_PYHEAP_TYPES"] = "1"
        if tracemalloc_frames:
            os.environ["BENCH_TRACEMALLOC"] = str(tracemalloc_frames)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HOOK), os.environ.get("PYTHONPATH")) if p)


def read(pid: int, timeout: float = 10.0) -> dict[str, Any] | None:
    if not _DIR or not (Path(_DIR[0]) / f"{pid}.ready").exists():
        return None  # no hook in that process: SIGUSR2 would end it
    path = Path(_DIR[0]) / f"{pid}.json"
    path.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR2)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return json.loads(path.read_text())
        time.sleep(0.1)
    return None


def growth(before: str | Path, after: str | Path, top: int = 15) -> list[str]:
    """The allocation sites whose live Python bytes grew most between two tracemalloc snapshots the hook dumped."""
    import tracemalloc

    a = tracemalloc.Snapshot.load(str(before))
    b = tracemalloc.Snapshot.load(str(after))
    return [str(stat) for stat in b.compare_to(a, "traceback")[:top]]
