"""The data dir: its lock (one sidecar per dir), `meta.json` (schema version, model identity), the
LanceDB connection every domain's tables live in, and the forward migrations between schema versions.

Knows nothing of messages, facts or the graph: each domain's store creates and migrates its own
tables through this object.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson

from .lancedb_import import import_lancedb, table_names
from .shared import SharedAccess, SharedStore, SharedStoreError

log = logging.getLogger("sidecar.storage")

# 1: messages; 2: + facts, fact_events, users; 3: + search_text, prev_id, prev2_id, full-text indexes;
# 4: + the graph tables (graph/store.py creates them; the graph is built from the messages in the background);
# 5: + the chunks table (messages/chunks.py; the long memories already stored are chunked in the background)
# 6: + `rev` on every graph table (graph/store.py adds it as it opens them: rows are replaced by an append and
#    a delete, no longer merged; a sidecar of version 5 would write rows without it)
# 7: + `terms` and `language` on facts (facts/keywords.py computes them as the fact store opens: keyword search
#    in every script; a sidecar of version 6 would write facts without them)
SCHEMA_VERSION = 7
META_FILE = "meta.json"
LOCK_FILE = "sidecar.lock"
LANCE_DIR = "lancedb"
# LanceDB's own caches (its defaults are gigabytes). The sidecar keeps its hot data in its own
# vector cache, so these stay small: with 32 MB each, RSS rose well past their nominal 64 MB
# (in-process, `python scripts/bench.py memory`, 50k steps: +64 MB against 2 MB each, and still rising
# at 100k; see docs/reliability.md, Soak). The index cache was sized for the messages' full-text indexes
# (2 MB cost about 3.6 ms of hybrid p50 at 100k, 8 MB nothing measurable); those are gone (keyword
# search runs in process), and it now holds the BTREE parts that reads by user, channel and id use: each
# compaction's new index files are new entries, so at 8 MB it kept filling for 40,000 soak requests (2 MB at 5k,
# 9.8 MB at 40k) and the heap with it: `python scripts/bench.py soak --requests 40000 --hostile 0.05 --retain
# 12000 --pyheap`, last-half slope +6.97 MiB per 10,000 requests at 8 MB, +2.46 at 2 MB (full, 4 MB with the
# metadata cache, from 15k on), same run.
LANCE_INDEX_CACHE_BYTES = 2 << 20
LANCE_METADATA_CACHE_BYTES = 2 << 20


class StoreError(RuntimeError):
    pass


class StoreLocked(StoreError):
    pass


class ModelMismatch(StoreError):
    pass


def write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o600)  # no \r\n on Windows
    with os.fdopen(fd, "wb") as f:
        f.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def dir_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def _family(model: dict[str, Any]) -> Any:
    """`vectors` names the family of model files whose vectors are interchangeable (embedding.model.vector_family).
    An identity written before it was recorded has only its digest, which is then its family's name: a family is
    named by its oldest member, so that holds for every identity the sidecar wrote before."""
    return model.get("vectors") or model.get("digest")


# The `embedding` settings (embedding.spec.ModelSpec.signature) of an identity written before they were recorded:
# every such store was made by all-MiniLM-L6-v2 as the sidecar always ran it (mean pooling, normalised, no prefix).
LEGACY_EMBEDDING = {"pooling": "mean", "normalize": True, "passage_prefix": ""}


def same_model(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """May vectors made by model identity `a` be searched together with vectors made by `b`? Same name and dim,
    the same file or files of one family, and the same settings that shape a stored vector (pooling,
    normalisation, passage prefix)."""
    return (
        (a.get("name"), a.get("dim")) == (b.get("name"), b.get("dim"))
        and (a.get("digest") == b.get("digest") or _family(a) == _family(b))
        and (a.get("embedding") or LEGACY_EMBEDDING) == (b.get("embedding") or LEGACY_EMBEDDING)
    )


def _settings(identity: dict[str, Any]) -> dict[str, Any]:
    return {**LEGACY_EMBEDDING, **(identity.get("embedding") or {})}


def _same_file(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("digest") == b.get("digest") or _family(a) == _family(b)


def _digest(identity: dict[str, Any]) -> str:
    return f"{str(identity.get('digest'))[:12]}..."


def model_differences(stored: dict[str, Any], running: dict[str, Any]) -> list[str]:
    """Each setting in which the identity `running` differs from `stored` (what `same_model` compares), as
    'passage prefix "passage: " (this sidecar: "")': what a mismatch error names."""
    a, b = _settings(stored), _settings(running)
    rows: list[tuple[str, Any, Any, Callable[[Any], str]]] = [
        ("model", stored.get("name"), running.get("name"), str),
        ("dim", stored.get("dim"), running.get("dim"), str),
        ("pooling", a.get("pooling"), b.get("pooling"), str),
        ("normalize", a.get("normalize"), b.get("normalize"), lambda v: str(v).lower()),
        ("passage prefix", a.get("passage_prefix"), b.get("passage_prefix"), json.dumps),
    ]
    out = [f"{what} {show(x)} (this sidecar: {show(y)})" for what, x, y, show in rows if x != y]
    if not _same_file(stored, running):
        out.append(f"model file sha256 {_digest(stored)} (this sidecar: {_digest(running)})")
    return out


def options_for(target: dict[str, Any], running: dict[str, Any]) -> str:
    """The start-up options that make this sidecar run the identity `target` where it differs from `running`."""
    a, b = _settings(target), _settings(running)
    options = []
    if target.get("name") != running.get("name"):
        options.append(f"--model {target.get('name')}")
    if a.get("passage_prefix") != b.get("passage_prefix"):
        options.append(f"--passage-prefix {json.dumps(a.get('passage_prefix'))}")
    if not _same_file(target, running):
        options.append(f"--model-dir holding the model file of sha256 {_digest(target)}")
    elif (a.get("pooling"), a.get("normalize")) != (b.get("pooling"), b.get("normalize")):
        options.append(f"--model-dir holding configs of pooling {a.get('pooling')}, normalize {a.get('normalize')}")
    return " ".join(options) or "the model and settings it was made with"


class Database:
    """An open data dir: a locked local directory, or an object-store location shared with other
    sidecars (`SharedStore`: no lock file; meta.json an object; the lease decides who maintains, and
    on a store without conditional writes who writes). `meta` is None for a new one until
    `commit_meta()` writes it (the last step of creating a data dir, so an interrupted first start-up
    is completed next time)."""

    def __init__(self, data_dir: Path | SharedStore, model: dict[str, Any], allow_reembed: bool = False):
        self.path = data_dir
        self.model = model
        self.dim = int(model["dim"])
        self.shared: SharedAccess | None = None
        self._disk: tuple[float, int] | None = None  # object store: (when, bytes) of the last listing
        if isinstance(data_dir, SharedStore):
            self._open_shared(data_dir, allow_reembed)
            return
        from filelock import FileLock, Timeout

        try:
            data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            if data_dir.exists() and not data_dir.is_dir():  # mkdir's own words: "File exists"
                raise StoreError(
                    f"data dir {data_dir} is a file, not a directory: pass a directory's path "
                    "(it is created if missing)"
                ) from None
            raise StoreError(f"cannot create data dir {data_dir}: {exc.strerror or exc}") from None
        self._file_lock = FileLock(str(data_dir / LOCK_FILE))
        try:
            self._file_lock.acquire(timeout=0)
        except Timeout:
            raise StoreLocked(
                f"data dir {data_dir} is in use by another memory-sidecar (lock {data_dir / LOCK_FILE} is held); "
                "stop that process or use another --data-dir"
            ) from None
        except OSError as exc:
            raise StoreError(f"cannot lock data dir {data_dir}: {exc.strerror or exc}") from None
        try:
            self.meta = self._read_meta()
            self._check(allow_reembed)
            self.db = self._connect(str(data_dir / LANCE_DIR))
        except BaseException:
            self._file_lock.release()
            raise

    @staticmethod
    def _connect(uri: str, **kwargs: Any) -> Any:
        lancedb = import_lancedb()
        session = lancedb.Session(
            index_cache_size_bytes=LANCE_INDEX_CACHE_BYTES, metadata_cache_size_bytes=LANCE_METADATA_CACHE_BYTES
        )
        return lancedb.connect(uri, session=session, **kwargs)

    def _open_shared(self, store: SharedStore, allow_reembed: bool) -> None:
        try:
            self.shared = SharedAccess(store)
        except SharedStoreError as exc:
            raise StoreError(str(exc)) from None
        try:
            self.meta = self.shared.read_meta()
            self._check(allow_reembed)
            if (
                self.meta is None or self.schema_version < SCHEMA_VERSION or self.model_changed
            ) and not self.shared.maintains():
                raise StoreError(
                    f"{store} is being created, migrated or re-embedded, which only the lease holder "
                    f"does ({self.shared.lease.holder_name}): start this sidecar again once that one "
                    "is ready"
                )
            # LanceDB looks for a newer version at most every half refresh interval, and the message store
            # checks the version as often: a write acknowledged elsewhere is seen within the interval
            self.db = self._connect(
                store.location.child_uri(LANCE_DIR),
                storage_options=store.settings.lance_options(),
                read_consistency_interval=timedelta(seconds=store.refresh_seconds / 2),
            )
        except SharedStoreError as exc:
            self.shared.close()
            raise StoreError(str(exc)) from None
        except BaseException:
            self.shared.close()
            raise

    @property
    def refresh_seconds(self) -> float | None:
        """How often a shared store is checked for other sidecars' commits; None for a local dir."""
        return None if self.shared is None else self.shared.store.refresh_seconds

    def maintains(self) -> bool:
        """Whether this sidecar runs compaction, cleanup and expiry (always, for a local dir)."""
        return self.shared is None or self.shared.maintains()

    def read_only_reason(self) -> str | None:
        return None if self.shared is None else self.shared.read_only_reason()

    @property
    def local(self) -> Path:
        """The local data dir (only when `shared` is None)."""
        assert isinstance(self.path, Path)
        return self.path

    def _read_meta(self) -> dict[str, Any] | None:
        if self.shared is not None:
            return self.shared.read_meta()
        path = self.local / META_FILE
        if not path.exists():
            return None
        try:
            return orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise StoreError(
                f"{path} is unreadable ({exc}); restore it from a backup or move the data dir away to start empty"
            ) from None

    def _check(self, allow_reembed: bool) -> None:
        if self.meta is None:
            return
        version = int(self.meta.get("schema_version", 0))
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {version}, newer than this sidecar's "
                f"{SCHEMA_VERSION}; upgrade memory-sidecar"
            )
        old = self.meta.get("model", {})
        if self.model_changed and self.meta.get("reembed") and not allow_reembed:
            # meta.json's model is the move's target already (begin_reembed): this sidecar runs neither it nor,
            # perhaps, the model the move started from
            raise ModelMismatch(
                f"{self.path} is being moved by --reembed to model {old.get('name')} (dim {old.get('dim')}), which "
                f"has not finished; this sidecar differs from that: {'; '.join(model_differences(old, self.model))}. "
                f"Start with {options_for(old, self.model)} to let it finish (it resumes by itself), or with "
                "--reembed to move the store to this sidecar's model and settings instead"
            )
        if self.model_changed and not allow_reembed:
            raise ModelMismatch(
                f"{self.path} was made with other embedding settings than this sidecar's: "
                f"{'; '.join(model_differences(old, self.model))}. Vectors made differently must not be mixed: "
                f"start with {options_for(old, self.model)} to use the store as it is, start once with --reembed to "
                "re-embed every memory with this sidecar's model and settings, or use another --data-dir"
            )

    @property
    def is_new(self) -> bool:
        return self.meta is None

    @property
    def model_changed(self) -> bool:
        """The data was embedded by another model: every vector must be re-embedded before use."""
        return self.meta is not None and not same_model(self.meta.get("model", {}), self.model)

    @property
    def stored_dim(self) -> int:
        """The width of the vectors in the tables as they are on disk (another model's, before a re-embedding)."""
        return int((self.meta or {}).get("model", {}).get("dim") or self.dim)

    @property
    def reembedding(self) -> dict[str, Any] | None:
        """The re-embedding in progress (`begin_reembed`), or None: {"from": the old model's identity, "total",
        "done": memories re-embedded in the order of the ids file, "facts": done, "phase": "convert"/"embed"}."""
        state = (self.meta or {}).get("reembed")
        return state if isinstance(state, dict) and not self.model_changed else None

    def begin_reembed(self, total: int) -> None:
        """Record that the data dir now belongs to the current model and its vectors are being made again (the
        tables are converted next: phase "convert", which a restart repeats until `note_reembed(phase="embed")`)."""
        old = (self.meta or {}).get("model", {})
        if self.meta is not None and self.meta.get("reembed") and not self.model_changed:
            old = self.meta["reembed"].get("from", old)
        self.meta = {
            **(self.meta or {"created_at": time.time()}),
            "schema_version": self.schema_version,
            "model": self.model,
            "reembed": {
                "from": old,
                "total": int(total),
                "done": 0,
                "facts": False,
                "phase": "convert",
                "started_at": time.time(),
            },
        }
        self._write_meta()

    def note_reembed(self, **state: Any) -> None:
        if self.meta is not None and isinstance(self.meta.get("reembed"), dict):
            self.meta["reembed"].update(state)
            self._write_meta()

    def end_reembed(self) -> None:
        if self.meta is not None and self.meta.pop("reembed", None) is not None:
            self._write_meta()

    @property
    def schema_version(self) -> int:
        return SCHEMA_VERSION if self.meta is None else int(self.meta.get("schema_version", 0))

    def tables(self) -> set[str]:
        return table_names(self.db)

    def open_or_create(self, name: str, schema: Any) -> Any:
        """A domain's table: opened when listed; else created, unless another sidecar (object store) has
        just created it (then opened: never written over). A table whose first start-up was killed inside
        create_table (listed, no version) is created again, on a local dir only: on an object store it may
        be another sidecar's create in progress."""
        if name in self.tables():
            try:
                return self.db.open_table(name)
            except (ValueError, RuntimeError, OSError):
                if self.shared is not None:
                    raise
                log.warning("table %s was left half-created; creating it again", name)
                return self.db.create_table(name, schema=schema, mode="overwrite")
        return self.db.create_table(name, schema=schema, exist_ok=True)

    def migrate(self, steps: dict[int, Callable[[], None]]) -> None:
        """Run the forward migrations from the stored schema version to SCHEMA_VERSION: steps[n] takes
        the data from version n to n + 1; meta.json records each step as it completes."""
        if self.meta is None:
            return
        version = self.schema_version
        while version < SCHEMA_VERSION:
            log.warning("migrating %s from schema version %d to %d", self.path, version, version + 1)
            step = steps.get(version)
            if step is not None:
                step()
            version += 1
            self.meta["schema_version"] = version
            self._write_meta()

    def commit_meta(self) -> None:
        """Record the current schema version and model: a new data dir is complete, or a re-embedding done."""
        self.meta = {
            **(self.meta or {"created_at": time.time()}),
            "schema_version": SCHEMA_VERSION,
            "model": self.model,
        }
        self._write_meta()

    def _write_meta(self) -> None:
        assert self.meta is not None  # (set by every caller)
        if self.shared is not None:
            try:
                self.shared.write_meta(self.meta)
            except SharedStoreError as exc:
                raise StoreError(str(exc)) from None
        else:
            write_json_atomic(self.local / META_FILE, self.meta)

    def disk_bytes(self) -> int:
        """Bytes of the LanceDB tables. On an object store that is a listing of every object, so one is
        reused for a refresh interval (hosts poll `stats`)."""
        if self.shared is None:
            return dir_bytes(self.local / LANCE_DIR)
        now = time.monotonic()
        if self._disk is None or now - self._disk[0] > self.shared.store.refresh_seconds:
            self._disk = (now, self.shared.total_bytes(LANCE_DIR))
        return self._disk[1]

    def close(self) -> None:
        if self.shared is not None:
            self.shared.close()
        else:
            self._file_lock.release()
