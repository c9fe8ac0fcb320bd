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


# ---------------------------------------------------------------- privacy


def test_every_file_and_directory_under_the_data_dir_is_user_only(spawn, tmp_path):
    data_dir = tmp_path / "data"
    sc = spawn("--compact-every-writes", "1", "--compact-interval-seconds", "0", data_dir=data_dir)
    sc.store("u", "a private memory")
    sc.request({"type": "remember", "user_id": "u", "text": "Likes privacy", "category": "preference"})
    sc.request({"type": "forget_user", "user_id": "nobody"})  # a compaction, new index files
    assert sc.shutdown() == 0
    checked = 0
    for path in [data_dir, *data_dir.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
        checked += 1
    assert checked > 20  # LanceDB's own files (manifests, data, indexes) are covered


def test_no_memory_content_in_logs_at_the_default_level(spawn):
    secret = "zebra-7f3a marshmallow confession"
    sc = spawn("--max-content-chars", "200")
    sc.store("u", f"{secret} one", username="Private Name", channel_id="c", message_id="1")
    sc.request({"type": "query", "user_id": "u", "text": secret})
    sc.request({"type": "remember", "user_id": "u", "text": f"Fact: {secret}", "category": "preference"})
    sc.request({"type": "extract_inline", "user_id": "u",
                "reply": f"ok <memory category=\"preference\">{secret} tag</memory><memory category=\"nope\">{secret}</memory>"})
    sc.request({"type": "context", "user_id": "u", "text": secret, "history": {"user_id": "u"},
                "channel": {"channel_id": "c"}})
    # errors around content: too long, wrong types, broken JSON, an oversized line
    for bad in ({"type": "store", "user_id": "u", "content": secret * 20},
                {"type": "store", "user_id": ["u"], "content": secret},
                {"type": "store", "user_id": "u", "content": secret, "timestamp": "yesterday"},
                {"type": "query", "user_id": "u", "text": secret, "limit": 10_000}):
        assert sc.request(bad)["type"] == "error"
    sc.send_raw(b'{"type":"store","user_id":"u","content":"' + secret.encode() + b'"\n')
    assert sc.recv()["code"] == "invalid_json"
    assert sc.shutdown() == 0
    log = sc.stderr()
    for needle in ("zebra-7f3a", "marshmallow", "Private Name"):
        assert needle not in log, log
