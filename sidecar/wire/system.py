"""Wire models of the process itself: ready, stats, ping, sync, shutdown, errors."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import (
    Number,
    RequestBase,
    ResponseBase,
    WireModel,
)


class StatsRequest(RequestBase):
    type: Literal["stats"]


class SyncRequest(RequestBase):
    """Wait until background fact extraction has finished (or `timeout` seconds have passed)."""

    type: Literal["sync"]
    timeout: Number = Field(120, gt=0)


class PingRequest(RequestBase):
    type: Literal["ping"]


class ShutdownRequest(RequestBase):
    type: Literal["shutdown"]


class ModelInfo(WireModel):
    name: str = Field(
        description="The model: a HuggingFace repo id (--model), by default the bundled "
        "sentence-transformers/all-MiniLM-L6-v2."
    )
    dim: int
    digest: str = Field(description="sha256 of the ONNX file.")
    source: str = Field(description="Where the model files were found.")
    pooling: str = Field(
        "mean",
        description="How token embeddings become one vector, from the model's "
        "1_Pooling/config.json: cls, mean, max, mean_sqrt_len_tokens, weightedmean, lasttoken "
        "(several joined by +: concatenated).",
    )
    normalize: bool = Field(
        True, description="Whether vectors are L2-normalised (a Normalize module in the model's modules.json)."
    )
    max_length: int = Field(
        256,
        description="Tokens embedded per text (sentence_bert_config.json max_seq_length); longer memories are chunked.",
    )
    query_prefix: str = Field(
        "", description="Put before every query (--query-prefix, else the model's prompts or card)."
    )
    passage_prefix: str = Field("", description="Put before every stored memory, fact and name.")


class StatsResponse(ResponseBase):
    type: Literal["stats"] = "stats"
    memories: int
    users: int
    facts: int | None = Field(None, description="Active facts.")
    cache: dict[str, int] = Field(
        default_factory=dict,
        description="The in-memory query cache: `users` held, "
        "`bytes` used (with the new rows of users on disk, held for their files: up to a 16th of the "
        "budget beside it), `budget_bytes` (--cache-mb); the spill to disk (--cache-disk-mb): "
        "`spilled_users` with a valid file (a user back in memory keeps it while "
        "unchanged), `spilled_bytes` on disk.",
    )
    chunks: dict[str, int] | None = Field(
        None,
        description="Long memories' chunk vectors: `vectors` stored, "
        "`pending` memories still being chunked in the background.",
    )
    reembed: dict[str, int] | None = Field(
        None,
        description="While --reembed moves the memories to the current "
        "model in the background: `done` and `total` memories (null otherwise). "
        "Until a memory is done, semantic search gives it similarity 0 and "
        "keyword search finds it.",
    )
    extraction: dict[str, int] | None = Field(
        None, description="Background extraction (with an LLM): pending, done, failed, dropped."
    )
    disk_bytes: int
    model: ModelInfo
    version: str
    protocol: int
    schema_version: int
    uptime_seconds: float
    data_dir: str
    versions: dict[str, str] = Field(description="Versions of the main libraries.")
    graph: dict[str, int] | None = Field(
        None,
        description="Graph memory (unless switched off): episodes, "
        "entities, relations_current, relations_closed, traces, queue, "
        "cached_users, cached_bytes.",
    )


class ReadyResponse(WireModel):
    type: Literal["ready"] = "ready"
    version: str
    protocol: int
    model: str
    dim: int
    model_digest: str
    data_dir: str
    memories: int
    startup_ms: int
    url: str | None = Field(None, description="`memory-sidecar serve` only: the HTTP face's base URL.")
    token_file: str | None = Field(
        None, description="`memory-sidecar serve` only: the file holding the bearer token its clients send."
    )


class PongResponse(ResponseBase):
    type: Literal["pong"] = "pong"


class SyncedResponse(ResponseBase):
    type: Literal["synced"] = "synced"
    pending: int = Field(description="Jobs still queued or running (0 unless the timeout passed).")
    done: int = Field(description="Extraction jobs finished since start-up.")
    failed: int = Field(description="Extraction jobs given up after their retries since start-up.")


class ErrorResponse(ResponseBase):
    type: Literal["error"] = "error"
    code: str = Field(description="Stable snake_case code; see the README's error table.")
    message: str
