"""Python's cyclic garbage collector around start-up: off while the sidecar imports and opens its
store; once `ready` is written, everything start-up made is frozen and the collector turned back on.

Start-up creates about 120,000 container objects (module bodies, pydantic's and dataclasses' classes,
LanceDB's imports), nearly all of which live as long as the process. With the collector on, it ran
about 170 times over them before `ready` (one thread's 45-50 ms, measured with gc.callbacks on this
machine, 2026-11-27), finding the same long-lived objects again and again. `pause` turns it off
before the imports. `settle`, called once `ready` is on the pipe, moves every object start-up made to
the permanent generation (`gc.freeze`: no collection scans them again, so a full collection while
serving costs what the served data costs, not what start-up left) and turns the collector back on.
It does not collect first: a full collection there took 31 ms (in front of the first request) and
found 1,030 objects of start-up garbage, 0.2 MB, which stay frozen instead. The subcommands that do
not serve NDJSON (cli.FACES) turn the collector back on at once (`resume`), and so does a refused
configuration.
"""

from __future__ import annotations

import gc


def pause() -> None:
    gc.disable()


def resume() -> None:
    gc.enable()


def settle() -> None:
    """Freeze what start-up made, then collect as usual from here."""
    gc.freeze()
    gc.enable()
