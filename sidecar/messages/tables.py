"""Opening the messages table: creating it in a new data dir (or completing an interrupted first
start-up), and building any missing index."""

from __future__ import annotations

import logging
import warnings
from typing import Any

from ..storage import StoreError, table_names
from .schema import FTS_COLUMNS, MESSAGES, SCALAR_INDEXES, message_schema

log = logging.getLogger("sidecar.store")


def complete_new(db: Any, dim: int, where: Any) -> Any:
    """The messages table of a data dir without meta.json: created, or completed after an interrupted first start."""
    try:
        table = db.open_table(MESSAGES) if MESSAGES in table_names(db) else None
    except ValueError:  # its folder but no version yet: the kill came inside create_table
        table = None
    if table is None:
        return db.create_table(MESSAGES, schema=message_schema(dim), mode="overwrite")
    if table.count_rows():
        raise StoreError(f"{where} has a messages table but no meta.json; refusing to guess which model made it")
    # an empty table and no meta.json: the first start-up was killed before it wrote
    # meta.json (the last step), so finish creating the data dir
    log.warning("%s: completing a data dir whose first start-up was interrupted", where)
    return table


def ensure_indexes(table: Any) -> None:
    """BTREE scalar indexes on the filter columns (any missing one is built on an existing data dir), and
    no full-text index: keyword search runs in process (keywords.py), so one left by an older version is
    dropped rather than rewritten by every compaction."""
    indexes = {tuple(ix.columns): ix for ix in table.list_indices()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for column in SCALAR_INDEXES:
            if (column,) not in indexes:
                table.create_scalar_index(column, index_type="BTREE")
        for column in FTS_COLUMNS:
            if (column,) in indexes and indexes[(column,)].index_type == "FTS":
                table.drop_index(indexes[(column,)].name)
                log.info("dropped the full-text index on %s: keyword search runs in process", column)
