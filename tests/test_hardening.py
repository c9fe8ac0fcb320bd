"""Hardening: limits, privacy, isolation properties and the regressions the fuzzer found, against the
real process through real pipes."""

from __future__ import annotations

import os
import stat
import threading
import time

import pytest

from sidecar.protocol import MAX_TIMESTAMP


# ---------------------------------------------------------------- regressions found by fuzzing


def test_timestamp_beyond_year_9999_is_refused_and_history_renders(sidecar):
    # found by tests/test_hardening_fuzz.py: a store with timestamp 1e300 was acknowledged, and every
    # later history/context of that user failed with `internal` (OverflowError rendering the date)
    for ts in (1e300, MAX_TIMESTAMP + 1):
        r = sidecar.request({"type": "store", "user_id": "t", "content": "far future", "timestamp": ts})
        assert r["code"] == "invalid_request" and "timestamp" in r["message"], r
    sidecar.store("t", "the last second of year 9999", timestamp=MAX_TIMESTAMP, channel_id="c")
    h = sidecar.request({"type": "history", "user_id": "t"})
    assert h["block"] == "[recent history]\n[9999-12-31T23:59Z] t: the last second of year 9999", h
