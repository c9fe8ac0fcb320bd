"""The model's load on a thread of its own, started first, so that start-up's imports and the store's
opening run beside it: hashing the ONNX file (hashlib) and making the onnxruntime session release the
GIL for most of their time, and the machines we run on have a second core. Timed inside the process,
the model's files and session took 160-240 ms of a start-up that did nothing else meanwhile; over the
pipe, with the wire models deferred too, spawn to `ready` 1,214 -> 1,079 ms (docs/performance.md,
"Spawn to ready")."""

from __future__ import annotations

import threading
from concurrent.futures import Future, wait
from pathlib import Path
from typing import TYPE_CHECKING

from .model import ModelFiles, resolve_model

if TYPE_CHECKING:
    from .embedder import Embedder


class ModelLoad:
    """Finds and verifies the model's files, then makes its embedder, on a daemon thread. `files()`
    and `embedder()` wait for their part and raise what the load raised (a missing model's ModelError
    names every place tried, as before)."""

    def __init__(
        self,
        model_dir: Path | None,
        offline: bool,
        sha256: str | None,
        threads: int,
        model: str | None = None,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
    ):
        self._files: Future[ModelFiles] = Future()
        self._embedder: Future[Embedder] = Future()
        which = (model, query_prefix, passage_prefix)
        threading.Thread(
            target=self._load, args=(model_dir, offline, sha256, threads, which), name="model-load", daemon=True
        ).start()

    def _load(
        self,
        model_dir: Path | None,
        offline: bool,
        sha256: str | None,
        threads: int,
        which: tuple[str | None, str | None, str | None],
    ) -> None:
        try:
            files = resolve_model(model_dir, offline, sha256, *which)
        except BaseException as exc:
            self._files.set_exception(exc)
            self._embedder.set_exception(exc)
            return
        self._files.set_result(files)
        try:
            from .embedder import Embedder

            self._embedder.set_result(Embedder(files, threads=threads))
        except BaseException as exc:
            self._embedder.set_exception(exc)

    def files(self) -> ModelFiles:
        return self._files.result()

    def settle(self) -> None:
        """Wait for the load to end, however it ends. A process that exits while onnxruntime is making its
        session aborts ("terminate called without an active exception": exit status -6 instead of the
        error's own 1), as `export` did when the data dir it was given was in use."""
        wait([self._embedder])

    def embedder(self) -> Embedder:
        return self._embedder.result()
