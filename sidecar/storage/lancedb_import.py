"""Start-up time: import LanceDB without the REST client it imports but the sidecar never calls.

`import lancedb` imports `lance_namespace_urllib3_client`, whose package `__init__` eagerly builds
a generated REST API client (nine API classes, hundreds of pydantic-validated methods): about half
a second of the sidecar's start-up, for remote namespaces a local data dir never uses. LanceDB only
needs the package's `models` submodule. `import_lancedb` registers that package with its
`__init__` deferred until one of the package's own attributes is first read (then it runs in full,
so nothing changes for code that does use it); its submodules import as usual.

On Python 3.11 `lancedb.db` decorates its connection classes' methods with the `overrides` package's
`@override`, which checks each override against its base class by disassembling the calling frame:
about 0.1 s of start-up for a check that cannot fail at run time. On Python 3.12 and later LanceDB
itself uses `typing.override` (which only marks the method) and a plain `EnforceOverrides`;
`import_lancedb` gives 3.11 the same while LanceDB imports, then takes the stand-in away, so anyone
importing `overrides` afterwards gets the real package.

`import lancedb` also imports `lance_namespace` (the namespace interface), whose `__init__` re-exports
about a hundred of the REST client's models, and so builds about 200 pydantic models: about 120 ms of
start-up and 5 MiB, for nine names that LanceDB binds at import and calls on its namespace paths and
when listing tables with `list_tables` (the sidecar lists them with `table_names`, below, which builds
none). While LanceDB imports, `lance_namespace` stands in with a `Deferred` object for each name asked
of it; a Deferred turns into the real object (the package's `__init__` run in full) when it is called,
an attribute of it read, or used in isinstance or issubclass; `type(x) is`, `match` and `except` do not
see through it, and LanceDB 0.40 uses those names in none of them. The client's `models` package is
deferred like the client itself, so the few model modules LanceDB imports by path import alone. If
LanceDB cannot import that way (a later version that uses one of those names at import, or any other
failure), it is imported again with the real package; its pure-Python modules are imported a second
time and its background event loop started twice (a fallback, logged).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import logging
import sys
import threading
import warnings
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Iterator

log = logging.getLogger("sidecar.store")

DEFERRED_PACKAGES = ("lance_namespace_urllib3_client", "lance_namespace_urllib3_client.models")
STANDING_IN = ("lance_namespace",)  # packages whose attributes are Deferred while LanceDB imports
_standing_in: set[str] = set()  # while LanceDB imports: any thread reading those packages then gets Deferreds


def defer_package_init(name: str) -> bool:
    """Register package `name` so that its `__init__` runs on first attribute access. False if it is
    already imported or cannot be found (then nothing is changed)."""
    if name in sys.modules:
        return False
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return False
    module = importlib.util.module_from_spec(spec)
    state: list[str] = []  # ["running"] from the first read that runs the __init__ on
    lock = threading.RLock()  # this package's own: one thread runs the __init__, others wait for it

    def __getattr__(attr: str):  # PEP 562: only called for attributes the module does not have
        if name in _standing_in and not attr.startswith("__"):
            return Deferred(name, attr)
        with lock:
            if not state:  # not run, nor running (a read from inside the __init__ itself gets what is there)
                state.append("running")
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    state.clear()  # the next read tries again
                    raise
                if module.__dict__.get("__getattr__") is __getattr__:  # (unless the __init__ defined its own)
                    del module.__dict__["__getattr__"]
        if attr in module.__dict__:
            return module.__dict__[attr]
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    module.__getattr__ = __getattr__
    sys.modules[name] = module
    return True


@contextmanager
def marking_overrides() -> Iterator[None]:
    """While LanceDB imports on Python < 3.12: `overrides` as LanceDB has it on 3.12 (see above)."""
    if sys.version_info >= (3, 12) or "overrides" in sys.modules or "lancedb" in sys.modules:
        yield
        return
    def override(method):  # what typing.override does: mark when the object takes it, nothing else
        try:
            method.__override__ = True
        except (AttributeError, TypeError):
            pass
        return method

    stand_in = ModuleType("overrides")
    stand_in.override = override
    stand_in.EnforceOverrides = type("EnforceOverrides", (), {})
    sys.modules["overrides"] = stand_in
    try:
        yield
    finally:
        if sys.modules.get("overrides") is stand_in:
            del sys.modules["overrides"]


class Deferred:
    """Stands for attribute `attr` of package `module` until first used, then hands every use to the real
    object (reading it runs the package's `__init__` in full, once)."""

    __slots__ = ("_module", "_attr")

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
    except Exception:  # noqa: BLE001 - a version that uses a stood-in name at import: import it as it comes
        if not deferred:
            raise
        log.info("%s did not import with %s standing in; importing it again in full", top, ", ".join(deferred),
                 exc_info=True)
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


def table_names(db: Any) -> set[str]:
    """The names of a LanceDB connection's tables. `list_tables` builds its answer as one of the namespace
    models (the stood-in package's __init__, about 120 ms, at the first call); `table_names` answers with a
    plain list (of every table only with `limit=None`: the synchronous one's default is 10). It is
    deprecated in LanceDB 0.40, so its warning is silenced and, once it is gone, `list_tables` is used."""
    names = getattr(db, "table_names", None)
    if names is None:
        return set(db.list_tables().tables)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return set(names(limit=None))  # its default is the first 10


def import_lancedb() -> ModuleType:
    for name in DEFERRED_PACKAGES:
        defer_package_init(name)
    with marking_overrides():
        return import_with_stand_ins("lancedb", STANDING_IN)
