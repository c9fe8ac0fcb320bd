"""What a PyInstaller build of the sidecar needs to know about itself.

In a onefile build two processes run: the launcher (PyInstaller's bootloader, the process the host
spawned) unpacks the bundle into a temporary `_MEIxxxxxx` folder, starts the Python process as its
child, waits for it and then deletes the folder. When the launcher is killed outright, the Python
process sees its parent gone and exits (server.py, platform.py), and nobody is left to delete the
folder: `remove_orphaned_unpack_dir` does it on the way out. On Windows the DLLs the process has loaded
cannot be deleted while it runs, so what is left of the folder stays in %TEMP%. In a onedir build the bundle is the
`_internal/` folder next to the executable and there is nothing to clean.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path
from typing import NoReturn

from .platform import ParentWatch

log = logging.getLogger("sidecar.frozen")


def bundle_dir() -> Path | None:
    """Where the bundled files are (sys._MEIPASS), or None when not frozen by PyInstaller."""
    base = getattr(sys, "_MEIPASS", None)
    return Path(base) if getattr(sys, "frozen", False) and base else None


def onefile_unpack_dir() -> Path | None:
    """The temporary folder a onefile launcher unpacked us into, or None (onedir, or not frozen)."""
    base = bundle_dir()
    return base if base is not None and base.name.startswith("_MEI") else None


def remove_orphaned_unpack_dir(launcher: ParentWatch) -> bool:
    """Delete the onefile unpack folder if the launcher that owns it (our parent at start-up) is gone.

    Called as the very last step before exiting: everything needed from the folder is loaded by
    then (POSIX keeps deleted files that are mapped or open readable). True when it was removed.
    """
    folder = onefile_unpack_dir()
    if folder is None or not launcher.gone():
        return False  # the launcher is alive and deletes the folder itself once we exit
    shutil.rmtree(folder, ignore_errors=True)
    removed = not folder.exists()
    if removed:
        log.info("the onefile launcher is gone; removed its unpack folder %s", folder)
    else:
        log.warning("the onefile launcher is gone; could not remove its unpack folder %s", folder)
    return removed


def exit_now(code: int, launcher: ParentWatch) -> NoReturn:
    """Leave at once: clean an orphaned onefile unpack folder, flush the logs, and skip the
    interpreter's teardown (joining native library threads, freeing the model took 0.5-1.5 s here,
    which delays a host waiting for the exit, or a dead host's sidecar that must be gone in 2 s).
    Only call it when every response is written and the store is closed (or never opened)."""
    remove_orphaned_unpack_dir(launcher)
    logging.shutdown()
    sys.stderr.flush()
    os._exit(code)
