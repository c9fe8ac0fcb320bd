"""Keep the C heap from growing with every thread that ever allocated (glibc only).

glibc gives each thread that allocates its own malloc arena (up to 8 per core) and keeps what is
freed there for reuse. LanceDB runs its writes and compactions on a pool of Rust threads, so every
compaction of a growing table left its working memory parked in another arena: measured on a
100k-memory fill (store only, no model), the peak RSS was 569 MB with the default arenas and 394 MB
with two, and returning freed pages after a compaction (`malloc_trim`) took the resident set from
281 to 189 MB. `configure` must run before the libraries start their threads; an explicit
MALLOC_ARENA_MAX in the environment is left to glibc. Elsewhere (macOS, Windows, musl) both are no-ops.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform

log = logging.getLogger("sidecar.memory")

ARENAS = 2
_M_ARENA_MAX = -8  # from glibc's malloc.h

_libc: "ctypes.CDLL | None" = None


def configure() -> bool:
    """Cap the malloc arenas; True when it was done."""
    global _libc
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        _libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    return bool(_libc.mallopt(_M_ARENA_MAX, ARENAS))


def trim() -> None:
    """Give freed heap pages back to the system (after a compaction or a large batch)."""
    if _libc is not None:
        _libc.malloc_trim(0)
