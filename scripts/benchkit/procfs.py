"""Memory and CPU time of a process from /proc (Linux only): the kB fields of /proc/PID/status, resident
memory by kind of mapping from /proc/PID/smaps, and CPU seconds from /proc/PID/stat."""

from __future__ import annotations

import os
from pathlib import Path


def status_kib(pid: int | str = "self") -> dict[str, int]:
    """The kB fields of /proc/PID/status (VmRSS, VmHWM, ...). Raises OSError when there is no such process."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            value = rest.split()
            if len(value) == 2 and value[1] == "kB":
                out[key] = int(value[0])
    return out


def rss_kib(pid: int | str = "self") -> int:
    return status_kib(pid).get("VmRSS", 0)


def _mappings(pid: int | str) -> list[list]:
    """[start, end, permissions, path ("" when anonymous), resident kB] of each mapping in /proc/PID/smaps."""
    maps: list[list] = []
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split(maxsplit=6)
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                start, end = (int(x, 16) for x in head[0].split("-"))
                maps.append([start, end, head[1], head[5].strip() if len(head) > 5 else "", 0])
            elif head[0] == "Rss:":
                maps[-1][4] = int(head[1])
    return maps


def rss_by_kind_mib(pid: int | str) -> dict[str, float]:
    """Resident MiB by kind of mapping, from /proc/PID/smaps: the main heap, glibc's other arenas (heaps
    aligned to 64 MiB, the threads other than the main one: LanceDB's, the log flusher), pyarrow's mimalloc
    pool (its 1 GiB reservation), other anonymous mappings of 1 MiB and more (Python's object arenas, blocks of
    128 KiB and more such as the vector cache's), smaller anonymous ones, and mapped files."""
    maps = _mappings(pid)
    out = dict.fromkeys(("heap", "arenas", "pyarrow", "anon_large", "anon_small", "files", "other"), 0.0)
    heap_size = 64 << 20
    for i, (start, end, _perm, name, rss) in enumerate(maps):
        size = end - start
        following = maps[i + 1] if i + 1 < len(maps) else None
        if name == "[heap]":
            kind = "heap"
        elif name:
            kind = "other" if name.startswith("[") else "files"
        elif size == 1 << 30:
            kind = "pyarrow"
        elif start % heap_size == 0 and (
            size == heap_size
            or (  # an arena heap: read-write part, then PROT_NONE rest
                following and following[0] == end and following[2] == "---p" and following[1] - start == heap_size
            )
        ):
            kind = "arenas"
        else:
            kind = "anon_large" if size >= 1 << 20 else "anon_small"
        out[kind] += rss / 1024
    return {k: round(v, 1) for k, v in out.items()}


def rss_of_file_mib(pid: int | str, name: str) -> float:
    """Resident MiB of the mappings of files whose path contains `name` (a library's code pages: LanceDB's
    `_lancedb` grows by about 8 MiB once a table is merged into, measured 2026-11-25)."""
    return round(sum(rss for _start, _end, _perm, path, rss in _mappings(pid) if name in path) / 1024, 1)


def cpu_seconds(pid: int | str = "self") -> float:
    """User plus system CPU time of the process so far (all its threads), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
