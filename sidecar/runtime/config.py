"""Configuration, resolved once at start-up: CLI flag, then MEMORY_SIDECAR_* env, then default.

One table (``OPTIONS``) drives the argument parser, the environment lookup and the
README's configuration table, so the three cannot drift apart.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .. import __version__
from ..embedding.model import parse_repo_id
from ..embedding.spec import MAX_PREFIX_CHARS
from ..facts import CANDIDATE_THRESHOLD, DEFAULT_CATEGORIES, DUPLICATE_THRESHOLD, parse_categories
from ..text import REDACT_ON, Redaction, parse_languages, parse_redact
from ..wire.errors import MAX_QUOTE, clip, quote
from .face_values import DEFAULT_LISTEN, check_listen, parse_origins, parse_port, parse_token, parse_user_id

ENV_PREFIX = "MEMORY_SIDECAR_"


def _default_data_dir() -> str:
    import platformdirs

    return platformdirs.user_data_dir("memory-sidecar", appauthor=False)


def _bool(value: str) -> bool:
    v = value.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected a boolean (1/0, true/false), got {quote(value)}")


def _non_negative(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(value: str) -> Any:
        v = kind(value)
        if v < 0:
            raise ValueError(f"must be >= 0, got {quote(value)}")
        return v

    parse.__name__ = kind.__name__
    return parse


def _positive_int(value: str) -> int:
    v = int(value)
    if v < 1:
        raise ValueError(f"must be >= 1, got {quote(value)}")
    return v


def _fraction(value: str) -> float:
    v = float(value)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"must be between 0 and 1, got {quote(value)}")
    return v


def _share(value: str) -> float:
    v = float(value)
    if not 0.0 < v <= 1.0:
        raise ValueError(f"must be > 0 and <= 1, got {quote(value)}")
    return v


def _positive_float(value: str) -> float:
    v = float(value)
    if not v > 0:
        raise ValueError(f"must be > 0, got {quote(value)}")
    return v


def _prefix(value: str) -> str:
    """--query-prefix / --passage-prefix: put before every text embedded, so kept short."""
    if len(value) > MAX_PREFIX_CHARS:
        raise ValueError(f"must be at most {MAX_PREFIX_CHARS:,} characters, got {len(value):,}")
    return value


def _url(value: str) -> str | None:
    v = value.strip()
    if not v:
        return None
    if not v.startswith(("http://", "https://")):
        raise ValueError(f"must be an http:// or https:// URL, got {quote(value)}")
    return v


def _env_name(value: str) -> str:
    v = value.strip()
    if not v or not all(c.isalnum() or c == "_" for c in v):
        raise ValueError(f"must be an environment variable name, got {quote(value)}")
    return v


LOG_LEVELS = ("debug", "info", "warning", "error")
WRITER_MODES = ("auto", "many", "one")


def _writers(value: str) -> str:
    v = value.strip().lower()
    if v not in WRITER_MODES:
        raise ValueError(f"must be one of {', '.join(WRITER_MODES)}, got {quote(value)}")
    return v


def _log_level(value: str) -> str:
    v = value.strip().lower()
    if v not in LOG_LEVELS:
        raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}, got {quote(value)}")
    return v


# The request line's room beside the content (the other fields of a store request) in the default
# --max-line-bytes.
LINE_ENVELOPE_BYTES = 64 << 10


@dataclass(frozen=True)
class Option:
    name: str  # attribute name; flag is --name-with-dashes, env is MEMORY_SIDECAR_NAME
    parse: Callable[[str], Any]
    default: Any
    help: str
    flag_only: bool = False  # a boolean switch (store_true)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()


OPTIONS: tuple[Option, ...] = (
    Option(
        "data_dir",
        str,
        None,
        "Directory holding the LanceDB tables, the lock file and meta.json, or an "
        "object-store location s3://bucket/prefix that several sidecars may share (docs/portability.md, Scale out). "
        "Default: the per-user app-data directory (platformdirs).",
    ),
    Option(
        "model",
        parse_repo_id,
        None,
        "The embedding model: a HuggingFace repo id of a sentence-transformers model "
        "with ONNX weights (docs/models.md). Default: the bundled sentence-transformers/all-MiniLM-L6-v2.",
    ),
    Option(
        "model_dir",
        str,
        None,
        "Directory with model.onnx, tokenizer.json and configs; tried before every other source.",
    ),
    Option(
        "query_prefix",
        _prefix,
        None,
        "Put before every query (default: the model's prompts or card; empty: none); at most 1,000 characters.",
    ),
    Option(
        "passage_prefix",
        _prefix,
        None,
        "Put before every stored memory, fact and name (default: as --query-prefix); at most 1,000 characters.",
    ),
    Option("model_sha256", str, None, "Require the ONNX file to have this sha256 (hex); start-up fails otherwise."),
    Option(
        "offline",
        _bool,
        False,
        "Never contact the HuggingFace Hub (HF_HUB_OFFLINE=1 has the same effect).",
        flag_only=True,
    ),
    Option(
        "ttl_days",
        _non_negative(float),
        30.0,
        "Memories older than this many days are deleted automatically; 0 disables.",
    ),
    Option(
        "cleanup_interval_hours",
        _non_negative(float),
        24.0,
        "How often automatic expiry runs (it also runs once at start-up); 0 disables the schedule.",
    ),
    Option("compact_every_writes", _positive_int, 200, "Compact the table after this many write commits."),
    Option(
        "compact_interval_seconds",
        _non_negative(float),
        60.0,
        "Compact at most this long after the first uncompacted write (0: only by write count).",
    ),
    Option(
        "compact_max_duty",
        _share,
        0.1,
        "Largest share of wall time background compaction may take: after "
        "one that took d seconds, the next waits at least d * (1 / share - 1); 1 removes the pause.",
    ),
    Option(
        "cache_mb",
        _non_negative(int),
        16,
        "Memory budget of the per-user in-memory vector cache that serves queries without a "
        "LanceDB round trip (16 MB: about 20,000 short memories; least recently used users go to the disk "
        "spill); 0 disables it.",
    ),
    Option(
        "cache_disk_mb",
        _non_negative(int),
        2048,
        "Disk budget for users evicted from the in-memory cache: kept "
        "in the data dir's spill/ folder (emptied at every start), they come back with a file read instead of "
        "a LanceDB read of their rows; 0 turns the spill off. Local data dirs only.",
    ),
    Option("threads", _positive_int, None, "onnxruntime intra-op threads. Default: min(2, CPU count)."),
    Option(
        "max_line_bytes",
        _positive_int,
        None,
        "Longest request line accepted, in bytes (checked while reading). "
        "Default: 6 x --max-content-bytes + 64 KiB (6,065,536), so that a content at the limit fits even if "
        "every byte of it is JSON-escaped (\\u00XX).",
    ),
    Option(
        "max_content_bytes",
        _positive_int,
        1_000_000,
        "Longest memory content accepted, in UTF-8 bytes (1 MB); a longer one is refused with `too_large`.",
    ),
    Option(
        "max_content_chars",
        _positive_int,
        None,
        "Also cap memory content at this many characters (unset: only --max-content-bytes applies).",
    ),
    Option(
        "max_batch",
        _positive_int,
        1_000,
        "Most messages accepted in one batch store.",
    ),
    Option(
        "max_users",
        _positive_int,
        100,
        "Most users in one recall or context request (each user is a search of their own: a request of "
        "1,000 users held every other request for seconds).",
    ),
    Option("max_limit", _positive_int, 100, "Largest `limit` a query may ask for."),
    Option(
        "max_window",
        _positive_int,
        1_000,
        "Most messages a channel_context or history request may read (its limit or its sum of counts) or send inline.",
    ),
    Option(
        "opt_out_marker",
        str,
        "\U0001f6ab",
        "When the user's text on context, channel_context or history contains "
        "this (case-insensitively), the blocks are empty. An empty value disables the check.",
    ),
    Option("log_level", _log_level, "warning", "stderr log level: debug, info, warning or error."),
    Option(
        "reembed",
        _bool,
        False,
        "Move a data dir made with another model to this one, in the background "
        "(progress in stats `reembed`; docs/models.md).",
        flag_only=True,
    ),
    Option(
        "languages",
        parse_languages,
        None,
        "The languages memories are written in, as ISO 639-1 codes (`en,de`), "
        "for keyword search: each memory is stemmed in the one a detector picks (one per script: no detector). "
        "Default `auto`: any language (docs/languages.md).",
    ),
    Option(
        "redact",
        parse_redact,
        REDACT_ON,
        "Secrets in what is stored or sent to an LLM (provider keys and tokens, card numbers, IBANs, passwords "
        "stated in words) are replaced by `[redacted: <kind>]`: `on`, `off`, or `keep=KIND,KIND` to store those "
        "kinds as written (docs/privacy.md). <private> spans are dropped whatever this says.",
    ),
    Option(
        "fact_categories",
        parse_categories,
        DEFAULT_CATEGORIES,
        "Comma-separated fact categories accepted in <memory> tags, remember and extraction.",
    ),
    Option(
        "duplicate_threshold",
        _fraction,
        DUPLICATE_THRESHOLD,
        "Cosine similarity at or above which a new fact is a duplicate of an active one (same numbers too).",
    ),
    Option(
        "candidate_threshold",
        _fraction,
        CANDIDATE_THRESHOLD,
        "Cosine similarity at or above which an active fact is a consolidation candidate (at most 3).",
    ),
    Option(
        "llm_base_url",
        _url,
        None,
        "OpenAI-compatible chat-completions base URL (the part before "
        "/chat/completions), e.g. http://127.0.0.1:11434/v1 for Ollama. Unset: no LLM.",
    ),
    Option("llm_model", str, None, "Model name sent to the LLM endpoint (required with --llm-base-url)."),
    Option(
        "llm_api_key_env",
        _env_name,
        "MEMORY_SIDECAR_LLM_API_KEY",
        "Name of the environment variable holding the LLM API key (sent as a Bearer token when set).",
    ),
    Option(
        "llm_timeout",
        _positive_float,
        30.0,
        "Seconds to wait for one LLM answer; on the request path, the budget for all decisions about one new fact.",
    ),
    Option(
        "llm_retries",
        _non_negative(int),
        2,
        "Extra attempts (exponential backoff from 1 s) for background LLM work; requests try once.",
    ),
    Option(
        "llm_extract",
        _bool,
        True,
        "With an LLM: extract facts from stored user messages in the background (per request: `extract`).",
    ),
    Option(
        "graph",
        _bool,
        True,
        "Graph memory: build episodes, entities, relations and traces from stored messages "
        "in the background (MEMORY_SIDECAR_GRAPH=0 or --graph false: vector memory only).",
    ),
    Option(
        "graph_llm",
        _bool,
        False,
        "With an LLM: also ask it, in the background, for the entities and relations of "
        "episodes the rule tier flags (the graph's deep tier).",
    ),
    Option(
        "graph_consolidate_every",
        _non_negative(int),
        200,
        "Consolidate the graph in the background after this "
        "many new episodes (or 5 minutes after the first); 0: only on demand (`consolidate`, `graph_recall`).",
    ),
    Option(
        "graph_cache_mb",
        _non_negative(int),
        32,
        "Memory budget of the per-user graphs held in memory (least "
        "recently used users leave first; graphs no command has read, an eighth of it).",
    ),
    Option(
        "s3_endpoint",
        _url,
        None,
        "Object store: the S3 API endpoint (MinIO, Ceph, R2, ...). Unset: "
        "AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL, then AWS S3 in the region.",
    ),
    Option(
        "s3_region", str, None, "Object store: the region. Unset: AWS_REGION, then AWS_DEFAULT_REGION, then us-east-1."
    ),
    Option("s3_access_key_id", str, None, "Object store: the access key id. Unset: AWS_ACCESS_KEY_ID."),
    Option(
        "s3_secret_access_key_env",
        _env_name,
        "AWS_SECRET_ACCESS_KEY",
        "Object store: the name of the environment "
        "variable holding the secret access key (the secret itself is never a flag).",
    ),
    Option(
        "refresh_seconds",
        _positive_float,
        2.0,
        "Object store: a write acknowledged by another sidecar of the "
        "same location is seen by this one's queries within this many seconds (deletes and forgets too).",
    ),
    Option(
        "lease_seconds",
        _positive_float,
        15.0,
        "Object store: the maintenance lease's time to live: the sidecar "
        "holding it compacts and expires; another takes it over when it has not been renewed for this long.",
    ),
    Option(
        "s3_writers",
        _writers,
        "auto",
        "Object store: which sidecars write. auto: all of them when the store "
        "refuses a second conditional write (If-None-Match), as LanceDB's safe commits need, else only the lease "
        "holder; many: all; one: only the lease holder (the others answer writes with `disabled`).",
    ),
)


# Options of one face only: `memory-sidecar mcp` serves one user's memory (each tool call may name another);
# `memory-sidecar inspect` serves a read-only web page.
FACE_OPTIONS: dict[str, tuple[Option, ...]] = {
    "mcp": (
        Option("user", parse_user_id, "default", "The user whose memory the tools use when a call gives no user_id."),
    ),
    "inspect": (
        Option("port", parse_port, 0, "TCP port on 127.0.0.1 (0: a free one)."),
        Option(
            "token",
            parse_token,
            None,
            "The token the page's URL must carry (default: a new random one at "
            "each start; an empty value turns the check off).",
        ),
    ),
    "serve": (
        Option(
            "listen",
            check_listen,
            DEFAULT_LISTEN,
            "HOST:PORT to serve HTTP on (port 0: a free one; IPv6 as [::1]:PORT). An address other than loopback "
            "needs a --token-file you made.",
        ),
        Option(
            "token_file",
            str,
            None,
            "The file holding the bearer token clients send (Authorization: Bearer ...). Default: http-token in "
            "the data dir, made (0600) at the first start.",
        ),
        Option(
            "allow_origin",
            parse_origins,
            None,
            "Browser origins allowed to call the API (CORS), comma-separated, e.g. http://localhost:5173. "
            "Default: none.",
        ),
        Option(
            "request_timeout",
            _positive_float,
            10.0,
            "Seconds a request's line and headers, and then its body, may take to arrive (a slow or idle "
            "connection is closed with 408).",
        ),
    ),
}
# The shared options the inspector reads (it writes nothing, so expiry, compaction, LLM ... do not apply).
INSPECT_SHARED = (
    *"data_dir model model_dir query_prefix passage_prefix model_sha256 offline threads log_level".split(),
)


def _data_dir(value: str | None) -> Path | str:
    from ..storage import ObjectLocation, is_object_uri

    if value and is_object_uri(value):
        try:
            return ObjectLocation.parse(value.strip()).uri
        except ValueError as exc:
            raise ConfigError(f"--data-dir: {_cut(str(exc))}") from None
    if value and "://" in value:
        raise ConfigError(
            f"--data-dir: {quote(value)}: the only object store scheme is s3:// (S3 and S3-compatible "
            "servers); a local directory is a plain path"
        )
    return Path(value or _default_data_dir()).expanduser()


def face_options(face: str) -> tuple[Option, ...]:
    shared = OPTIONS if face != "inspect" else tuple(o for o in OPTIONS if o.name in INSPECT_SHARED)
    return shared + FACE_OPTIONS.get(face, ())


@dataclass(frozen=True)
class Config:
    data_dir: Path | str  # str: an object-store location (s3://bucket/prefix)
    model_dir: Path | None
    model_sha256: str | None
    offline: bool
    ttl_days: float
    cleanup_interval_hours: float
    compact_every_writes: int
    compact_interval_seconds: float
    compact_max_duty: float
    cache_mb: int
    threads: int
    max_line_bytes: int
    max_content_chars: int | None
    max_batch: int
    max_users: int
    max_limit: int
    max_window: int
    opt_out_marker: str
    log_level: str
    reembed: bool
    max_content_bytes: int = 1_000_000
    model: str | None = None  # a HuggingFace repo id (--model); None: the bundled default
    query_prefix: str | None = None
    passage_prefix: str | None = None
    fact_categories: tuple[str, ...] = DEFAULT_CATEGORIES
    languages: tuple[str, ...] | None = None  # None: auto
    redact: Redaction = REDACT_ON  # secrets replaced before anything is stored or sent (--redact)
    duplicate_threshold: float = DUPLICATE_THRESHOLD
    candidate_threshold: float = CANDIDATE_THRESHOLD
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key_env: str = "MEMORY_SIDECAR_LLM_API_KEY"
    llm_timeout: float = 30.0
    graph: bool = True
    graph_llm: bool = False
    graph_consolidate_every: int = 200
    graph_cache_mb: int = 32
    cache_disk_mb: int = 2048
    llm_retries: int = 2
    llm_extract: bool = True
    user: str = "default"  # the MCP face's default user (--user)
    port: int = 0  # the inspector's port (--port)
    token: str | None = None  # the inspector's URL token (--token); None: a random one
    listen: str = DEFAULT_LISTEN  # the HTTP face's address (--listen), HOST:PORT
    token_file: str | None = None  # the HTTP face's token file (--token-file); None: http-token in the data dir
    allow_origin: tuple[str, ...] | None = None  # the HTTP face's CORS origins (--allow-origin); None: no CORS
    request_timeout: float = 10.0  # the HTTP face's deadline for a request's headers, then its body
    s3_endpoint: str | None = None
    s3_region: str | None = None
    s3_access_key_id: str | None = None
    s3_secret_access_key_env: str = "AWS_SECRET_ACCESS_KEY"
    refresh_seconds: float = 2.0
    lease_seconds: float = 15.0
    s3_writers: str = "auto"

    @property
    def shared(self) -> bool:
        """The data dir is an object-store location."""
        return isinstance(self.data_dir, str)

    def describe(self) -> str:
        return ", ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


class ConfigError(ValueError):
    pass


def _cut(message: str) -> str:
    """An option's error as its parser (or int(), float()) said it, which may quote the whole value: at most
    a few hundred characters, like every error (the parsers quote with quote(); this bounds the rest)."""
    return clip(message, MAX_QUOTE + 100)


MCP_DESCRIPTION = (
    "Serves the same memory as a Model Context Protocol server over stdio (tools: remember, search, facts, "
    "remember_fact, forget, context, graph_recall, entities); needs the package's mcp extra (docs/mcp.md). Logs on "
    "stderr. Every option can also be set by the environment variable shown; flags win over the environment."
)


INSPECT_DESCRIPTION = (
    "Serves a read-only web page on 127.0.0.1 over a data dir (users, messages and search, facts and their "
    "history, the entity graph, stats and health), safe beside a running sidecar: it takes no lock and writes "
    "nothing. Prints its URL on stderr. Every option can also be set by the environment variable shown."
)


SERVE_DESCRIPTION = (
    "Serves the same memory over HTTP/1.1 for bots that run in several processes: POST /v1/command takes any "
    "request the pipe takes; POST /ingest, /recall, /context and GET /health are shortcuts; GET /openapi.json "
    "describes them. Every request carries the token of --token-file (Authorization: Bearer ...). Prints one "
    "ready line with its url and token_file on stdout; logs on stderr (docs/http.md). Needs the package's http extra."
)
FACE_DESCRIPTIONS = {"mcp": MCP_DESCRIPTION, "inspect": INSPECT_DESCRIPTION, "serve": SERVE_DESCRIPTION}


def build_parser(face: str = "ndjson") -> argparse.ArgumentParser:
    if face in FACE_DESCRIPTIONS:
        parser = argparse.ArgumentParser(prog=f"memory-sidecar {face}", description=FACE_DESCRIPTIONS[face])
        return add_options(parser, face_options(face))
    parser = argparse.ArgumentParser(
        prog="memory-sidecar",
        description=(
            "Offline long-term memory for chat bots. Speaks newline-delimited JSON: one request per "
            "line on stdin, one response per line on stdout, logs on stderr. Prints one "
            '{"type":"ready",...} line once the model and store are loaded. '
            "Every option can also be set by the environment variable shown; flags win over the environment."
        ),
        epilog=(
            'Example: printf \'{"type":"store","user_id":"1","content":"I have a cat"}\\n'
            '{"type":"query","user_id":"1","text":"pets","limit":1}\\n\' | memory-sidecar --data-dir /tmp/mem. '
            "The same memory as a Model Context Protocol server: memory-sidecar mcp --help; over HTTP: "
            "memory-sidecar serve --help. A read-only web "
            "page over a data dir: memory-sidecar inspect --help. Export and import (another machine, a backup): "
            "memory-sidecar export --help, memory-sidecar import --help."
        ),
    )
    return add_options(parser, OPTIONS)


def add_options(parser: argparse.ArgumentParser, options: tuple[Option, ...]) -> argparse.ArgumentParser:
    parser.add_argument("--version", action="version", version=f"memory-sidecar {__version__}")
    for opt in options:
        shown = ",".join(opt.default) if isinstance(opt.default, tuple) else opt.default
        default_txt = "" if opt.default is None else f" (default: {shown})"
        if opt.flag_only:
            parser.add_argument(
                opt.flag,
                dest=opt.name,
                action="store_const",
                const=True,
                default=None,
                help=f"{opt.help} [env {opt.env}]",
            )
        else:
            parser.add_argument(
                opt.flag,
                dest=opt.name,
                default=None,
                metavar=opt.name.upper(),
                help=f"{opt.help}{default_txt} [env {opt.env}]",
            )
    return parser


def resolve(argv: list[str] | None = None, environ: dict[str, str] | None = None, face: str = "ndjson") -> Config:
    """Flags, then environment, then defaults. Raises ConfigError with a readable message."""
    return from_args(build_parser(face).parse_args(argv), environ, face)


def from_args(args: argparse.Namespace, environ: dict[str, str] | None = None, face: str = "ndjson") -> Config:
    """The configuration from parsed flags (a parser given the options by `add_options`), then environment,
    then defaults."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {opt.name: opt.default for opt in OPTIONS}  # the options a face does not take
    for opt in face_options(face):
        raw = getattr(args, opt.name)
        source = opt.flag
        if raw is None and opt.env in env:
            raw, source = env[opt.env], opt.env
        if raw is None:
            values[opt.name] = opt.default
            continue
        if isinstance(raw, bool):
            values[opt.name] = raw
            continue
        try:
            values[opt.name] = opt.parse(raw)
        except ValueError as exc:
            raise ConfigError(f"{source}: {_cut(str(exc))}") from None
    if not values["offline"] and env.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        values["offline"] = True
    values["data_dir"] = _data_dir(values["data_dir"])
    values["model_dir"] = Path(values["model_dir"]).expanduser() if values["model_dir"] else None
    if values["max_line_bytes"] is None:  # room for a content at the limit, every byte escaped, and the rest
        values["max_line_bytes"] = 6 * values["max_content_bytes"] + LINE_ENVELOPE_BYTES
    if values["threads"] is None:
        values["threads"] = max(1, min(2, os.cpu_count() or 1))
    if values["llm_base_url"] and not values["llm_model"]:
        raise ConfigError("--llm-base-url needs --llm-model (MEMORY_SIDECAR_LLM_MODEL)")
    if values.get("graph_llm") and not values.get("llm_base_url"):
        raise ConfigError("--graph-llm needs an LLM: set --llm-base-url and --llm-model")
    if values["model_sha256"]:
        values["model_sha256"] = values["model_sha256"].strip().lower()
    return Config(**values)
