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

One setting of Lance's is made here, before anything reads a table: how many bytes a scan may queue
ahead of its consumer (LANCE_DEFAULT_IO_BUFFER_SIZE, read once per process; 2 GiB by default). On a
local disk a compaction's reads outrun its rewrite, and LanceDB's compaction rewrites a whole table
whenever its one big fragment is under Lance's 1,048,576-row target (every table here below a million
rows; LanceDB 0.40 sets no other target). Measured on a 1M-row messages table with 300 new rows
(2026-11-27): the rewrite's peak RSS over its start +1,725 MiB with the default and +171 with 32 MiB on
a table just written (`python scripts/bench.py compaction --rows 1000000 --users 10000`); in another run,
+406 with the default, +215 with 64 MiB, +179 with 32, +175 with 16 and +171 with 8, 11-15 s each. A
scan of rows larger than the buffer (0.6 MB each under 4 MiB) still completes. A value the environment
sets is kept.

LanceDB's Rust code logs to stderr through `env_logger`, configured once from LANCEDB_LOG when `lancedb`
is imported (`warn` when unset): on a fresh data dir that printed `WARN ... No existing dataset at ...,
it will be created` for every table, at the sidecar's default (quiet) level. `import_lancedb(level)` sets
LANCEDB_LOG one step below the sidecar's own level (LANCE_LOG_LEVELS), unless the environment sets it.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from .lazy_import import defer_package_init, import_with_stand_ins

DEFERRED_PACKAGES = ("lance_namespace_urllib3_client", "lance_namespace_urllib3_client.models")
STANDING_IN = ("lance_namespace",)  # packages whose attributes are Deferred while LanceDB imports
IO_BUFFER_BYTES = 32 << 20  # LANCE_DEFAULT_IO_BUFFER_SIZE unless the environment sets it (see above)
# the sidecar's --log-level -> LANCEDB_LOG: LanceDB's warnings (expected events, such as a table being created)
# only from `info` on, its debug lines never (thousands per request)
LANCE_LOG_LEVELS = {"debug": "info", "info": "warn", "warning": "error", "error": "error"}


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
    stand_in.__dict__.update(override=override, EnforceOverrides=type("EnforceOverrides", (), {}))
    sys.modules["overrides"] = stand_in
    try:
        yield
    finally:
        if sys.modules.get("overrides") is stand_in:
            del sys.modules["overrides"]


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


def import_lancedb(log_level: str | None = None) -> ModuleType:
    """`lancedb`, imported as the module docstring says; `log_level` (the sidecar's) sets LanceDB's own logging
    when this is the first import and the environment does not set LANCEDB_LOG."""
    os.environ.setdefault("LANCE_DEFAULT_IO_BUFFER_SIZE", str(IO_BUFFER_BYTES))
    if log_level is not None:
        os.environ.setdefault("LANCEDB_LOG", LANCE_LOG_LEVELS.get(log_level, "error"))
    for name in DEFERRED_PACKAGES:
        defer_package_init(name)
    with marking_overrides():
        return import_with_stand_ins("lancedb", STANDING_IN)
