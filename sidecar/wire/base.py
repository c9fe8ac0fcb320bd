"""What every wire model shares: the protocol version, id/number/timestamp types, the strict base
models of requests and responses, and the one rule every request obeys (no NUL anywhere)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

from .errors import clip

PROTOCOL_VERSION = 1


MAX_ID_CHARS = 512
# The text a search is made of (`query`, `facts`, `recall`, `context`, `graph_recall`), in UTF-8 bytes of its
# NFKC form (what keyword search reads), checked by every face before the search (runtime/dispatcher.py).
MAX_QUERY_BYTES = 65_536


def _id_to_str(value: str | int) -> str:
    s = str(value)
    if not s.strip():
        raise ValueError("must not be empty")
    if len(s) > MAX_ID_CHARS:
        raise ValueError(f"must be at most {MAX_ID_CHARS} characters")
    return s


def _finite(value: float | int) -> float | int:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


# Ids may be JSON strings or integers (chat platforms use both); they are stored as strings.
if TYPE_CHECKING:
    Id = str  # what a validated model holds (the type checker does not read AfterValidator's return type)
else:
    Id = Annotated[
        StrictStr | StrictInt, AfterValidator(_id_to_str), Field(json_schema_extra={"maxLength": MAX_ID_CHARS})
    ]


RequestId = StrictStr | StrictInt | None


Number = Annotated[StrictInt | StrictFloat, AfterValidator(_finite)]

# Up to the end of year 9999: every stored timestamp can be rendered as a date (history, context).
MAX_TIMESTAMP = 253_402_300_799


Timestamp = Annotated[Number, Field(ge=0, le=MAX_TIMESTAMP, description="Unix time in seconds.")]


AS_OF_DESCRIPTION = (
    "Answer as of this time (unix seconds): relations valid then (stated by then and not yet contradicted), facts "
    "active then (from their history, with the text they had), memories stored by then. A time in the future "
    "answers as now."
)


def _seconds(value: Any) -> Any:
    """`as_of` is a number: a string or a boolean is refused in one sentence (not one per number type)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number of unix seconds (e.g. 1709251200), not {type(value).__name__}")
    return value


AsOf = Annotated[Timestamp, BeforeValidator(_seconds), Field(description=AS_OF_DESCRIPTION)]


def check_window(since: float | None, until: float | None) -> None:
    """A time window's ends in order (`since` at or before `until`), else the request is invalid."""
    if since is not None and until is not None and since > until:
        raise ValueError(f"`since` ({since}) is after `until` ({until}): the window is empty; swap them")


SCOPE = (
    "The user the ids must belong to: an id of another user is answered `not_found`, like an unknown id. "
    "Without it, any user's id."
)


SearchMode = Literal["semantic", "keyword", "hybrid"]


MODE_DESCRIPTION = (
    "semantic: nearest vectors (cosine); keyword: BM25 full-text match; hybrid (default): both, fused by rank."
)


class WireModel(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, defer_build=True)
    # fields sent as null when they are set to None (every other None-valued field is left out of a line)
    KEEP_NULL: ClassVar[frozenset[str]] = frozenset()


def _nul_path(value: Any, path: str) -> str | None:
    """The first field (dotted path) whose string contains NUL, anywhere in a raw request."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(key, str) and "\x00" in key:
            return f"{path}.{key!r}" if path else repr(key)
        found = _nul_path(item, f"{path}.{key}" if path else str(key))
        if found:
            return found
    return None


class RequestBase(WireModel):
    request_id: RequestId = Field(None, description="Echoed on the response.")

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        # One rule for every string of every request: NUL can be neither stored nor put in a filter.
        field = _nul_path(data, "")
        if field:
            raise ValueError(f"field `{clip(field)}` must not contain NUL characters")
        return data


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


NonBlank = Annotated[StrictStr, AfterValidator(_not_blank)]


Action = Annotated[Literal["KEEP", "INVALIDATE", "MERGE"], BeforeValidator(_upper)]


Fraction = Annotated[Number, Field(ge=0, le=1)]

# No padding (`query`'s `min_score`, `context`'s `memories_min_score`): a result that shares no term with the
# question and is below this cosine is not returned, nor is a backchannel ("lol", "gn"); 0 returns them as
# before. Calibrated on the tuning split of tests/fixtures/prompt_recall (`python scripts/bench.py prompt`):
# the largest floor that loses no question's answer from the top 5 there (docs/protocol.md, "Why 0.13").
MIN_SCORE = 0.13
MIN_SCORE_DESCRIPTION = (
    "No padding: small talk (a backchannel: 'lol', 'haha nice', 'gn', emoji only) is never returned, nor a result "
    "that shares no term with the text and whose cosine similarity is below this floor, so fewer results than "
    "asked for (or none) may come back. 0 returns them all (the answers before the floor existed). 0..1."
)

# {"<user_id>": "<display name or null>", ...}; JSON object keys are always strings.
UserMap = Annotated[
    dict[Annotated[StrictStr, AfterValidator(_id_to_str)], StrictStr | None],
    Field(min_length=1, description="user_id -> display name (null: keep the stored name)."),
]


class ResponseBase(WireModel):
    request_id: RequestId = None
