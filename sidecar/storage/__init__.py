"""Storage shared by every domain: the locked data dir and its LanceDB connection, schema versions
and migrations, the compaction schedule, safe filters, and search helpers. Imports no other part of
the sidecar; each domain keeps its own tables (messages/store.py, facts/store.py, graph/store.py)."""

from .compaction import COMPACT_MAX_DUTY, CompactionSchedule, compact_table, compact_tables, compaction_due
from .database import (
    LANCE_DIR,
    LOCK_FILE,
    META_FILE,
    SCHEMA_VERSION,
    Database,
    ModelMismatch,
    StoreError,
    StoreLocked,
    dir_bytes,
    model_differences,
    same_model,
    write_json_atomic,
)
from .lancedb_import import import_lancedb, table_names
from .objectstore import ObjectLocation, ObjectStoreSettings, is_object_uri
from .reads import TableReads
from .search import cosine_search, rrf
from .shared import SharedStore
from .sql import sql_in, sql_num, sql_str
from .vectors import all_finite, vector_problems

__all__ = [
    "COMPACT_MAX_DUTY",
    "LANCE_DIR",
    "LOCK_FILE",
    "META_FILE",
    "SCHEMA_VERSION",
    "CompactionSchedule",
    "Database",
    "ModelMismatch",
    "ObjectLocation",
    "ObjectStoreSettings",
    "SharedStore",
    "StoreError",
    "StoreLocked",
    "TableReads",
    "all_finite",
    "compact_table",
    "compact_tables",
    "compaction_due",
    "cosine_search",
    "dir_bytes",
    "import_lancedb",
    "is_object_uri",
    "model_differences",
    "rrf",
    "same_model",
    "sql_in",
    "sql_num",
    "sql_str",
    "table_names",
    "vector_problems",
    "write_json_atomic",
]
