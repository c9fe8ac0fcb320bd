"""Wire models of graph memory: entities, one entity with its relations and traces, merging two
entities, consolidation, and the health of the process and its graph tiers."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictInt,
    StrictStr,
    model_serializer,
    model_validator,
)

from .base import AsOf, Fraction, Id, NonBlank, Number, RequestBase, ResponseBase, Timestamp, WireModel, check_window

EntityType = Literal["person", "place", "organisation", "thing", "event", "date", "other"]


class EntitiesRequest(RequestBase):
    """A user's entities, most salient first."""

    type: Literal["entities"]
    user_id: Id
    entity_type: EntityType | None = Field(None, description="Only entities of this type.")
    prefix: StrictStr | None = Field(None, description="Only names (or aliases) starting with this, any case.")
    limit: StrictInt = Field(50, ge=1)


class EntityRequest(RequestBase):
    """One entity of a user, by `id` or by `name` (or alias, any case)."""

    type: Literal["entity"]
    user_id: Id
    id: Id | None = None
    name: StrictStr | None = None
    as_of: AsOf | None = None

    @model_validator(mode="after")
    def _one_key(self) -> EntityRequest:
        if (self.id is None) == (self.name is None):
            raise ValueError("give either `id` or `name`")
        return self


class MergeEntitiesRequest(RequestBase):
    """Merge entity `source` into entity `target` (aliases, mentions, relations and traces move)."""

    type: Literal["merge_entities"]
    user_id: Id
    source: Id
    target: Id


class ConsolidateRequest(RequestBase):
    """Group related episodes into traces now, for one user or (no user_id) every user."""

    type: Literal["consolidate"]
    user_id: Id | None = None


class HealthRequest(RequestBase):
    type: Literal["health"]


class EntityOut(WireModel):
    id: str
    name: str
    type: str
    aliases: list[str]
    salience: float = Field(description="0..1: rises 0.1 with each mention, capped at 1.")
    mentions: int
    first_seen: int = Field(description="Unix seconds: the first episode that mentions it.")
    last_seen: int = Field(description="Unix seconds: the latest episode that mentions it.")


class RelationOut(WireModel):
    id: str
    subject: str = Field(description="The subject entity's name.")
    subject_id: str
    predicate: str
    object: str = Field(description="The object entity's name, or the value.")
    object_id: str | None = Field(None, description="The object entity, when the object is one.")
    valid_from: int = Field(description="Unix seconds: the time of the episode that stated it.")
    valid_to: int | None = Field(
        description="Unix seconds: when a later episode contradicted it; null while current (always present)."
    )
    episode_ids: list[str] = Field(description="The episodes (message ids) that state it.")
    confidence: float
    fact_id: str | None = Field(None, description="The user's fact that states the same, when there is one.")

    @model_serializer(mode="wrap")
    def _valid_to_always(self, handler: SerializerFunctionWrapHandler):
        """`valid_to` is written as null while current: the encoder (and the MCP face) leave other nulls out.
        No return annotation: the JSON Schema stays the one of the fields."""
        out = handler(self)
        if isinstance(out, dict):
            out.setdefault("valid_to", None)
        return out


class TraceOut(WireModel):
    id: str
    summary: str
    strength: int = Field(description="Episodes in the trace.")
    activation: float
    episode_ids: list[str]
    entity_ids: list[str]
    start: int = Field(description="Unix seconds: the first episode.")
    end: int = Field(description="Unix seconds: the last episode.")


class EntitiesResponse(ResponseBase):
    type: Literal["entities"] = "entities"
    entities: list[EntityOut]


class EntityResponse(ResponseBase):
    type: Literal["entity"] = "entity"
    entity: EntityOut
    relations: list[RelationOut] = Field(description="Current and past relations where it is subject or object.")
    traces: list[TraceOut]


class MergedResponse(ResponseBase):
    type: Literal["merged"] = "merged"
    entity: EntityOut = Field(description="The target after the merge.")
    moved: dict[str, int] = Field(description="What moved from the source: aliases, mentions, relations.")


class ConsolidatedResponse(ResponseBase):
    type: Literal["consolidated"] = "consolidated"
    users: int
    episodes: int = Field(description="Episodes considered.")
    traces_created: int
    traces_updated: int
    links: int = Field(description="Trace-to-trace links made.")


class GraphHealth(WireModel):
    enabled: bool
    episodes: int
    entities: int
    relations_current: int
    relations_closed: int
    traces: int
    queue: int = Field(description="Episodes waiting for the graph builder.")
    pending: int = Field(0, description="Stored messages not in the graph yet: queued for the builder or being built.")
    lag_seconds: float = Field(
        0.0,
        description="How long the oldest of them has waited, in seconds (0 when none): how far behind the graph is.",
    )
    cached_users: int = Field(0, description="Users whose graphs are held in memory (under --graph-cache-mb).")
    cached_bytes: int = Field(
        0,
        description="Their estimated bytes; graphs that only background work (the builder, "
        "consolidation) has used are held to an eighth of the budget.",
    )
    last_consolidation: float | None = Field(None, description="Unix seconds of the last consolidation pass.")
    ner: dict[str, str | bool] = Field(description="The middle (NER) tier: `loaded`, and its `model` when loaded.")
    llm: dict[str, bool | int | None] = Field(
        description="The deep (LLM) tier: `configured`, `reachable` (null: not configured); when configured also "
        "`pending`, `done`, `failed`, `dropped` (jobs)."
    )


class HealthResponse(ResponseBase):
    type: Literal["health"] = "health"
    status: Literal["ok", "degraded"] = Field(
        description="degraded: memories wait in the quarantine folder (`quarantined`)."
    )
    uptime_seconds: float
    memories: int
    graph: GraphHealth
    quarantined: int | None = Field(
        None,
        description="Acknowledged memories a start found in the write-ahead log that LanceDB refused (a "
        "vector of NaN, say), set aside as JSON Lines in the folder `quarantine`; import its files (copied "
        "out of the data dir) to store them again, then remove them. Absent when there are none.",
    )
    quarantine: str | None = Field(None, description="The quarantine folder, when `quarantined` is there.")


class RecallParams(WireModel):
    """Overrides of the recall parameters (docs/graph.md, "Recall"); each left out keeps its default."""

    iterations: StrictInt | None = Field(None, ge=1, le=10)
    spread: Fraction | None = None
    retain: Fraction | None = None
    seed_floor: Fraction | None = None
    top_m: StrictInt | None = Field(None, ge=1, le=1000)
    beta: Fraction | None = None
    gamma: Number | None = Field(None, gt=0, le=100)
    theta: Fraction | None = None
    gate: Fraction | None = None


class GraphRecallRequest(RequestBase):
    """Associative recall: the user's traces most activated by the query, or `known: false`."""

    type: Literal["graph_recall"]
    user_id: Id
    text: NonBlank
    limit: StrictInt = Field(5, ge=1, description="Traces at most.")
    episodes: StrictInt = Field(5, ge=1, le=50, description="Episodes per trace at most, most activated first.")
    since: Timestamp | None = Field(None, description="Only episodes at or after this time (unix seconds).")
    until: Timestamp | None = Field(None, description="Only episodes at or before this time (unix seconds).")
    strengthen: StrictBool = Field(True, description="Returned traces gain activation (use strengthens memory).")
    params: RecallParams | None = None
    as_of: AsOf | None = None

    @model_validator(mode="after")
    def _window(self) -> GraphRecallRequest:
        check_window(self.since, self.until)
        return self


class RecalledEpisode(WireModel):
    id: str
    content: str
    timestamp: int
    is_bot: bool
    username: str | None = None
    message_id: str | None = None
    channel_id: str | None = None
    activation: float


class RecalledEntity(WireModel):
    id: str
    name: str
    type: str


class RecalledTrace(WireModel):
    id: str
    summary: str
    strength: int
    activation: float = Field(description="Fired activation for this query (0..1).")
    entities: list[RecalledEntity]
    episodes: list[RecalledEpisode]
    start: int
    end: int


class GraphRecallResponse(ResponseBase):
    type: Literal["graph_recall"] = "graph_recall"
    known: bool = Field(
        description="False: the memory does not know (a name it never saw, or nothing activated "
        "enough); then `traces` is empty."
    )
    confidence: float = Field(description="The best fired activation (0..1).")
    traces: list[RecalledTrace]
