"""What a sentence-transformers model says about itself, read from its own config files: how token
embeddings become one vector (pooling, normalisation), how long an input may be, how wide the vector is,
and which prefix a query and a stored text (a passage) get. Nothing here is written for one model: the
bundled all-MiniLM-L6-v2 is read the same way as any other (its configs say mean pooling, Normalize,
256 tokens, no prefixes).

Files read, all optional except where said:
  modules.json                      the pipeline: Transformer, then Pooling, then Normalize or not. A module
                                    of another type (Dense, LayerNorm, ...) is refused: the ONNX file holds
                                    only the transformer, so the vectors would be wrong. Without the file:
                                    Pooling from 1_Pooling/ and Normalize (the common sentence-transformers
                                    layout, and what the sidecar always did).
  <Pooling path>/config.json        `pooling_mode` or the `pooling_mode_*` flags (several: concatenated, in
                                    sentence-transformers' order), `include_prompt`, `word_embedding_dimension`
  sentence_bert_config.json         `max_seq_length`
  config_sentence_transformers.json `prompts` and `default_prompt_name`
  config.json                       `hidden_size` (the width when the pooling config does not say);
                                    `max_position_embeddings` (with `model_type` and `pad_token_id`): the most
                                    tokens the ONNX model takes. A `max_seq_length` above it is clamped to it,
                                    with a warning: the model would fail every longer input. `model_type` and
                                    `vocab_size`: which scripts the model reads (`scripts_read`).

The scripts a model reads (`ModelSpec.scripts`, None: every script) decide how a hybrid query is fused: a
question written mostly in a script the model does not read is led by its keyword lists (messages/ranking.py).
Neither the configs nor the ONNX file say which languages a model was trained on, so the rule is, in order:
the model's name (MODEL_SCRIPTS: multilingual families, Chinese, Japanese and Korean models); a multilingual
architecture or vocabulary (`model_type` in MULTILINGUAL_TYPES, or `vocab_size` of MULTILINGUAL_VOCAB or more:
XLM-R and multilingual-e5 have 250,002 entries, multilingual BERT 119,547, LaBSE 501,153; English BERT,
MiniLM, MPNet, e5-v2 and bge-en about 30,000, RoBERTa 50,265); otherwise Latin only. That default is the safe
side: keyword-led fusion costs a model that does read a script some paraphrase recall in it, while a
semantic-led one on a model that does not puts noise first.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# sentence-transformers' pooling modes, in the order its Pooling module concatenates them, with the flag
# each has in an older config
POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
POOLING_FLAGS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
POOLING_ALIASES = {
    "cls_token": "cls",
    "mean_tokens": "mean",
    "max_tokens": "max",
    "weightedmean_tokens": "weightedmean",
    "last_token": "lasttoken",
}
TRANSFORMER = "sentence_transformers.models.Transformer"
POOLING = "sentence_transformers.models.Pooling"
NORMALIZE = "sentence_transformers.models.Normalize"
log = logging.getLogger("sidecar.model")

DEFAULT_MAX_LENGTH = 512  # when sentence_bert_config.json does not say
# Model types whose position ids start after the padding token's (fairseq's rule, kept by transformers): of
# `max_position_embeddings`, pad_token_id + 1 are never used (514 positions, 512 tokens, for XLM-R and MPNet).
OFFSET_POSITIONS = ("roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "mpnet", "data2vec-text", "longformer")
# Prompt names sentence-transformers models use for the two sides of retrieval.
QUERY_PROMPTS = ("query", "search_query", "retrieval.query", "Retrieval-query")
PASSAGE_PROMPTS = ("document", "passage", "search_document", "corpus", "retrieval.passage", "Retrieval-document")
# Model families whose model card asks for prefixes that their config files do not carry (checked on the
# published repos: intfloat's e5 models publish no `prompts`; their cards say "query: " / "passage: ").
# Used only when the config has no prompts and the user gave no --query-prefix / --passage-prefix.
CARD_PREFIXES = ((re.compile(r"^intfloat/(multilingual-)?e5-(small|base|large)(-v2)?$", re.I), "query: ", "passage: "),)
# The scripts a model reads, by its name (the first pattern that matches; None: every script), then by its
# config (`scripts_read`). Script names as sidecar/text's `letters_by_script` counts them.
LATIN = frozenset({"Latin"})
CJK_SCRIPTS = frozenset({"Han", "Hiragana", "Katakana"})
MODEL_SCRIPTS: tuple[tuple[re.Pattern[str], frozenset[str] | None], ...] = (
    (re.compile(r"multilingual|labse|xlm|bge-m3|(^|/)m(e5|bert|contriever)|jina-embeddings-v3", re.I), None),
    (re.compile(r"chinese|text2vec|m3e|(^|[-_/])zh([-_./]|$)", re.I), LATIN | {"Han"}),
    (re.compile(r"japanese|(^|[-_/])ja([-_./]|$)", re.I), LATIN | CJK_SCRIPTS),
    (re.compile(r"korean|(^|[-_/])ko([-_./]|$)|ko-sroberta", re.I), LATIN | {"Hangul"}),
)
MULTILINGUAL_TYPES = frozenset({"xlm-roberta", "xlm-roberta-xl", "xlm", "mt5", "umt5", "bloom", "xmod"})
MULTILINGUAL_VOCAB = 100_000


class ModelConfigError(ValueError):
    """A model's config names something the sidecar cannot reproduce (an unknown pooling, a module)."""


@dataclass(frozen=True)
class ModelSpec:
    pooling: tuple[str, ...]  # POOLING_MODES, concatenated in this order
    normalize: bool
    max_length: int  # tokens, special tokens included
    word_dim: int | None  # width of one token embedding (None: take the ONNX output's)
    query_prefix: str
    passage_prefix: str
    include_prompt: bool  # False: the prefix's tokens are left out of the pooling (sentence-transformers' rule)
    prefix_source: str  # where the prefixes came from (config, model card, options, none)
    positions: int | None = None  # the most tokens the model takes (config.json), when it says
    scripts: frozenset[str] | None = None  # the scripts the model reads (None: every script): `scripts_read`

    @property
    def dim(self) -> int | None:
        return None if self.word_dim is None else self.word_dim * len(self.pooling)

    @property
    def signature(self) -> dict[str, Any]:
        """What changes a stored vector besides the weights: part of the model identity kept with the data."""
        return {"pooling": "+".join(self.pooling), "normalize": self.normalize, "passage_prefix": self.passage_prefix}

    def describe(self) -> dict[str, Any]:
        return {
            "pooling": "+".join(self.pooling),
            "normalize": self.normalize,
            "max_length": self.max_length,
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
        }


MAX_PREFIX_CHARS = 1_000  # a query or passage prefix (an option or a config's prompt): tokenised with every text


def _json(path: Path, kind: type = dict) -> Any:
    """The file's JSON value (None when there is no file); ModelConfigError naming the file when it cannot be
    read, is nested too deep for the parser, or is not a `kind` (an object, or a list for modules.json)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ModelConfigError(f"{path} is unreadable: {exc}") from None
    except RecursionError:
        raise ModelConfigError(f"{path} is unreadable: nested too deep for a model config") from None
    if not isinstance(value, kind):
        what = "a JSON object" if kind is dict else "a JSON list"
        raise ModelConfigError(f"{path} is not {what}: correct the file, or choose another model")
    return value


def check_prefix(prefix: str, where: str) -> str:
    """A query or passage prefix, at most MAX_PREFIX_CHARS; ModelConfigError naming where it came from."""
    if len(prefix) > MAX_PREFIX_CHARS:
        raise ModelConfigError(
            f"{where}: the prefix has {len(prefix):,} characters, over the limit of {MAX_PREFIX_CHARS:,} (it is "
            "put before every query or stored text)"
        )
    return prefix


def _find(config_dir: Path, fallback: Path | None, name: str) -> Path:
    """config_dir/name, or fallback/name when only the fallback has it."""
    own = config_dir / name
    if fallback is not None and not own.exists() and (fallback / name).exists():
        return fallback / name
    return own


def _modules(config_dir: Path, fallback: Path | None) -> tuple[Path | None, bool]:
    """(the Pooling module's folder, whether a Normalize module follows) from modules.json."""
    where = _find(config_dir, fallback, "modules.json")
    config_dir = where.parent
    modules = _json(where, list)
    if modules is None:
        folder = _find(config_dir, fallback, "1_Pooling")
        return (folder if folder.is_dir() else None), True
    pooling: Path | None = None
    normalize = False
    for m in sorted(modules, key=lambda m: m.get("idx", 0) if isinstance(m, dict) else 0):
        kind = str(m.get("type", "")) if isinstance(m, dict) else ""
        short = kind.rsplit(".", 1)[-1]
        if kind == TRANSFORMER or short == "Transformer":
            continue
        if kind == POOLING or short == "Pooling":
            pooling = config_dir / str(m.get("path") or "1_Pooling")
        elif kind == NORMALIZE or short == "Normalize":
            normalize = True
        else:
            raise ModelConfigError(
                f"{config_dir / 'modules.json'} has a {kind or m!r} module, which the sidecar does not run (it runs "
                "the ONNX transformer, then Pooling and Normalize as the configs say): choose a model whose pipeline "
                "is Transformer, Pooling and optionally Normalize"
            )
    return pooling, normalize


def _pooling(pooling_dir: Path | None) -> tuple[tuple[str, ...], bool, int | None]:
    cfg = _json(pooling_dir / "config.json") if pooling_dir is not None else None
    if cfg is None or pooling_dir is None:
        return ("mean",), True, None
    where = pooling_dir / "config.json"
    modes: list[str] = []
    named = cfg.get("pooling_mode")
    if named is not None:
        name = POOLING_ALIASES.get(str(named).lower(), str(named).lower())
        if name not in POOLING_MODES:
            raise ModelConfigError(
                f"{where} names pooling {named!r}, which the sidecar does not know (it knows "
                f"{', '.join(POOLING_MODES)}): choose another model, or correct the file"
            )
        modes.append(name)
    for key, value in cfg.items():
        if key.startswith("pooling_mode_") and value is True:
            if key not in POOLING_FLAGS:
                raise ModelConfigError(
                    f"{where} turns on {key}, a pooling the sidecar does not know (it knows "
                    f"{', '.join(POOLING_MODES)}): choose another model, or correct the file"
                )
            if POOLING_FLAGS[key] not in modes:
                modes.append(POOLING_FLAGS[key])
    if not modes:
        raise ModelConfigError(f"{where} turns on no pooling mode: choose another model, or correct the file")
    dim = cfg.get("word_embedding_dimension")
    return (
        tuple(m for m in POOLING_MODES if m in modes),
        bool(cfg.get("include_prompt", True)),
        int(dim) if isinstance(dim, int) and dim > 0 else None,
    )


def positions_of(config: dict[str, Any]) -> int | None:
    """The most tokens (special tokens included) a transformer with this config.json takes, or None when it
    does not say."""
    positions = config.get("max_position_embeddings")
    if not isinstance(positions, int) or isinstance(positions, bool) or positions <= 2:
        return None
    if str(config.get("model_type", "")).lower() in OFFSET_POSITIONS:
        pad = config.get("pad_token_id")
        positions -= (pad + 1) if isinstance(pad, int) and not isinstance(pad, bool) and pad >= 0 else 2
    return positions if positions > 2 else None


def scripts_read(name: str, config: dict[str, Any]) -> frozenset[str] | None:
    """The scripts a model reads (None: every script), from its name, else its config.json (module doc)."""
    for pattern, scripts in MODEL_SCRIPTS:
        if pattern.search(name):
            return scripts
    vocab = config.get("vocab_size")
    if str(config.get("model_type", "")).lower() in MULTILINGUAL_TYPES:
        return None
    if isinstance(vocab, int) and not isinstance(vocab, bool) and vocab >= MULTILINGUAL_VOCAB:
        return None
    return LATIN


def describe_scripts(scripts: frozenset[str] | None) -> str:
    """What a log line says of the scripts a model reads."""
    return "every script" if scripts is None else ", ".join(sorted(scripts)) + " only"


def _max_length(sbert: dict[str, Any], positions: int | None, where: Path) -> int:
    """`max_seq_length`, clamped to what the model takes (with a warning: the configs disagree)."""
    asked = sbert.get("max_seq_length")
    length = int(asked) if isinstance(asked, int) and not isinstance(asked, bool) and asked > 2 else None
    if positions is not None and (length or DEFAULT_MAX_LENGTH) > positions:
        if length is not None:
            log.warning(
                "%s sets max_seq_length %d, but the model takes at most %d tokens (config.json "
                "max_position_embeddings): texts are cut at %d tokens",
                where,
                length,
                positions,
                positions,
            )
        return positions
    return length or DEFAULT_MAX_LENGTH


def _prompts(config_dir: Path, fallback: Path | None) -> tuple[str | None, str | None]:
    where = _find(config_dir, fallback, "config_sentence_transformers.json")
    cfg: dict[str, Any] = _json(where) or {}
    prompts: dict[str, Any] = cfg["prompts"] if isinstance(cfg.get("prompts"), dict) else {}
    name = cfg.get("default_prompt_name")
    default = prompts.get(name) if isinstance(name, str) else None
    default = default if isinstance(default, str) else None
    query = next((prompts[k] for k in QUERY_PROMPTS if isinstance(prompts.get(k), str)), default)
    passage = next((prompts[k] for k in PASSAGE_PROMPTS if isinstance(prompts.get(k), str)), default)
    for prompt in (query, passage):
        if prompt is not None:
            check_prefix(prompt, f"{where} (prompts)")
    return query, passage


def read_spec(
    config_dir: Path,
    name: str,
    query_prefix: str | None = None,
    passage_prefix: str | None = None,
    fallback: Path | None = None,
) -> ModelSpec:
    """The model's settings from the config files in `config_dir` (a file missing there is read from
    `fallback`, when given); `query_prefix`/`passage_prefix` (the user's options) win over what the configs or
    the model card say. Raises ModelConfigError."""
    pooling_dir, normalize = _modules(config_dir, fallback)
    modes, include_prompt, word_dim = _pooling(pooling_dir)
    transformer = _json(_find(config_dir, fallback, "config.json"))
    transformer = transformer if isinstance(transformer, dict) else {}
    if word_dim is None:
        hidden = transformer.get("hidden_size")
        word_dim = int(hidden) if isinstance(hidden, int) and hidden > 0 else None
    positions = positions_of(transformer)
    where = _find(config_dir, fallback, "sentence_bert_config.json")
    sbert = _json(where)
    max_length = _max_length(sbert if isinstance(sbert, dict) else {}, positions, where)
    query, passage = _prompts(config_dir, fallback)
    source = "config_sentence_transformers.json" if (query or passage) else "none"
    if not (query or passage):
        for pattern, q, p in CARD_PREFIXES:
            if pattern.match(name):
                query, passage, source = q, p, "the model card's convention"
    if query_prefix is not None or passage_prefix is not None:
        source = "options" if source == "none" else f"options over {source}"
    return ModelSpec(
        pooling=modes,
        normalize=normalize,
        max_length=max_length,
        word_dim=word_dim,
        query_prefix=query_prefix if query_prefix is not None else (query or ""),
        passage_prefix=passage_prefix if passage_prefix is not None else (passage or ""),
        include_prompt=include_prompt,
        prefix_source=source,
        positions=positions,
        scripts=scripts_read(name, transformer),
    )
