"""How long ago the process the host spawned started: what `ready`'s `startup_ms` counts.

A host times the sidecar from its spawn, so `startup_ms` counts from the start of the process the host
spawned: this process (`python -m sidecar`, a onedir build), or in a onefile build the launcher, PyInstaller's
bootloader and our parent at start-up, which unpacks the whole bundle before Python starts (seconds, on every
launch). The start time comes from the OS (platform.started_seconds_ago). Where it cannot be read (or reads as
later than this module's import, which cannot be), the count starts at this module's import instead, the
sidecar's first line of code, and is smaller by the interpreter's own start.
"""

from __future__ import annotations

import time

from .platform import started_seconds_ago

IMPORTED = time.monotonic()  # the fallback's start: cli.py imports this module before anything slow


def since_spawn(pid: int) -> tuple[float, bool]:
    """(seconds since process `pid` started, True) from the OS, or (seconds since this module's import, False)
    when the OS does not tell or tells something impossible."""
    here = time.monotonic() - IMPORTED
    seconds = started_seconds_ago(pid)
    # a clock tick (10 ms on Linux) of rounding aside, a process we run in cannot have started after our import
    if seconds is None or seconds < here - 0.05 or seconds > here + 24 * 3600:
        return here, False
    return max(seconds, here), True
