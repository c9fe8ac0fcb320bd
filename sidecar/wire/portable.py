"""Wire models of portability: `export` (one user's memory, or everyone's, to a file the sidecar writes
itself) and `import` (that file, or plain JSON Lines of messages, read back). The file format has its
own schema, protocol/export.schema.json (sidecar/portable/records.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr

from .base import Id, NonBlank, RequestBase, ResponseBase, WireModel

OnConflict = Literal["skip", "overwrite", "fail"]

DEFAULT_MAX_INVALID = 1000
DEFAULT_MAX_EXPANSION = 100
MAX_PATH_CHARS = 4096
PATHS = "A relative path is relative to the sidecar's working directory; a path inside the data dir is refused."
FilePath = Annotated[NonBlank, Field(max_length=MAX_PATH_CHARS)]


class ExportRequest(RequestBase):
    """Write memory to a JSON Lines file (gzip when `out` ends in `.gz`); answers with counts."""

    type: Literal["export"]
    out: FilePath = Field(
        description="Path of the file to write (a regular file, written under a temporary name "
        "and renamed at the end; never through a symbolic link). " + PATHS
    )
    overwrite: StrictBool = Field(
        False, description="Replace a file that exists at `out`; default: refused with `conflict`."
    )
    user_id: Id | None = Field(None, description="Export only this user; default: every user.")
    vectors: StrictBool = Field(
        True,
        description="Include the vectors (marked with the model digest); false: a smaller file, re-embedded on import.",
    )


class ImportRequest(RequestBase):
    """Read an export file, or plain JSON Lines of {user_id, content, timestamp, ...}, into this data dir."""

    type: Literal["import"]
    path: FilePath = Field(
        description="Path of the file to read (.gz: gzip); a regular file (a device, FIFO, "
        "socket or directory is refused with `bad_file`). " + PATHS
    )
    on_conflict: OnConflict = Field(
        "skip",
        description="An id already stored: skip (keep the stored one), "
        "overwrite it, or fail (checked before anything is written).",
    )
    strict: StrictBool = Field(
        False,
        description="A bad record fails the whole import before anything is "
        "written; default: it is reported with its line number and skipped.",
    )
    max_invalid: StrictInt = Field(
        DEFAULT_MAX_INVALID,
        ge=0,
        description="Bad records the import walks "
        "through before it stops with `bad_file` (records imported before stay); 0: "
        "no limit.",
    )
    max_expansion: StrictInt = Field(
        DEFAULT_MAX_EXPANSION,
        ge=0,
        description="A gzip file may expand to this "
        "many times its size (at least 1 MiB; real exports expand 1 to 10 times), "
        "else the import stops with `bad_file`; 0: no limit.",
    )
    restore_forgotten: StrictBool = Field(
        False,
        description="Import what a tombstone covers (a user forgotten with `forget_user`, a memory deleted with "
        "`delete`) and clear the tombstones so used; the file's own tombstones are not applied. Default: such "
        "records are skipped and counted in `forgotten`.",
    )


class ExportedResponse(ResponseBase):
    type: Literal["exported"] = "exported"
    path: str = Field(description="The file written (absolute).")
    bytes: int
    messages: int
    facts: int
    fact_events: int
    users: int = Field(description="Display names.")
    tombstones: int = Field(0, description="Tombstones carried (what was forgotten, and when).")
    graph: int = Field(
        description="Graph rows (episodes, entities, mentions, relations, traces, links); 0 "
        "without vectors: the graph is rebuilt from the messages on import."
    )
    vectors: bool
    seconds: float


class LineError(WireModel):
    line: StrictInt
    message: StrictStr


class ImportedResponse(ResponseBase):
    type: Literal["imported"] = "imported"
    path: str
    format: Literal["export", "plain"] = Field(
        description="export: a memory-sidecar export file; plain: JSON Lines of messages."
    )
    messages: int = Field(description="Messages written (new or overwritten).")
    facts: int
    fact_events: int
    users: int
    graph: int = Field(description="Graph rows restored (0 when the graph is rebuilt from the messages).")
    skipped: int = Field(description="Records whose id was already stored (on_conflict skip).")
    forgotten: int = Field(
        0,
        description="Records a tombstone covers (of a user forgotten, or a memory deleted, here or in the file), "
        "skipped: forgotten stays forgotten. With `restore_forgotten`: 0, they are imported.",
    )
    tombstones: int = Field(0, description="The file's tombstones written here (those not known already).")
    overwritten: int = Field(description="Records that replaced a stored one (on_conflict overwrite).")
    invalid: int = Field(description="Bad records reported and skipped (see `errors`).")
    reembedded: int = Field(
        description="Messages and facts embedded again (no vectors in the file, or another model's)."
    )
    redacted: int = Field(
        0,
        description="Secrets in the file's texts replaced by a placeholder, as `store` does (--redact); a message "
        "or fact whose text changed is embedded again.",
    )
    vectors: Literal["reused", "reembedded"] = Field(description="What happened to the file's vectors.")
    graph_source: Literal["restored", "rebuilt"] = Field(
        description="restored: the file's graph rows; rebuilt: built in the background from the messages."
    )
    errors: list[LineError] = Field(default_factory=list, description="The first bad records (line, reason).")
    notes: list[StrictStr] = Field(
        default_factory=list, description="What the caller should know (e.g. another model's file was re-embedded)."
    )
    seconds: float
