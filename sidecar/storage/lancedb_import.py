"""Start-up time: import LanceDB without the REST client it imports but the sidecar never calls.

`import lancedb` imports `lance_namespace_urllib3_client`, whose package `__init__` eagerly builds
a generated REST API client (nine API classes, hundreds of pydantic-validated methods): about half
a second of the sidecar's start-up, for remote namespaces a local data dir never uses. LanceDB only
needs the package's `models` submodule. `import_lancedb` registers that package with its
`__init__` deferred until one of the package's own attributes is first read (then it runs in full,
so nothing changes for code that does use it); its submodules import as usual.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

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


def import_lancedb() -> ModuleType:
    for name in DEFERRED_PACKAGES:
        defer_package_init(name)
    import lancedb

    return lancedb
