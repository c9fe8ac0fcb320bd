"""The MCP tools: names, descriptions, JSON Schemas of their arguments, and how each call becomes the
same wire request the NDJSON face decodes (pure; no SDK here, so it is testable without one)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..wire.base import MAX_TIMESTAMP, MIN_SCORE

MODES = ["hybrid", "semantic", "keyword", "graph"]
ENTITY_TYPES = ["person", "place", "organisation", "thing", "event", "date", "other"]


@dataclass(frozen=True)
class Settings:
    """What the tools need to know about the running sidecar."""

    user: str  # the default user (--user)
    categories: tuple[str, ...]  # the configured fact categories
    max_limit: int  # --max-limit


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    to_request: Callable[[dict[str, Any], str], dict[str, Any]]  # (arguments, user_id) -> wire request
    read_only: bool = False
    destructive: bool = False

    def input_schema(self, settings: Settings) -> dict[str, Any]:
        """The JSON Schema of the arguments, with this sidecar's limit, categories and default user."""
        props = {name: dict(prop) for name, prop in self.properties.items()}
        if "limit" in props:
            props["limit"]["maximum"] = settings.max_limit
        if "category" in props:
            props["category"]["enum"] = list(settings.categories)
        props["user_id"] = {
            "type": "string",
            "minLength": 1,
            "maxLength": 512,
            "description": "Whose memory to use. Default: the server's configured user "
            f"({settings.user!r}, set by --user).",
        }
        return {"type": "object", "properties": props, "required": list(self.required), "additionalProperties": False}


AS_OF = {
    "type": "number",
    "minimum": 0,
    "maximum": MAX_TIMESTAMP,
    "description": "Answer as of this time (unix seconds): what was true then, what was known by then. "
    "A time in the future answers as now.",
}


def _limit(default: int, what: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "default": default, "description": what}


def _drop_none(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if v is not None}


class ForgetTarget(ValueError):
    """`forget` needs exactly one thing to forget."""


def _forget(args: dict[str, Any], user: str) -> dict[str, Any]:
    given = [k for k in ("message_id", "fact_id") if args.get(k) is not None]
    if args.get("everything"):
        given.append("everything")
    if len(given) != 1:
        raise ForgetTarget(
            f"give exactly one of `message_id`, `fact_id` or `everything: true` (got {', '.join(given) or 'none'})"
        )
    # scoped: an id of another user is not_found, like an unknown id
    if given[0] == "message_id":
        return {"type": "delete", "id": args["message_id"], "user_id": user}
    if given[0] == "fact_id":
        return {"type": "forget_fact", "fact_id": args["fact_id"], "user_id": user}
    return {"type": "forget_user", "user_id": user}


def _context(args: dict[str, Any], user: str) -> dict[str, Any]:
    req = _drop_none(
        {
            "type": "context",
            "user_id": user,
            "text": args.get("text"),
            "format": args.get("format", "xml"),
            "limit": args.get("limit"),
            "related": args.get("related"),
            "as_of": args.get("as_of"),
        }
    )
    if args.get("history", True):
        req["history"] = {"user_id": user}
    return req


# Every tool, in the order tools/list shows them.
TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "remember",
        "Remember a message",
        "Store a message or note in long-term memory, as written except that secrets (keys, tokens, card "
        "numbers, passwords) become a placeholder and <private>...</private> spans are dropped. It can then be "
        "found with `search`, shows "
        "in `context` (recent history), and feeds the memory graph (`entities`, `graph_recall`). "
        "Returns the new memory's id (use it with `forget`). For a short durable fact about the user "
        "(a preference, where they work), use `remember_fact` instead.",
        {"content": {"type": "string", "minLength": 1, "description": "The text to remember."}},
        ("content",),
        lambda a, u: {"type": "store", "user_id": u, "content": a["content"]},
    ),
    ToolSpec(
        "search",
        "Search memories",
        "Find stored memories (messages) relevant to a query, best first, with their similarity, time and id; "
        "small talk and unrelated memories are left out, so fewer than `limit` (or none) may come back.",
        {
            "query": {"type": "string", "minLength": 1, "description": "What to look for, in plain words."},
            "limit": _limit(5, "Most memories returned."),
            "mode": {
                "type": "string",
                "enum": MODES,
                "default": "hybrid",
                "description": "hybrid: keywords + meaning (best in general); semantic: meaning only; "
                "keyword: exact words; graph: associative recall through the memory graph.",
            },
            "min_score": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "default": MIN_SCORE,
                "description": "No padding: small talk is never returned, nor a memory that shares no word with "
                "the query and is below this similarity, so fewer than `limit` may come back. 0 returns them.",
            },
        },
        ("query",),
        lambda a, u: {
            "type": "query",
            "user_id": u,
            "text": a["query"],
            "limit": a.get("limit", 5),
            "mode": a.get("mode", "hybrid"),
            "min_score": a.get("min_score", MIN_SCORE),
        },
        read_only=True,
    ),
    ToolSpec(
        "facts",
        "List facts",
        "List the short facts known about the user (preferences, company, patterns, answers), newest first, "
        "or ranked by relevance to `query`. Each has an id (use it with `forget`).",
        {
            "query": {"type": "string", "description": "Rank facts by relevance to this text."},
            "category": {"type": "string", "description": "Only facts of this category."},
            "include_inactive": {
                "type": "boolean",
                "default": False,
                "description": "Also list facts that were replaced or merged.",
            },
            "limit": _limit(20, "Most facts returned."),
            "as_of": AS_OF,
        },
        (),
        lambda a, u: _drop_none(
            {
                "type": "facts",
                "user_id": u,
                "text": a.get("query"),
                "category": a.get("category"),
                "limit": a.get("limit"),
                "include_inactive": a.get("include_inactive"),
                "as_of": a.get("as_of"),
            }
        ),
        read_only=True,
    ),
    ToolSpec(
        "remember_fact",
        "Remember a fact",
        "Store one short, durable fact about the user (e.g. 'Prefers window seats', 'Works at Acme'). "
        "Duplicates of a known fact are recognised and not stored twice; similar existing facts are "
        "returned as candidates.",
        {
            "text": {"type": "string", "minLength": 1, "description": "The fact, one short sentence."},
            "category": {"type": "string", "description": "What kind of fact it is."},
        },
        ("text", "category"),
        lambda a, u: {"type": "remember", "user_id": u, "text": a["text"], "category": a["category"], "source": "chat"},
    ),
    ToolSpec(
        "forget",
        "Forget",
        "Delete from the user's memory: one message (`message_id`, from `remember` or `search`), one fact (`fact_id`, "
        "from `facts` or `remember_fact`), or everything about the user (`everything: true`: messages, "
        "facts and graph). Give exactly one. Cannot be undone.",
        {
            "message_id": {"type": "string", "minLength": 1, "description": "Id of the message to delete."},
            "fact_id": {"type": "string", "minLength": 1, "description": "Id of the fact to delete."},
            "everything": {"type": "boolean", "description": "true: forget every memory and fact of the user."},
        },
        (),
        _forget,
        destructive=True,
    ),
    ToolSpec(
        "context",
        "Memory context",
        "A prompt-ready block of what is remembered about the user: their facts (most relevant to `text` "
        "first), what is true now (where they live, work, ... with since when), their stored messages most "
        "relevant to `text`, and a compressed recent history of their messages; with `related`, also memories "
        "recalled through the memory graph. Call it before answering to personalise the answer.",
        {
            "text": {
                "type": "string",
                "description": "The message being answered (ranks the facts, finds the relevant memories; "
                "needed for `related`).",
            },
            "format": {
                "type": "string",
                "enum": ["xml", "markdown"],
                "default": "xml",
                "description": "How the facts block is rendered.",
            },
            "limit": _limit(10, "Most facts in the block (xml format)."),
            "history": {"type": "boolean", "default": True, "description": "Include the user's recent history block."},
            "related": {
                "type": "integer",
                "minimum": 0,
                "maximum": 20,
                "default": 0,
                "description": "With `text`: also a related-memories block of this many graph traces.",
            },
            "as_of": AS_OF,
        },
        (),
        _context,
        read_only=True,
    ),
    ToolSpec(
        "graph_recall",
        "Associative recall",
        "Recall episodes associated with a query through the memory graph (people, places and things the "
        "user mentioned, spreading activation). Says when nothing is known, rather than returning weak "
        "matches. Recalled memories are strengthened.",
        {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "A question or cue, e.g. 'where did Ana go hiking?'.",
            },
            "limit": _limit(3, "Most traces (groups of related episodes) returned."),
            "as_of": AS_OF,
        },
        ("query",),
        lambda a, u: _drop_none(
            {
                "type": "graph_recall",
                "user_id": u,
                "text": a["query"],
                "limit": a.get("limit", 3),
                "as_of": a.get("as_of"),
            }
        ),
    ),
    ToolSpec(
        "entities",
        "List entities",
        "List the people, places, organisations and things the user has mentioned, most salient first.",
        {
            "entity_type": {"type": "string", "enum": ENTITY_TYPES, "description": "Only entities of this type."},
            "prefix": {"type": "string", "description": "Only names (or aliases) starting with this, any case."},
            "limit": _limit(20, "Most entities returned."),
        },
        (),
        lambda a, u: _drop_none(
            {
                "type": "entities",
                "user_id": u,
                "entity_type": a.get("entity_type"),
                "prefix": a.get("prefix"),
                "limit": a.get("limit", 20),
            }
        ),
        read_only=True,
    ),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}
