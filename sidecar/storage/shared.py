"""A data dir in an object store, shared by several sidecars: checked before anything is opened,
meta.json as an object, the lease, and whether this sidecar may write.

Writers: LanceDB commits a version by writing its manifest with `If-None-Match: *`; a store that
honours it refuses the second of two concurrent commits, and LanceDB retries that one on top of the
first (measured on moto: two connections, 2 x 40 concurrent single-row adds, 80 rows, none lost). So
`writers=auto` probes the store once at start-up: when it refuses a second conditional write, every
sidecar writes; when it does not, only the lease holder writes and the others serve read-only.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson

from .lease import LEASE_OBJECT, Lease
from .objectstore import (
    ObjectLocation,
    ObjectStoreError,
    ObjectStoreSettings,
    S3Client,
    access_problem,
    check_access,
    conditional_put_works,
)

log = logging.getLogger("sidecar.storage")


class SharedStoreError(RuntimeError):
    pass


@dataclass(frozen=True)
class SharedStore:
    """Where and how to open an object-store data dir (from the configuration)."""

    location: ObjectLocation
    settings: ObjectStoreSettings = field(repr=False)
    refresh_seconds: float = 2.0  # a write acknowledged elsewhere is visible here within this
    lease_seconds: float = 15.0
    writers: str = "auto"  # auto: probe conditional writes; many: every sidecar writes; one: the lease holder only

    def __str__(self) -> str:
        return str(self.location)


class SharedAccess:
    """Open: the endpoint answers, the bucket exists, the credentials work (else SharedStoreError
    with what to do, before anything is read or written), then the writer mode and the lease."""

    def __init__(self, store: SharedStore):
        self.store = store
        self.location = store.location
        try:
            self.client = S3Client(store.settings, store.location.bucket)  # obstore missing: what to install
            check_access(self.client, self.location)
        except (ValueError, ObjectStoreError) as exc:
            raise SharedStoreError(str(exc)) from None
        try:
            if store.writers == "auto":
                self.concurrent = conditional_put_works(self.client, self.location, uuid.uuid4().hex)
                if not self.concurrent:
                    log.warning(
                        "%s: the store does not refuse a second conditional write (If-None-Match), so "
                        "LanceDB cannot commit safely from several sidecars: only the lease holder writes",
                        self.location,
                    )
            else:
                self.concurrent = store.writers == "many"
            self.lease = Lease(self.client, self.location.key(LEASE_OBJECT), store.lease_seconds)
            self.lease.step()
        except ObjectStoreError as exc:
            raise SharedStoreError(access_problem(exc, self.location, store.settings)) from None
        self.lease.start()
        if (reason := self.read_only_reason()) is not None:
            log.warning("%s", reason)

    def maintains(self) -> bool:
        """Whether this sidecar runs compaction, cleanup and expiry now (it holds the lease)."""
        return self.lease.held()

    def read_only_reason(self) -> str | None:
        """None when this sidecar may write now; else why not, as a sentence for the host."""
        if self.concurrent or self.lease.held():
            return None
        return (
            f"this sidecar serves {self.location} read-only: the store cannot guarantee safe concurrent "
            f"commits, so only the lease holder ({self.lease.holder_name or 'another sidecar'}) writes; send "
            f"writes to it (this sidecar takes over if it stops renewing the lease for {self.lease.ttl:.0f} s)"
        )

    def read_meta(self) -> dict[str, Any] | None:
        try:
            got = self.client.get(self.location.key("meta.json"))
        except ObjectStoreError as exc:
            raise SharedStoreError(access_problem(exc, self.location, self.store.settings)) from None
        if got is None:
            return None
        try:
            return orjson.loads(got[0])
        except orjson.JSONDecodeError as exc:
            raise SharedStoreError(
                f"{self.location}/meta.json is unreadable ({exc}); restore it from a backup"
            ) from None

    def write_meta(self, meta: dict[str, Any]) -> None:
        try:
            self.client.put(self.location.key("meta.json"), orjson.dumps(meta, option=orjson.OPT_INDENT_2))
        except ObjectStoreError as exc:
            raise SharedStoreError(f"cannot write {self.location}/meta.json: {exc}") from None

    def total_bytes(self, name: str) -> int:
        """Bytes of every object under `<prefix>/<name>/`."""
        return sum(self.client.sizes(self.location.key(name)))

    def close(self) -> None:
        self.lease.release()
