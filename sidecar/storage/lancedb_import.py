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
"""

from __future__ import annotations

import importlib.util
import sys
from contextlib import contextmanager
from types import ModuleType
from typing import Iterator

DEFERRED_PACKAGES = ("lance_namespace_urllib3_client",)


def defer_package_init(name: str) -> bool:
    """Register package `name` so that its `__init__` runs on first attribute access. False if it is
    already imported or cannot be found (then nothing is changed)."""
    if name in sys.modules:
        return False
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return False
    module = importlib.util.module_from_spec(spec)

    def __getattr__(attr: str):  # PEP 562: only called for attributes the module does not have
        if "__getattr__" in module.__dict__:
            del module.__dict__["__getattr__"]
            spec.loader.exec_module(module)
            return getattr(module, attr)
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


def import_lancedb() -> ModuleType:
    for name in DEFERRED_PACKAGES:
        defer_package_init(name)
    with marking_overrides():
        import lancedb

    return lancedb
