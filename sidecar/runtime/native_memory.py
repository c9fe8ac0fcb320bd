"""Keep the C heap to what is in use (glibc only): few arenas, large blocks mmapped, free pages returned.

glibc gives each thread that allocates its own malloc arena (up to 8 per core) and keeps what is
freed there for reuse. LanceDB runs its writes and compactions on a pool of Rust threads, so every
compaction of a growing table left its working memory parked in another arena: measured on a
100k-memory fill (store only, no model), the peak RSS was 569 MB with the default arenas and 394 MB
with two, and returning freed pages after a compaction (`malloc_trim`) took the resident set from
281 to 189 MB.

Two more glibc habits made the heap grow with the number of requests, not with what is kept. Blocks
above a threshold get their own mmap (returned on free), but glibc raises that threshold to the size
of each such block freed, up to 32 MB: after the first large temporary (a user's rows loaded from
LanceDB, the float32 copy of their vectors for a search) every later one came from the heap, between
long-lived rows, and as users grew the holes they left were never big enough for the next one. And
free pages inside the heap stay resident until `malloc_trim`, which ran only after a compaction. A
fixed threshold (128 KiB, glibc's own starting value) and a trim every TRIM_INTERVAL_SECONDS keep the
resident heap to what is in use: in `python scripts/bench.py memory --users 200` (16 MB vector cache, full
from step 15k), RSS went 247 -> 291 MiB from step 40k to 80k with glibc's defaults, 242 -> 267 MiB
with the fixed threshold, and stayed at 227-232 MiB from 30k to 60k with both (the README has the
series).

pyarrow's own pool is mimalloc, which keeps what it frees for reuse and is untouched by
`malloc_trim`; the graph builder's and the stores' tables built in Python parked tens of MiB there. On
glibc pyarrow allocates from the C heap instead (ARROW_DEFAULT_MEMORY_POOL=system unless the
environment says otherwise), which the trims keep small: measured after a batch import of 30,000
messages with the graph built (`python scripts/bench.py graph-build`-like, one run each), RSS 425 MiB
with mimalloc (49 of it in its pool) against 378 MiB with the system pool, and 336 MiB with the graph off.

One more native setting is made here, on every system: numpy's OpenBLAS runs on one thread
(OPENBLAS_NUM_THREADS=1 unless the environment says otherwise). The vector cache's scoring is a
matrix-vector product; past about 1,100 rows OpenBLAS splits it over its threads, and on 2 cores shared
with onnxruntime and the background work a split product waits for a busy core: measured in-process
for 5,000 x 384 while one other process kept a core busy, p50 51 us and p99 12.0 ms with OpenBLAS's
threads against 95 us and 3.6 ms with one.

The fixed threshold makes every large block a fresh mmap, page-faulted on first touch: onnxruntime
therefore keeps its own arena on (embedding/embedder.py), or each model run maps and zeroes its
tensors anew (batch ingest at 0.6x the rate, measured).

Loading the libraries maps far more of their code than serving uses: the kernel maps the pages around
each one touched (fault-around) and start-up runs code that never runs again. At `ready`, about 135 MiB
of the 253 resident were pages of shared libraries held clean from their files (LanceDB's 52,
onnxruntime's 20, Arrow's 14). `release_code_pages` unmaps the resident pages of the libraries'
read-only mappings that hold nothing copied, dirty or swapped out; the pages stay in the page cache (a
page used again is a minor fault while the system has memory to keep it cached), and code still in use
comes back at once. Measured: RSS at `ready` 250 -> 126-131 MiB (medians of 5-7 spawns), after the
first store and two queries 262 -> 191 MiB; see docs/performance.md, "Clean code pages released". It
runs before `ready` and once after the cache's warm-up, not after compactions: releasing again would
also drop the code that serving uses, to be faulted back by the next requests. glibc on Linux only
(where `configure` found glibc). A library whose file pages are dirty in the page cache (just written,
or on tmpfs, as a onefile binary unpacked into a tmpfs /tmp is) is left alone and gains nothing.

`configure` must run before the libraries are imported and start their threads; an explicit MALLOC_ARENA_MAX or
MALLOC_MMAP_THRESHOLD_ in the environment is left to glibc. Elsewhere (macOS, Windows, musl) only the
BLAS thread count is set; the rest is a no-op.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform
import re
import time
from collections.abc import Iterable, Iterator

log = logging.getLogger("sidecar.memory")

ARENAS = 2
TRIM_INTERVAL_SECONDS = 5.0
MMAP_THRESHOLD = 128 * 1024
_M_ARENA_MAX = -8  # from glibc's malloc.h
_M_MMAP_THRESHOLD = -3

_libc: ctypes.CDLL | None = None


def configure() -> bool:
    """One BLAS thread; on glibc, pyarrow on the C heap, the malloc arenas capped and the mmap threshold
    fixed. True when the arenas were capped."""
    global _libc
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # read when numpy loads OpenBLAS
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        _libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")  # read when pyarrow loads
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        _libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    return bool(_libc.mallopt(_M_ARENA_MAX, ARENAS))


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def heap_bytes() -> dict[str, int] | None:
    """glibc's own account, over all arenas: bytes in use and free in the heaps, and in mmapped blocks
    (None off glibc or before 2.33). Free heap bytes that grow while in-use ones do not are fragmentation."""
    if _libc is None or not hasattr(_libc, "mallinfo2"):
        return None
    _libc.mallinfo2.restype = _Mallinfo2
    info = _libc.mallinfo2()
    return {"in_use": info.uordblks, "free": info.fordblks, "mmapped": info.hblkhd}


MADV_DONTNEED = 4  # Linux's value, on every architecture it runs on
_LIBRARY = re.compile(r"\.so(\.[0-9.]+)?( \(deleted\))?$")  # libx.so, libx.so.6, libx.so.2600, ...abi3.so
_COUNTED = ("Rss:", "Shared_Dirty:", "Private_Dirty:", "Anonymous:", "Swap:")


def release_code_pages() -> int:
    """Unmap the resident pages of shared libraries' read-only mappings that hold only pages shared with
    the file (glibc on Linux); the pages stay in the page cache. A mapping with any copied (anonymous),
    dirty or swapped-out page (relocated data, copy-on-write) is left alone: dropping it would lose those
    changes. Each mapping is released as soon as its record is read, so nothing can change it between the
    check and the release but a concurrent unmap or mprotect of a loaded library (nothing here does that).
    Returns the KiB unmapped (0 elsewhere, or on any failure: this only trims)."""
    if _libc is None or platform.system() != "Linux":
        return 0
    released = 0
    t0 = time.monotonic()
    try:
        with open("/proc/self/smaps", encoding="utf-8", errors="replace") as f:
            for start, end, kib in clean_library_mappings(f):
                if _libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start), MADV_DONTNEED) == 0:
                    released += kib
    except Exception:
        log.debug("releasing code pages failed", exc_info=True)
    log.debug("clean code pages released: %d KiB in %.0f ms", released, (time.monotonic() - t0) * 1000)
    return released


def clean_library_mappings(lines: Iterable[str]) -> Iterator[tuple[int, int, int]]:
    """(start, end, resident KiB) of each read-only mapping of a shared library whose resident pages are
    all clean and shared with the file and none swapped out, from the lines of /proc/PID/smaps; each
    yielded as soon as the next record begins (or the lines end)."""
    current: dict[str, int] | None = None
    for line in lines:
        key, _, rest = line.partition(" ")
        if key.endswith(":"):
            if current is not None and key in _COUNTED:
                current[key[:-1]] = int(rest.split()[0])
            continue
        # a mapping's header: "start-end perms offset dev inode [path]"
        if current is not None and _clean(current):
            yield current["start"], current["end"], current["Rss"]
        fields = rest.split(None, 4)
        keep = (
            len(fields) == 5
            and "w" not in fields[0]
            and fields[4].startswith("/")
            and not fields[4].startswith("/dev/")
            and _LIBRARY.search(fields[4].rstrip("\n")) is not None
        )
        start, _, end = key.partition("-")
        current = {"start": int(start, 16), "end": int(end, 16)} if keep else None
    if current is not None and _clean(current):
        yield current["start"], current["end"], current["Rss"]


def _clean(mapping: dict[str, int]) -> bool:
    return mapping.get("Rss", 0) > 0 and all(mapping.get(key[:-1], 1) == 0 for key in _COUNTED[1:])


def trim() -> None:
    """Give freed heap pages back to the system (after a compaction or a large batch)."""
    if _libc is not None:
        _libc.malloc_trim(0)
