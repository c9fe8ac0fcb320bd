"""How long ago the process the host spawned started: what `ready`'s `startup_ms` counts.

A host times the sidecar from its spawn, so `startup_ms` counts from the start of the process the host
spawned: this process (`python -m sidecar`, a onedir build), or in a onefile build the launcher, PyInstaller's
bootloader and our parent at start-up, which unpacks the whole bundle before Python starts (seconds, on every
launch). The OS keeps every process's start time: Linux in /proc/PID/stat (clock ticks since boot, against
/proc/uptime), macOS in sysctl's kinfo_proc, Windows in GetProcessTimes. Where it cannot be read (or reads
as later than this module's import, which cannot be), the count starts at this module's import instead, the
sidecar's first line of code, and is smaller by the interpreter's own start.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import time

IMPORTED = time.monotonic()  # the fallback's start: cli.py imports this module before anything slow


def _linux(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime (the name may hold spaces)
    with open("/proc/uptime", encoding="ascii") as f:
        uptime = float(f.read().split()[0])
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


def _macos(pid: int) -> float:
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    mib = (ctypes.c_int * 4)(1, 14, 1, pid)  # CTL_KERN, KERN_PROC, KERN_PROC_PID
    buf = ctypes.create_string_buffer(1024)  # struct kinfo_proc: 648 bytes on 64-bit macOS
    size = ctypes.c_size_t(len(buf))
    if libc.sysctl(mib, 4, buf, ctypes.byref(size), None, ctypes.c_size_t(0)) != 0 or size.value < 16:
        raise OSError(ctypes.get_errno(), f"sysctl KERN_PROC_PID {pid}")
    seconds, micros = struct.unpack_from("qi", buf.raw, 0)  # kp_proc.p_starttime, a struct timeval, comes first
    return time.time() - (seconds + micros / 1e6)


def _windows(pid: int) -> float:
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        raise OSError(ctypes.get_last_error(), f"OpenProcess {pid}")  # type: ignore[attr-defined]
    try:
        created, ended, kernel, user, now = (wintypes.FILETIME() for _ in range(5))
        if not kernel32.GetProcessTimes(wintypes.HANDLE(handle), ctypes.byref(created), ctypes.byref(ended),
                                        ctypes.byref(kernel), ctypes.byref(user)):
            raise OSError(ctypes.get_last_error(), f"GetProcessTimes {pid}")  # type: ignore[attr-defined]
        kernel32.GetSystemTimeAsFileTime(ctypes.byref(now))
    finally:
        kernel32.CloseHandle(wintypes.HANDLE(handle))

    def ticks(ft: wintypes.FILETIME) -> int:  # 100 ns units
        return (ft.dwHighDateTime << 32) | ft.dwLowDateTime

    return (ticks(now) - ticks(created)) / 1e7


def started_seconds_ago(pid: int) -> float | None:
    """How long ago process `pid` started, from the OS; None when it cannot be read."""
    read = _linux if sys.platform.startswith("linux") else _macos if sys.platform == "darwin" else \
        _windows if sys.platform == "win32" else None
    if read is None:
        return None
    try:
        return read(pid)
    except (OSError, ValueError, IndexError, AttributeError, struct.error):
        return None


def since_spawn(pid: int) -> tuple[float, bool]:
    """(seconds since process `pid` started, True) from the OS, or (seconds since this module's import, False)
    when the OS does not tell or tells something impossible."""
    here = time.monotonic() - IMPORTED
    seconds = started_seconds_ago(pid)
    # a clock tick (10 ms on Linux) of rounding aside, a process we run in cannot have started after our import
    if seconds is None or seconds < here - 0.05 or seconds > here + 24 * 3600:
        return here, False
    return max(seconds, here), True
