"""The model's weights mapped from a file rather than copied into the process: a copy of the ONNX file with its
weights in a separate file (ONNX external data), made once per model file and kept in the user's cache.

onnxruntime reads a model given as one ONNX file into its own memory: every weight is copied out of the parsed
file, so the whole file becomes private memory of the process (what a desktop's task manager counts against the
sidecar). Weights kept in an external-data file are mapped from it instead; a weight onnxruntime uses as it is
stays a page of that file (shared, clean, dropped and re-read by the system at will, and for a vocabulary's
table resident only for the rows that are read), and only what it repacks at load is copied. Measured in-process
(2 threads, `RssAnon` of /proc/self/status around the session's creation; 2026-12-08): the bundled int8
all-MiniLM-L6-v2 +34 MiB as one file, +19 mapped; an fp32 multilingual-e5-small (448 MiB, 250,000-token
vocabulary) +450 MiB and 6.6 s to load as one file, +82 MiB and 1.0 s mapped.

The copy is the same graph saved by onnxruntime itself (no optimisation applied, so the vectors are the same
bit for bit), in `<cache>/<sha256 of the original>/`: `model.onnx`, `model.onnx.data` and `copy.json`, which
holds both files' size and modification time, checked at every start (a copy that does not match is made
again). Not their sha256: the original's is already checked at every start, and hashing the copy too took
seconds for a 470 MB model on a loaded machine; the copy is written by the sidecar into the user's own cache.
The cache is `MEMORY_SIDECAR_MODEL_CACHE` when set (`off` to load the original as before), else the per-user
cache folder (platformdirs: ~/.cache/memory-sidecar/models on Linux). A copy is written into a folder of its own
and renamed into place, so sidecars starting together never read half a copy. When the copy cannot be made (a
read-only or full disk), the original is loaded as before and a warning says why. Each start that uses a copy
touches its `copy.json`; making a new copy (another model, or a new version of one) removes the copies no start
has used for KEEP_UNUSED_DAYS and the work folders a crash left, so the cache holds what is in use.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
from pathlib import Path

log = logging.getLogger("sidecar.embedder")

CACHE_ENV = "MEMORY_SIDECAR_MODEL_CACHE"
OFF = ("off", "0", "false", "no", "none")
DATA_NAME = "model.onnx.data"
MARKER = "copy.json"
FILES = ("model.onnx", DATA_NAME)
# weights this small stay in the graph file (onnxruntime's own default threshold is 1,024 bytes)
MIN_EXTERNAL_BYTES = 1024
# an ONNX file smaller than this already keeps its weights outside (or has almost none): loaded as it is
MIN_SOURCE_BYTES = 1 << 20
KEEP_UNUSED_DAYS = 30  # a copy no start has used for this long goes when another copy is made
_WORK_LEFT_SECONDS = 86_400  # a work folder older than this was left by a process that died while copying


def cache_root() -> Path | None:
    """Where mapped copies are kept, or None when the environment turns them off."""
    value = os.environ.get(CACHE_ENV)
    if value is not None:
        return None if value.strip().lower() in OFF else Path(value).expanduser()
    import platformdirs

    return platformdirs.user_cache_path("memory-sidecar", appauthor=False) / "models"


def mapped_model(onnx: Path, digest: str) -> Path | None:
    """The path of the mapped copy of `onnx` (whose sha256 is `digest`), made now when there is none; None when
    the original is to be loaded as it is (copies off, a small file, or the copy could not be made)."""
    root = cache_root()
    if root is None:
        return None
    try:
        if onnx.stat().st_size < MIN_SOURCE_BYTES:
            return None
        folder = root / digest
        found = _checked(folder)
        if found is not None:
            try:
                os.utime(folder / MARKER)  # used now (its own times are not checked)
            except OSError:
                pass  # a read-only cache: the copy still serves
            return found
        _make(onnx, root, folder)
        found = _checked(folder)
        if found is None:
            raise OSError(f"the copy in {folder} does not match what was written")
        _sweep(root, folder)
        return found
    except Exception as exc:  # a read-only or full disk, or onnxruntime failing to save: the original as before
        log.warning(
            "model %s: loading the file as it is (its weights copied into memory): no mapped copy in %s (%s)",
            onnx,
            root,
            str(exc)[:300],
        )
        return None


def _checked(folder: Path) -> Path | None:
    """`folder/model.onnx` when the copy there is as it was written (each file's size and modification time as
    its marker says), else None (a copy that does not match is removed, to be made again)."""
    marker = folder / MARKER
    if not marker.is_file():
        return None
    try:
        want = json.loads(marker.read_text(encoding="utf-8"))
        ok = all(_stamp(folder / name) == want.get(name) for name in FILES)
    except (OSError, ValueError, AttributeError):
        ok = False
    if ok:
        return folder / "model.onnx"
    log.warning("the mapped copy of the model in %s is damaged: making it again", folder)
    shutil.rmtree(folder, ignore_errors=True)
    return None


def _sweep(root: Path, keep: Path) -> None:
    """Remove the copies beside `keep` that no start used for KEEP_UNUSED_DAYS, and work folders a crash left."""
    now = time.time()
    for path in root.iterdir():
        if path == keep or not path.is_dir():
            continue
        try:
            if path.name.startswith("."):
                old = now - path.stat().st_mtime > _WORK_LEFT_SECONDS
            else:
                marker = path / MARKER
                used = (marker if marker.exists() else path).stat().st_mtime
                old = now - used > KEEP_UNUSED_DAYS * 86_400
        except OSError:
            continue
        if old:
            shutil.rmtree(path, ignore_errors=True)  # a process still mapping it keeps its pages (POSIX)
            log.info("model cache: removed %s, unused for over %d days", path, KEEP_UNUSED_DAYS)


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def _make(onnx: Path, root: Path, folder: Path) -> None:
    import onnxruntime as ort

    root.mkdir(parents=True, exist_ok=True)
    work = root / f".{folder.name[:16]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    work.mkdir()
    try:
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the graph as it is
        opts.optimized_model_filepath = str(work / "model.onnx")
        opts.add_session_config_entry("session.optimized_model_external_initializers_file_name", DATA_NAME)
        opts.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", str(MIN_EXTERNAL_BYTES)
        )
        opts.log_severity_level = 3
        ort.InferenceSession(str(onnx), opts, providers=["CPUExecutionProvider"])
        stamps = {name: _stamp(work / name) for name in FILES}
        (work / MARKER).write_text(json.dumps({**stamps, "source": onnx.name}), encoding="utf-8")
        try:
            work.rename(folder)
        except OSError:  # another sidecar put its copy there first: that one is used
            if not (folder / MARKER).is_file():
                raise
        log.info("model %s: mapped copy made in %s", onnx, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
