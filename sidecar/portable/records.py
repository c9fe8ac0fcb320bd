"""The export file format, version 1: one JSON object per line, each with a `kind`. A header first (format
version, product version, model identity), then tombstones (what was forgotten, and when), messages, facts, fact
events, display names and graph rows, then an `end` line with the counts (a file without one was cut short). Every
record is validated with these models on import; protocol/export.schema.json is generated from them. Pure.

Vectors are base64 of little-endian float32 (`vector_encoding`), 2,048 characters for 384 dimensions
instead of about 4,000 as JSON numbers, and exact: the same float32 values come back.
"""

from __future__ import annotations

import base64
import uuid
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, cast

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
)

FORMAT = "memory-sidecar-export"
FORMAT_VERSION = 1
VECTOR_ENCODING: Final = "base64-f32le"
# graph tables in the order they are written and restored: episodes last (an episode marks its message built)
GRAPH_TABLES = ("entities", "mentions", "relations", "traces", "links", "episodes")
PLAIN_NAMESPACE = uuid.UUID("6f0c5a52-7d7e-4d55-9a53-5b1d3c1f2e77")  # ids of plain records without one


def _nonblank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    if "\x00" in value:
        raise ValueError("must not contain NUL")
    return value


def _id(value: str | int) -> str:
    text = str(value)
    if len(text) > 512:
        raise ValueError("must be at most 512 characters")
    return _nonblank(text)


if TYPE_CHECKING:
    Id = str  # what a validated record holds (the type checker does not read AfterValidator's return type)
else:
    Id = Annotated[StrictStr | StrictInt, AfterValidator(_id)]
Text = Annotated[StrictStr, AfterValidator(_nonblank)]
Num = Annotated[StrictInt | StrictFloat, Field(ge=0, le=253_402_300_799)]  # a timestamp: up to the end of year 9999
Float = StrictInt | StrictFloat
Share = Annotated[StrictInt | StrictFloat, Field(ge=0, le=1)]
Vector = Annotated[StrictStr, Field(description=f"{VECTOR_ENCODING}: base64 of the little-endian float32 values.")]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class EmbeddingSettings(_Record):
    pooling: StrictStr
    normalize: StrictBool
    passage_prefix: StrictStr


class ModelIdentity(_Record):
    name: StrictStr
    dim: StrictInt = Field(gt=0)
    digest: StrictStr = Field(description="sha256 of the ONNX file that made the vectors.")
    embedding: EmbeddingSettings | None = Field(
        None,
        description="What shaped the vectors besides the weights: pooling, normalisation and the passage prefix put "
        "before every stored text. Absent (files written before 2026-12): mean pooling, normalised, no prefix.",
    )


class Header(_Record):
    kind: Literal["header"]
    format: Literal["memory-sidecar-export"]
    format_version: StrictInt = Field(ge=1)
    product_version: StrictStr
    created_at: Float
    user_id: StrictStr | None = Field(None, description="The one user exported, or null: everyone.")
    vectors: StrictBool
    vector_encoding: Literal["base64-f32le"] = VECTOR_ENCODING
    model: ModelIdentity
    schema_version: StrictInt
    graph: StrictBool = Field(description="Graph rows follow (only with vectors).")


class MessageRecord(_Record):
    kind: Literal["message"]
    id: Id
    user_id: Id
    content: Text
    is_bot: StrictBool = False
    timestamp: Num
    message_id: Id | None = None
    channel_id: Id | None = None
    reply_to: Id | None = None
    username: StrictStr | None = None
    search_text: StrictStr | None = Field(
        None,
        description="Keyword-search text (previous messages of the "
        "same user and channel, then this one); rebuilt when absent.",
    )
    prev_id: StrictStr | None = None
    prev2_id: StrictStr | None = None
    vector: Vector | None = None


class PlainRecord(_Record):
    """A line of plain JSON Lines (no header): the easy path from any other system."""

    model_config = ConfigDict(extra="ignore", strict=True)
    kind: Literal["message"] | None = None
    id: Id | None = Field(
        None,
        description="Default: derived from user, channel, message_id, timestamp and "
        "content, so importing the same file twice stores each message once.",
    )
    user_id: Id
    content: Text
    timestamp: Num = Field(description="Unix seconds.")
    is_bot: StrictBool = False
    message_id: Id | None = None
    channel_id: Id | None = None
    reply_to: Id | None = None
    username: StrictStr | None = None

    def message(self) -> MessageRecord:
        key = "\x1f".join(
            str(x) for x in (self.user_id, self.channel_id, self.message_id, self.timestamp, self.content)
        )
        return MessageRecord(
            kind="message",
            id=self.id or str(uuid.uuid5(PLAIN_NAMESPACE, key)),
            user_id=self.user_id,
            content=self.content,
            is_bot=self.is_bot,
            timestamp=self.timestamp,
            message_id=self.message_id,
            channel_id=self.channel_id,
            reply_to=self.reply_to,
            username=self.username,
        )


class FactRecord(_Record):
    kind: Literal["fact"]
    id: Id
    user_id: Id
    text: Text
    category: StrictStr
    source: StrictStr
    confidence: Share
    message_id: StrictStr | None = None
    created_at: Num
    updated_at: Num
    active: StrictBool
    superseded_by: StrictStr | None = None
    superseded_at: Num | None = None
    superseded_reason: StrictStr | None = None
    vector: Vector | None = None


class FactEventRecord(_Record):
    kind: Literal["fact_event"]
    id: Id
    fact_id: Id
    user_id: Id
    seq: StrictInt = Field(ge=0, le=2**53, description="Order of the events (kept, so the history reads the same).")
    at: Num
    action: StrictStr
    text: StrictStr | None = None
    previous_text: StrictStr | None = None
    other_fact_id: StrictStr | None = None
    decided_by: StrictStr | None = None
    reason: StrictStr | None = None


class UserRecord(_Record):
    kind: Literal["user"]
    user_id: Id
    username: Text
    updated_at: Num


class GraphRecord(_Record):
    """One row of a graph table, as graph/store.py keeps it (a trace's vector in `vector_encoding`)."""

    kind: Literal["graph"]
    table: Literal["entities", "mentions", "relations", "traces", "links", "episodes"]
    row: dict[str, Any] = Field(description="The row's columns; `id` and `user_id` always.")

    def model_post_init(self, _context: Any) -> None:
        for key in ("id", "user_id"):
            if not isinstance(self.row.get(key), str) or not self.row[key]:
                raise ValueError(f"row.{key} must be a non-empty string")


class TombstoneRecord(_Record):
    """What was forgotten (`forget_user`: a user; `delete`: a memory) and when, nothing else. Written before the
    messages; an import skips the records it covers (docs/privacy.md, "Forgotten stays forgotten")."""

    kind: Literal["tombstone"]
    of: Literal["user", "memory"]
    id: Id = Field(description="The user id or the memory id.")
    at: Num = Field(description="When it was forgotten (unix seconds).")


class EndRecord(_Record):
    kind: Literal["end"]
    counts: dict[str, StrictInt] = Field(description="Records of each kind written.")


Record = Annotated[
    MessageRecord | FactRecord | FactEventRecord | UserRecord | GraphRecord | TombstoneRecord | EndRecord,
    Field(discriminator="kind"),
]
# cast: mypy reads a union of these models as types.UnionType, not as the TypeForm pydantic 2.14 declares, and
# whether it says so depends on its cache (an ignore is "needed" on one run and "unused" on the next)
RECORD: TypeAdapter[Any] = TypeAdapter(cast(Any, Record))
KEYS = {"message": "id", "fact": "id", "fact_event": "id", "user": "user_id"}


def encode_vector(vector: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: str, dim: int) -> np.ndarray:
    """float32 values of an encoded vector; ValueError when it is not `dim` of them."""
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        raise ValueError("vector is not valid base64") from None
    if len(raw) != dim * 4:
        raise ValueError(f"vector has {len(raw) // 4} values, expected {dim}")
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one line of an export file (protocol/export.schema.json)."""
    line_type: Any = Annotated[
        Header | MessageRecord | FactRecord | FactEventRecord | UserRecord | GraphRecord | TombstoneRecord | EndRecord,
        Field(discriminator="kind"),
    ]
    line = TypeAdapter(line_type).json_schema()
    plain = TypeAdapter(PlainRecord).json_schema()
    defs = {**line.pop("$defs", {}), **plain.pop("$defs", {})}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "memory-sidecar export file",
        "description": f"Format version {FORMAT_VERSION}. JSON Lines (gzip when the name ends in .gz): a `header` "
        "line, then tombstones, messages, facts, fact events, users and graph rows, then an `end` line. An "
        "import also reads plain JSON Lines of `plain` records (no header).",
        "format_version": FORMAT_VERSION,
        "line": line,
        "plain": plain,
        "$defs": defs,
    }
