"""Importing a package without running its `__init__` until something reads from it: the deferred
package (`defer_package_init`) and names handed out in its place while another package imports
(`Deferred`, `import_with_stand_ins`). Used where a dependency's `__init__` builds far more than the
sidecar uses at start-up: LanceDB's REST client and namespace interface (lancedb_import.py) and
snowballstemmer's 30-odd languages (messages/keywords.py)."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import logging
import sys
import threading
from types import ModuleType
from typing import Any

log = logging.getLogger("sidecar.store")

_standing_in: set[str] = set()  # while `import_with_stand_ins` runs: any thread reading those packages gets Deferreds


def defer_package_init(name: str) -> bool:
    """Register package `name` so that its `__init__` runs on first attribute access. False if it is
    already imported or cannot be found (then nothing is changed)."""
    if name in sys.modules:
        return False
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return False
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    state: list[str] = []  # ["running"] from the first read that runs the __init__ on
    lock = threading.RLock()  # this package's own: one thread runs the __init__, others wait for it

    def __getattr__(attr: str):  # PEP 562: only called for attributes the module does not have
        if name in _standing_in and not attr.startswith("__"):
            return Deferred(name, attr)
        with lock:
            if not state:  # not run, nor running (a read from inside the __init__ itself gets what is there)
                state.append("running")
                try:
                    loader.exec_module(module)
                except BaseException:
                    state.clear()  # the next read tries again
                    raise
                if module.__dict__.get("__getattr__") is __getattr__:  # (unless the __init__ defined its own)
                    del module.__dict__["__getattr__"]
        if attr in module.__dict__:
            return module.__dict__[attr]
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    module.__dict__["__getattr__"] = __getattr__
    sys.modules[name] = module
    return True


class Deferred:
    """Stands for attribute `attr` of package `module` until first used, then hands every use to the real
    object (reading it runs the package's `__init__` in full, once)."""

    __slots__ = ("_attr", "_module")

    def __init__(self, module: str, attr: str):
        self._module, self._attr = module, attr

    def resolve(self) -> Any:
        if self._module in _standing_in:  # used during the import itself: that import falls back (below)
            raise ImportError(f"{self._module}.{self._attr} is used while {self._module} stands in")
        return getattr(importlib.import_module(self._module), self._attr)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.resolve(), attr)

    def __instancecheck__(self, obj: Any) -> bool:
        return isinstance(obj, self.resolve())

    def __subclasscheck__(self, cls: type) -> bool:
        return issubclass(cls, self.resolve())

    def __repr__(self) -> str:
        return f"<deferred {self._module}.{self._attr}>"


def import_with_stand_ins(top: str, stand_ins: tuple[str, ...]) -> ModuleType:
    """Import package `top` while the (deferred) packages `stand_ins` hand out Deferred attributes. If that
    fails, the Python modules it imported are forgotten (extension modules stay: they load once per
    process) and `top` is imported again with the real packages."""
    deferred = [name for name in stand_ins if defer_package_init(name)]
    _standing_in.update(deferred)
    try:
        return importlib.import_module(top)
    except Exception:
        if not deferred:
            raise
        log.info(
            "%s did not import with %s standing in; importing it again in full", top, ", ".join(deferred), exc_info=True
        )
        _standing_in.difference_update(deferred)
        for name, module in list(sys.modules.items()):
            if name.split(".")[0] in (top, *deferred) and not _extension(module):
                del sys.modules[name]
        return importlib.import_module(top)
    finally:
        _standing_in.difference_update(deferred)


def _extension(module: ModuleType | None) -> bool:
    """A compiled extension module: it loads once per process (PyO3's refuse a second init), so it stays."""
    origin = getattr(module, "__file__", None) or ""
    return origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
