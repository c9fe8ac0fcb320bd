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
                       same_model,
                       write_json_atomic,
)
from .lancedb_import import import_lancedb, table_names
from .reads import TableReads
from .objectstore import ObjectLocation, ObjectStoreSettings, is_object_uri
from .shared import SharedStore
from .search import cosine_search, rrf
from .sql import sql_in, sql_num, sql_str

__all__ = ["COMPACT_MAX_DUTY", "CompactionSchedule", "compact_table", "compact_tables", "compaction_due", "LANCE_DIR", "LOCK_FILE", "META_FILE",
           "SCHEMA_VERSION", "Database", "ModelMismatch", "StoreError", "StoreLocked", "dir_bytes", "same_model",
           "write_json_atomic", "import_lancedb", "table_names",
           "ObjectLocation", "ObjectStoreSettings", "is_object_uri", "SharedStore", "TableReads", "cosine_search", "rrf", "sql_in", "sql_num", "sql_str"]
