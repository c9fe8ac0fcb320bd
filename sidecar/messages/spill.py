"""The vector cache's second tier: users evicted from memory, kept on local disk so that bringing one
back costs a file read, not a LanceDB read of rows scattered over the whole table.

Measured on 1,000,000 memories over 10,000 users (100 each, their rows spread over the table as they
arrived): reading one user's rows and vectors from LanceDB took 12 ms (in-process, p50), 9 ms of it
the scattered reads of the vector column, so a query for a user the memory cache had evicted took 7-11x
one for a cached user. An entry read back from here takes well under a millisecond.

Only ever a copy of what the table holds, made by this process: the folder is emptied when the store
opens and when it closes, every file is signed with a key this process drew at random (a file it did
not write, or one cut short, is a miss and is deleted), everything that changes a user's rows other
than new rows makes that user's file stale (never read again), and any delete removes every file, as it
drops the memory cache. Bounded by its own byte budget, stale files then the least recently evicted first
out. A disk that refuses a write only turns the spill off for that entry.

New rows for a user on disk (a chat host's store, then its query for the same user) do not make the file
stale: they are held in memory as the file's tail, all tails within `tail_budget` bytes, and applied to
the entry when it is read back. Without the tail, each such store sent the next query to the table (1,000
rows read and their keyword index rebuilt: hybrid p95 105 ms at 100k memories over 100 users,
docs/performance.md); bringing the user back on the store instead cost the store half again. Rows that
would take the tails past their budget make their user's file stale, as before; whatever makes a file
stale or removes it drops its tail.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import pickle
import shutil
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any

log = logging.getLogger("sidecar.store")

SUFFIX = ".entry"
DIGEST = 32  # bytes of the HMAC-SHA256 in front of each file


class Spill:
    """Files of evicted users. A file read back stays valid while its user's rows do not change (the entry
    in memory is then what the file holds; one that took its file's tail is written again when evicted),
    so a user going back and forth between memory and disk is written once; a changed user's file is only
    marked stale (removing a file cost about 1.3 ms on this VM's disk, a third of a query) and is overwritten by
    the next eviction or removed when the budget needs room, by `clear` and at close."""

    def __init__(self, directory: Path, budget_bytes: int, tail_budget: int = 0):
        self.dir = directory
        self.budget = budget_bytes
        self.tail_budget = tail_budget
        # user -> (rows, vectors, bytes) batches stored since the user's valid file was written, oldest first
        self._tails: dict[str, list[tuple[list[dict[str, Any]], Any, int]]] = {}
        self.tail_nbytes = 0  # in memory, all tails
        self._key = os.urandom(32)
        # user -> (bytes on disk, the entry's nbytes when written): files that, with their tails, hold the
        # user's current rows, least recently evicted first
        self._valid: OrderedDict[str, tuple[int, int]] = OrderedDict()
        self._stale: dict[str, int] = {}  # user -> bytes on disk: files never to be read again
        self.nbytes = 0  # both kinds
        self._warned = False
        shutil.rmtree(directory, ignore_errors=True)  # another process's files: never read
        directory.mkdir(parents=True, exist_ok=True)

    def _path(self, user_id: str) -> Path:
        return self.dir / (hashlib.sha256(user_id.encode()).hexdigest()[:40] + SUFFIX)

    def put(self, user_id: str, entry: Any) -> None:
        """Keep an entry evicted from memory: written unless its valid file already holds it."""
        self._drop_tail(user_id)  # none while the user is in memory: the entry holds every row
        held = self._valid.get(user_id)
        if held is not None and held[1] == entry.nbytes:
            self._valid.move_to_end(user_id)
            return
        data = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
        size = DIGEST + len(data)
        if size > self.budget:
            self.drop(user_id)
            return
        try:
            with open(self._path(user_id), "wb") as f:
                f.write(hmac.digest(self._key, data, "sha256"))
                f.write(data)
        except OSError as exc:
            self.drop(user_id)
            if not self._warned:
                log.warning(
                    "cache spill: cannot write to %s (%s); evicted users are read from the table",
                    self.dir,
                    exc.strerror or exc,
                )
                self._warned = True
            return
        self.nbytes -= held[0] if held is not None else self._stale.pop(user_id, 0)
        self._valid[user_id] = (size, entry.nbytes)
        self._valid.move_to_end(user_id)
        self.nbytes += size
        while self.nbytes > self.budget:
            self.drop(next(iter(self._stale)) if self._stale else next(iter(self._valid)))

    def load(self, user_id: str) -> Any | None:
        """The user's entry from a valid file (which stays valid) with the file's tail applied, or None."""
        if user_id not in self._valid:
            return None
        path = self._path(user_id)
        try:
            blob = path.read_bytes()
        except OSError:
            blob = b""
        digest, data = blob[:DIGEST], blob[DIGEST:]
        if len(digest) != DIGEST or not hmac.compare_digest(digest, hmac.digest(self._key, data, "sha256")):
            log.warning("cache spill: %s was not as written; reading the user from the table", path.name)
            self.drop(user_id)
            return None
        entry = pickle.loads(data)
        try:
            for rows, vectors, _ in self._drop_tail(user_id):
                entry.extend(rows, vectors)
        except BaseException:  # the tail is gone: the file alone would miss its rows
            self.drop(user_id)
            raise
        return entry

    def __contains__(self, user_id: str) -> bool:
        """The user has a valid file."""
        return user_id in self._valid

    def add(self, user_id: str, rows: list[dict[str, Any]], vectors: Any) -> None:
        """New rows of the user (an entry's `extend` arguments): the file's tail while it has room, else the
        file is stale."""
        if user_id not in self._valid:
            return
        size = vectors.nbytes + sum(sys.getsizeof(r) + sum(map(sys.getsizeof, r.values())) for r in rows)
        if self.tail_nbytes + size > self.tail_budget:
            self.invalidate(user_id)
            return
        self._tails.setdefault(user_id, []).append((rows, vectors, size))
        self.tail_nbytes += size

    def _drop_tail(self, user_id: str) -> list[tuple[list[dict[str, Any]], Any, int]]:
        batches = self._tails.pop(user_id, [])
        self.tail_nbytes -= sum(size for _, _, size in batches)
        return batches

    def invalidate(self, user_id: str) -> None:
        """The user's rows changed: their file is never read again."""
        self._drop_tail(user_id)
        held = self._valid.pop(user_id, None)
        if held is not None:
            self._stale[user_id] = held[0]

    def drop(self, user_id: str) -> None:
        """Remove the user's file, valid or stale."""
        self._drop_tail(user_id)
        held = self._valid.pop(user_id, None)
        size = held[0] if held is not None else self._stale.pop(user_id, None)
        if size is not None:
            self.nbytes -= size
            self._path(user_id).unlink(missing_ok=True)

    def clear(self) -> None:
        """Remove every file (any delete: no deleted text may stay on disk)."""
        for user_id in [*self._valid, *self._stale]:
            self.drop(user_id)

    def __len__(self) -> int:
        """Users with a valid file (one back in memory keeps it while unchanged)."""
        return len(self._valid)

    def close(self) -> None:
        self.clear()
        shutil.rmtree(self.dir, ignore_errors=True)
