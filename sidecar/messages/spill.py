"""The vector cache's second tier: users evicted from memory, kept on local disk so that bringing one
back costs a file read, not a LanceDB read of rows scattered over the whole table.

Measured on 1,000,000 memories over 10,000 users (100 each, their rows spread over the table as they
arrived): reading one user's rows and vectors from LanceDB took 12 ms (in-process, p50), 9 ms of it
the scattered reads of the vector column, so a query for a user the memory cache had evicted took 7-11x
one for a cached user. An entry read back from here takes well under a millisecond.

Only ever a copy of what the table holds, made by this process: the folder is emptied when the store
opens and when it closes, every file is signed with a key this process drew at random (a file it did
not write, or one cut short, is a miss and is deleted), and everything that changes a user's rows
drops that user's file (any delete drops them all, as it drops the memory cache). Bounded by its own
byte budget, least recently spilled first out. A disk that refuses a write only turns the spill off
for that entry.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import pickle
import shutil
from collections import OrderedDict
from pathlib import Path
from typing import Any

log = logging.getLogger("sidecar.store")

SUFFIX = ".entry"
DIGEST = 32  # bytes of the HMAC-SHA256 in front of each file


class Spill:
    def __init__(self, directory: Path, budget_bytes: int):
        self.dir = directory
        self.budget = budget_bytes
        self._key = os.urandom(32)
        self._sizes: "OrderedDict[str, int]" = OrderedDict()  # user -> bytes on disk, oldest spilled first
        self.nbytes = 0
        self._warned = False
        shutil.rmtree(directory, ignore_errors=True)  # another process's files: never read
        directory.mkdir(parents=True, exist_ok=True)

    def _path(self, user_id: str) -> Path:
        return self.dir / (hashlib.sha256(user_id.encode()).hexdigest()[:40] + SUFFIX)

    def put(self, user_id: str, entry: Any) -> None:
        """Keep an entry evicted from memory (replacing any older file of the user)."""
        self.discard(user_id)
        data = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
        size = DIGEST + len(data)
        if size > self.budget:
            return
        try:
            with open(self._path(user_id), "wb") as f:
                f.write(hmac.digest(self._key, data, "sha256"))
                f.write(data)
        except OSError as exc:
            self._path(user_id).unlink(missing_ok=True)
            if not self._warned:
                log.warning("cache spill: cannot write to %s (%s); evicted users are read from the table", self.dir,
                            exc.strerror or exc)
                self._warned = True
            return
        self._sizes[user_id] = size
        self.nbytes += size
        while self.nbytes > self.budget:
            self.discard(next(iter(self._sizes)))

    def take(self, user_id: str) -> Any | None:
        """The user's entry (its file removed: it goes back to memory), or None."""
        if self._sizes.pop(user_id, None) is None:
            return None
        path = self._path(user_id)
        try:
            blob = path.read_bytes()
        except OSError:
            blob = b""
        finally:
            path.unlink(missing_ok=True)
        self.nbytes = sum(self._sizes.values())
        digest, data = blob[:DIGEST], blob[DIGEST:]
        if len(digest) != DIGEST or not hmac.compare_digest(digest, hmac.digest(self._key, data, "sha256")):
            log.warning("cache spill: %s was not as written; reading the user from the table", path.name)
            return None
        return pickle.loads(data)

    def discard(self, user_id: str) -> None:
        size = self._sizes.pop(user_id, None)
        if size is not None:
            self.nbytes -= size
            self._path(user_id).unlink(missing_ok=True)

    def clear(self) -> None:
        for user_id in list(self._sizes):
            self.discard(user_id)
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self._sizes)

    def close(self) -> None:
        self.clear()
        shutil.rmtree(self.dir, ignore_errors=True)
