"""Everything that differs between Linux, macOS and Windows, in one place: whether the host (the parent
process) is gone, and which signals ask for the graceful exit. tests/test_architecture.py keeps process
ids, signals and /proc out of every other module (glibc's memory tuning, Linux only, is native_memory.py).

The parent watch. A host that dies does not always close the sidecar's stdin (a grandchild may hold the
pipe), so the sidecar also watches the process that started it:
- Linux and macOS: a process whose parent dies is adopted (by init or a subreaper), so its parent pid
  changes; the pid is read once, as early as possible (cli.py), and compared with `os.getppid()`.
- Windows: a process keeps its dead parent's pid, so the watch opens the parent's process handle at
  start-up (`OpenProcess(SYNCHRONIZE)`, while the pid still names the parent) and asks whether it is
  signalled (`WaitForSingleObject(handle, 0)`): a process handle is signalled when the process ends.

Graceful exit. POSIX: SIGTERM and SIGINT. Windows has no SIGTERM a host can send (`TerminateProcess` is
a kill): a host closes stdin or sends `shutdown`, or sends CTRL_BREAK_EVENT to a sidecar started in its
own process group (CREATE_NEW_PROCESS_GROUP), which Python raises as SIGBREAK; Ctrl+C (SIGINT) reaches a
sidecar sharing a console. Every one of them leads to the same path (docs/hosts.md).

How long ago a process started (what `ready`'s startup_ms counts from, process_start.py): Linux keeps it in
/proc/PID/stat (clock ticks since boot, against /proc/uptime), macOS in sysctl's kinfo_proc, Windows in
GetProcessTimes.

Other differences are handled where they live: file locking by `filelock` (fcntl or msvcrt), paths by
`platformdirs` and `pathlib`, line endings by the transport (a `\\r\\n` line is accepted; CPython opens
fds 0-2 in binary mode on Windows, so output stays `\\n`), the onefile unpack folder by frozen.py.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
from collections.abc import Callable

log = logging.getLogger("sidecar.platform")

WINDOWS = sys.platform == "win32"
_SYNCHRONIZE = 0x00100000
_WAIT_OBJECT_0 = 0
_ERROR_INVALID_PARAMETER = 87  # OpenProcess of a pid no process has


class ParentWatch:
    """The process that started us, taken at start-up; `gone()` once it has ended. pid 1 (adopted before
    we looked: a daemon, a container's init) and a parent that may not be opened are never `gone`: the
    sidecar then leaves when stdin closes."""

    def __init__(self, pid: int | None = None):
        self.pid = os.getppid() if pid is None else pid
        self._handle = None
        self._gone_at_start = False
        if WINDOWS and self.pid > 1:
            self._handle, self._gone_at_start = _open_process(self.pid)

    @property
    def watched(self) -> bool:
        return self.pid > 1 and (not WINDOWS or self._handle is not None or self._gone_at_start)

    def gone(self) -> bool:
        if not self.watched:
            return False
        if WINDOWS:
            return self._gone_at_start or _kernel32().WaitForSingleObject(self._handle, 0) == _WAIT_OBJECT_0
        return os.getppid() != self.pid


# The Windows-only names of ctypes (typeshed declares them under sys.platform == "win32", so a type checker on
# another platform does not see them): `type: ignore[attr-defined]` where they are used.
@functools.cache
def _kernel32():
    import ctypes
    from ctypes import wintypes

    k = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
    k.OpenProcess.restype = wintypes.HANDLE
    k.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    k.WaitForSingleObject.restype = wintypes.DWORD
    k.WaitForSingleObject.argtypes = (wintypes.HANDLE, wintypes.DWORD)
    return k


def _open_process(pid: int) -> tuple[object, bool]:
    """(a handle to wait on, or None; whether the pid named no process any more). The handle stays open
    for the life of the sidecar, so the pid cannot be reused meanwhile."""
    import ctypes

    handle = _kernel32().OpenProcess(_SYNCHRONIZE, False, pid)
    if handle:
        return handle, False
    error = ctypes.get_last_error()  # type: ignore[attr-defined,unused-ignore]
    if error == _ERROR_INVALID_PARAMETER:
        return None, True  # the parent ended before we looked
    log.warning(
        "cannot watch the parent process %d (Windows error %d): the sidecar leaves when stdin closes", pid, error
    )
    return None, False


def stop_signals() -> tuple[int, ...]:
    """The signals that ask for the graceful exit here."""
    if sys.platform == "win32":  # WINDOWS, spelled so that type checkers know SIGBREAK is there
        return (signal.SIGINT, signal.SIGBREAK)  # Ctrl+C, CTRL_BREAK_EVENT
    return (signal.SIGTERM, signal.SIGINT)


def on_stop_signals(handler: Callable[[int, object], None]) -> None:
    """Route every stop signal to `handler(signum, frame)` (main thread only, as Python requires)."""
    for sig in stop_signals():
        signal.signal(sig, handler)


def started_seconds_ago(pid: int) -> float | None:
    """How long ago process `pid` started, from the OS; None when it cannot be read."""
    read = (
        _started_windows
        if WINDOWS
        else _started_macos
        if sys.platform == "darwin"
        else _started_linux
        if sys.platform.startswith("linux")
        else None
    )
    if read is None:
        return None
    try:
        return read(pid)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _started_linux(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime (the name may hold spaces)
    with open("/proc/uptime", encoding="ascii") as f:
        uptime = float(f.read().split()[0])
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


def _started_macos(pid: int) -> float:
    import ctypes
    import ctypes.util
    import struct
    import time

    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    mib = (ctypes.c_int * 4)(1, 14, 1, pid)  # CTL_KERN, KERN_PROC, KERN_PROC_PID
    buf = ctypes.create_string_buffer(1024)  # struct kinfo_proc: 648 bytes on 64-bit macOS
    size = ctypes.c_size_t(len(buf))
    if libc.sysctl(mib, 4, buf, ctypes.byref(size), None, ctypes.c_size_t(0)) != 0 or size.value < 16:
        raise OSError(ctypes.get_errno(), f"sysctl KERN_PROC_PID {pid}")
    seconds, micros = struct.unpack_from("qi", buf.raw, 0)  # kp_proc.p_starttime, a struct timeval, comes first
    return time.time() - (seconds + micros / 1e6)


def _started_windows(pid: int) -> float:
    import ctypes
    from ctypes import wintypes

    k = _kernel32()
    handle = k.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        raise OSError(ctypes.get_last_error(), f"OpenProcess {pid}")  # type: ignore[attr-defined,unused-ignore]
    try:
        created, ended, kernel, user, now = (wintypes.FILETIME() for _ in range(5))
        if not k.GetProcessTimes(
            wintypes.HANDLE(handle),
            ctypes.byref(created),
            ctypes.byref(ended),
            ctypes.byref(kernel),
            ctypes.byref(user),
        ):
            raise OSError(ctypes.get_last_error(), f"GetProcessTimes {pid}")  # type: ignore[attr-defined,unused-ignore]
        k.GetSystemTimeAsFileTime(ctypes.byref(now))
    finally:
        k.CloseHandle(wintypes.HANDLE(handle))
    return (
        ((now.dwHighDateTime << 32) | now.dwLowDateTime) - ((created.dwHighDateTime << 32) | created.dwLowDateTime)
    ) / 1e7  # FILETIMEs count 100 ns


def open_to_others(path: str | os.PathLike[str]) -> bool:
    """Whether other users may read or write the file: POSIX mode bits (group or other); on Windows, where the
    bits do not say it (access is by ACL, and a file in the user's profile is theirs), never."""
    if WINDOWS:
        return False
    return bool(os.stat(path).st_mode & 0o077)
