"""The lease: one object (`<prefix>/lease.json`) that names the one sidecar, among all that opened an
object-store location, which runs compaction, cleanup and expiry, and (on a store that cannot refuse
a second write of one key) the only one that writes.

Expiry is measured by the contenders, never by comparing clocks of different machines: a contender
that sees the same lease object (same etag) unchanged for `ttl` seconds of its own monotonic clock
takes it over. The holder rewrites the object every `ttl / 3` seconds and considers itself the
holder only until `ttl * 3 / 4` after the start of its last successful write, so it stops before any
contender can start. Writes are conditional (`If-None-Match: *` to create, `If-Match: <etag>` to
renew or take over), and each one is read back, so a store that ignores the conditions still ends
with one holder (the last writer) within one renewal; see docs/portability.md, Scale out.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid

import orjson

from .objectstore import ObjectStoreError, PreconditionFailed, S3Client

log = logging.getLogger("sidecar.lease")

LEASE_OBJECT = "lease.json"


class Lease:
    def __init__(self, client: S3Client, key: str, ttl: float):
        self.client, self.key, self.ttl = client, key, ttl
        self.token = uuid.uuid4().hex
        self.name = f"{socket.gethostname()} pid {os.getpid()}"
        self._etag: str | None = None  # of our own lease object while we hold it
        self._valid_until = 0.0  # monotonic
        self._seen: tuple[str, float] | None = None  # (etag of another's lease, when first seen unchanged)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.holder_name: str | None = None  # who holds it, as last read

    def held(self) -> bool:
        return time.monotonic() < self._valid_until

    def _body(self) -> bytes:
        return orjson.dumps(
            {"holder": self.name, "token": self.token, "ttl_seconds": self.ttl, "written_at": time.time()}
        )

    def _read(self) -> tuple[dict, str] | None:
        got = self.client.get(self.key)
        if got is None:
            return None
        body, etag = got
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            obj = {}
        return (obj if isinstance(obj, dict) else {}), etag

    def _write(self, if_none_match: bool = False, if_match: str | None = None) -> bool:
        """One conditional write, read back; True when the object on the store is ours."""
        started = time.monotonic()
        try:
            self.client.put(self.key, self._body(), if_none_match=if_none_match, if_match=if_match)
        except PreconditionFailed:
            return False
        current = self._read()
        if current is None or current[0].get("token") != self.token:
            return False
        self._etag, self._valid_until = current[1], started + self.ttl * 0.75
        self.holder_name = self.name
        return True

    def step(self) -> bool:
        """Renew the lease, or take it when it is free or expired. Returns whether we hold it."""
        with self._lock:
            before = self.held()
            try:
                now_held = self._step()
            except ObjectStoreError as exc:
                log.warning("lease %s: %s", self.key, exc)
                now_held = self.held()  # still ours until it runs out
            if now_held != before:
                log.warning(
                    "lease: this sidecar %s the maintenance lease%s",
                    "now holds" if now_held else "lost",
                    "" if now_held else f" (holder: {self.holder_name})",
                )
            return now_held

    def _step(self) -> bool:
        current = self._read()
        if current is None:
            self._seen = None
            return self._write(if_none_match=True)
        obj, etag = current
        if obj.get("token") == self.token:
            return self._write(if_match=etag)
        self._valid_until = 0.0
        self.holder_name = str(obj.get("holder", "another sidecar"))
        now = time.monotonic()
        if self._seen is None or self._seen[0] != etag:
            self._seen = (etag, now)
            return False
        ttl = float(obj.get("ttl_seconds", self.ttl)) if isinstance(obj.get("ttl_seconds"), (int, float)) else self.ttl
        if now - self._seen[1] < max(ttl, self.ttl):
            return False
        log.warning("lease: %s has not renewed for %.0f s; taking over", self.holder_name, now - self._seen[1])
        self._seen = None
        return self._write(if_match=etag)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="lease", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            self.step()

    def release(self) -> None:
        """Stop renewing; delete the object if it is still ours, so another sidecar takes over at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.client.timeout + 1)
        with self._lock:
            if not self.held():
                return
            self._valid_until = 0.0
            try:
                current = self._read()
                if current is not None and current[0].get("token") == self.token:
                    self.client.delete(self.key)
            except ObjectStoreError as exc:
                log.warning(
                    "lease %s not released (%s); another sidecar takes it after %.0f s", self.key, exc, self.ttl
                )
