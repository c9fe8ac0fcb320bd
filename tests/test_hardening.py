"""Hardening: limits, privacy, isolation properties and the regressions the fuzzer found, against the
real process through real pipes."""

from __future__ import annotations

import stat
import threading
import time

from conftest import linux_only, posix_only

from sidecar.wire import MAX_TIMESTAMP

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


@posix_only(
    "POSIX file modes (umask 077); Windows has no umask: a data dir inherits its folder's ACL, and the "
    "default one, %LOCALAPPDATA%, is the user's own"
)
def test_every_file_and_directory_under_the_data_dir_is_user_only(spawn, tmp_path):
    data_dir = tmp_path / "data"
    sc = spawn(
        "--compact-every-writes", "1", "--compact-interval-seconds", "0", "--compact-max-duty", "1", data_dir=data_dir
    )
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
    sc.request(
        {
            "type": "extract_inline",
            "user_id": "u",
            "reply": f'ok <memory category="preference">{secret} tag</memory><memory category="nope">{secret}</memory>',
        }
    )
    sc.request(
        {"type": "context", "user_id": "u", "text": secret, "history": {"user_id": "u"}, "channel": {"channel_id": "c"}}
    )
    # errors around content: too long, wrong types, broken JSON, an oversized line
    for bad in (
        {"type": "store", "user_id": "u", "content": secret * 20},
        {"type": "store", "user_id": ["u"], "content": secret},
        {"type": "store", "user_id": "u", "content": secret, "timestamp": "yesterday"},
        {"type": "query", "user_id": "u", "text": secret, "limit": 10_000},
    ):
        assert sc.request(bad)["type"] == "error"
    sc.send_raw(b'{"type":"store","user_id":"u","content":"' + secret.encode() + b'"\n')
    assert sc.recv()["code"] == "invalid_json"
    assert sc.shutdown() == 0
    log = sc.stderr()
    for needle in ("zebra-7f3a", "marshmallow", "Private Name"):
        assert needle not in log, log


# ---------------------------------------------------------------- limits


def _peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@linux_only("reads the peak RSS from /proc/<pid>/status")
def test_a_one_gigabyte_line_is_never_held_in_memory(sidecar):
    sidecar.store("u", "stored before the flood")
    before = _peak_rss_mib(sidecar.proc.pid)
    chunk = b"a" * (1 << 20)

    def flood() -> None:
        sidecar.send_raw(b'{"type":"store","user_id":"u","content":"')
        for _ in range(1024):
            sidecar.proc.stdin.write(chunk)
        sidecar.send_raw(b'"}\n{"type":"ping","request_id":"after"}\n')

    t0 = time.monotonic()
    writer = threading.Thread(target=flood)
    writer.start()
    r = sidecar.recv(300)
    assert r["code"] == "too_large" and "6065536" in r["message"] and "--max-line-bytes" in r["message"], r
    assert sidecar.recv(60) == {"type": "pong", "request_id": "after"}
    writer.join()
    growth = _peak_rss_mib(sidecar.proc.pid) - before
    print(f"1 GiB line skipped in {time.monotonic() - t0:.1f} s; peak RSS grew {growth:.1f} MiB")
    assert growth < 64, growth  # the cap is 6 MiB (a 1 MB content, escaped); the line was 1024 MiB
    res = sidecar.request({"type": "query", "user_id": "u", "text": "flood", "limit": 10})
    assert [m["content"] for m in res["messages"]] == ["stored before the flood"]


SMALL = {"limit": 1, "preferences_limit": 1, "relevant_limit": 1}
LIMIT_CASES = [
    ({"type": "store", "user_id": "u", "content": "x" * 51}, "too_large", "50"),
    ({"type": "store", "messages": [{"user_id": "u", "content": "x"}] * 4}, "too_large", "3"),
    (
        {"type": "store", "messages": [{"user_id": "u", "content": "x"}, {"user_id": "u", "content": "y" * 51}]},
        "too_large",
        "messages[1]",
    ),
    ({"type": "query", "user_id": "u", "text": "x", "limit": 5}, "too_large", "4"),
    ({"type": "query", "user_id": "u", "text": "x", "limit": 0}, "invalid_request", "limit"),
    ({"type": "facts", "user_id": "u", "limit": 5}, "too_large", "4"),
    ({"type": "recall", "users": {"a": None}, "limit": 5}, "too_large", "4"),
    ({"type": "recall", "users": {"a": None, "b": None, "c": None, "d": None}, "limit": 1}, "too_large", "--max-users"),
    ({"type": "context", "users": {"a": None, "b": None, "c": None, "d": None}, **SMALL}, "too_large", "--max-users"),
    ({"type": "context", "user_id": "u", "limit": 5}, "too_large", "4"),
    ({"type": "channel_context", "channel_id": "c", "limit": 6}, "too_large", "--max-window"),
    (
        {"type": "channel_context", "messages": [{"user_id": "u", "content": "x"}] * 6, "limit": 1},
        "too_large",
        "6 inline messages",
    ),
    ({"type": "channel_context", "messages": [{"user_id": "u", "content": "x" * 51}], "limit": 1}, "too_large", "50"),
    (
        {"type": "history", "user_id": "u", "full_count": 3, "mid_count": 3, "short_count": 0},
        "too_large",
        "--max-window",
    ),
    (
        {"type": "context", "user_id": "u", "history": {"user_id": "u", "full_count": 6}, **SMALL},
        "too_large",
        "--max-window",
    ),
]


def test_every_limit_is_an_error_and_the_process_goes_on(spawn):
    sc = spawn(
        "--max-content-chars",
        "50",
        "--max-batch",
        "3",
        "--max-users",
        "3",
        "--max-limit",
        "4",
        "--max-window",
        "5",
        "--max-line-bytes",
        "4096",
    )
    kept = sc.store("u", "x" * 50)  # exactly at the limit is fine
    for i, (req, code, needle) in enumerate(LIMIT_CASES):
        r = sc.request({**req, "request_id": i})
        assert (r["type"], r.get("code"), r.get("request_id")) == ("error", code, i), (req, r)
        assert needle in r["message"], (req, r)
    # the line cap is configurable and counts bytes, not characters
    sc.send_raw(b'{"type":"ping","pad":"' + "é".encode() * 2100 + b'"}\n')
    r = sc.recv()
    assert r["code"] == "too_large" and "4096" in r["message"], r
    assert sc.request({"type": "ping", "pad": "é" * 2000})["type"] == "pong"  # 4,000-odd bytes: under the cap
    res = sc.request({"type": "query", "user_id": "u", "text": "x", "limit": 4})
    assert [m["id"] for m in res["messages"]] == [kept]
    assert sc.shutdown() == 0
