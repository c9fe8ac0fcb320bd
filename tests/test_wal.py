"""The write-ahead log: `store` is acknowledged once its rows are logged, and nothing logged is lost
or doubled, whatever moment the process dies at.

The record format is tested as pure logic; recovery with the real MessageStore on a real LanceDB
dir (synthetic unit vectors: the store never looks at where vectors come from); the kill with the
real process.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from helpers import DIM, MODEL, table_rows

from sidecar.messages.store import WAL_DIR, MessageStore
from sidecar.messages.wal import WriteAheadLog, decode_records, encode_record


def _contents(store: MessageStore) -> list[str]:
    return sorted(r["content"] for r in store.rows("true"))


# ---------------------------------------------------------------- record format (pure)


def test_records_round_trip_and_a_damaged_or_cut_record_ends_the_segment():
    a, va = table_rows(2, "u", "a")
    b, vb = table_rows(3, "u", "b")
    c, vc = table_rows(1, "u", "c")
    data = encode_record(a, va) + encode_record(b, vb) + encode_record(c, vc)
    got = list(decode_records(data, DIM))
    assert [r for r, _ in got] == [a, b, c]
    assert np.array_equal(got[1][1], vb)

    cut = data[:-5]  # the last write never completed
    assert [r for r, _ in decode_records(cut, DIM)] == [a, b]
    flipped = bytearray(data)
    flipped[len(encode_record(a, va)) + 40] ^= 0xFF  # a bit flipped inside the second record
    assert [r for r, _ in decode_records(bytes(flipped), DIM)] == [a]


# ---------------------------------------------------------------- recovery (real LanceDB)


def test_rows_logged_by_a_process_that_died_are_committed_at_the_next_open(tmp_path):
    store = MessageStore(tmp_path, MODEL)
    store.close()
    rows, vectors = table_rows(5, "u", "note")
    wal = WriteAheadLog(tmp_path / WAL_DIR, DIM)  # what a killed sidecar leaves: logged, never committed
    wal.append(rows[:3], vectors[:3])
    wal.append(rows[3:], vectors[3:])
    wal.close()
    with open(next((tmp_path / WAL_DIR).iterdir()), "ab") as f:
        f.write(b"\x07\x00\x00")  # plus a record cut short by the kill (never acknowledged)

    store = MessageStore(tmp_path, MODEL)
    try:
        assert _contents(store) == sorted(r["content"] for r in rows)
        assert list((tmp_path / WAL_DIR).iterdir()) == []  # committed, so the log is dropped
        hits = store.search(vectors[4], "u", 1)
        assert hits[0]["id"] == rows[4]["id"] and abs(hits[0]["similarity"] - 1.0) < 1e-3
    finally:
        store.close()


def test_a_segment_whose_rows_were_already_committed_does_not_double_them(tmp_path):
    rows, vectors = table_rows(4, "u", "note")
    store = MessageStore(tmp_path, MODEL)
    store.add(rows, vectors)
    store.flush()
    store.close()
    # killed after LanceDB committed but before the segment was deleted: same rows still logged
    wal = WriteAheadLog(tmp_path / WAL_DIR, DIM)
    wal.append(rows, vectors)
    wal.close()
    store = MessageStore(tmp_path, MODEL)
    try:
        assert store.count() == 4
        assert _contents(store) == sorted(r["content"] for r in rows)
    finally:
        store.close()


def test_every_read_sees_rows_the_flusher_has_not_committed_yet(tmp_path):
    store = MessageStore(tmp_path, MODEL, cache_bytes=0)  # no cache: reads go to the table
    try:
        for i in range(30):
            rows, vectors = table_rows(1, f"user{i % 3}", f"m{i}")
            store.add(rows, vectors)
            assert store.count() == i + 1
            assert store.rows(f"id = '{rows[0]['id']}'")[0]["content"] == f"m{i} 0"
            assert store.search(vectors[0], f"user{i % 3}", 1)[0]["id"] == rows[0]["id"]
        assert store.delete("user_id = 'user0'") == 10
        assert store.count() == 20
    finally:
        store.close()
    assert list((tmp_path / WAL_DIR).iterdir()) == []  # a clean close leaves nothing to replay


# ---------------------------------------------------------------- the real process


def test_sigkill_right_after_pipelined_acks_loses_and_doubles_nothing(spawn, tmp_path):
    sc = spawn()
    n = 150
    for i in range(n):
        sc.send({"type": "store", "user_id": f"k{i % 5}", "content": f"kill test memory number {i}"})
    ids = [sc.recv() for _ in range(n)]
    assert all(r["type"] == "ok" for r in ids)
    sc.kill()  # the acknowledged rows may still be only in the log

    sc = spawn()
    assert sc.ready["memories"] == n
    assert list((Path(sc.data_dir) / WAL_DIR).iterdir()) == []
    for u in range(5):
        res = sc.request({"type": "query", "user_id": f"k{u}", "text": "kill test memory", "limit": 100})
        assert {m["id"] for m in res["messages"]} == {r["id"] for i, r in enumerate(ids) if i % 5 == u}
    assert sc.shutdown() == 0


def test_the_flusher_commits_logged_rows_without_any_read(tmp_path):
    # README: logged rows reach LanceDB within about a second even if nothing reads them
    store = MessageStore(tmp_path, MODEL)
    try:
        rows, vectors = table_rows(3, "u", "note")
        store.add(rows, vectors)
        deadline = time.monotonic() + 10
        while store.table.count_rows() < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.table.count_rows() == 3  # read straight from the table: no commit forced
        while any(p.stat().st_size for p in (tmp_path / WAL_DIR).iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [p for p in (tmp_path / WAL_DIR).iterdir() if p.stat().st_size] == []  # its segment dropped
    finally:
        store.close()


# ---------------------------------------------------------------- background deletes (expiry)


def test_background_expiry_deletes_in_slices_that_let_requests_through(tmp_path, monkeypatch):
    """Regression (2026-11-24): the automatic expiry of a month of memories held the store's lock for the
    whole delete, and dropped every user's cache entry: requests waited about a minute per batch at 100k
    expired rows. Now each slice lets requests through, and users it did not touch stay cached."""
    import threading

    from sidecar.messages import store as store_mod

    monkeypatch.setattr(store_mod, "DELETE_SLICE", 10)
    store = MessageStore(tmp_path, MODEL)
    try:
        old, v_old = table_rows(35, "old-user", "stale")
        for r in old:
            r["timestamp"] = 1.0e9
        keep, v_keep = table_rows(5, "old-user", "fresh")
        other, v_other = table_rows(5, "other-user", "other")
        for rows, v in ((old, v_old), (keep, v_keep), (other, v_other)):
            store.add(rows, v)
        store.flush()
        store.search(v_other[0], "other-user", 3)  # cached
        slices, answered = [], []

        def on_gone(ids):
            slices.append(len(ids))
            reader = threading.Thread(target=lambda: answered.append(store.search(v_keep[0], "old-user", 50)))
            reader.start()
            reader.join(10)  # a request between slices: not held up by the rest of the delete
            assert not reader.is_alive()

        assert store.delete("timestamp < 1500000000", exclusive=False, on_gone=on_gone) == 35
        assert slices == [10, 10, 10, 5]
        # each answer between slices already lacks the slices deleted so far
        assert [sum(r["content"].startswith("stale") for r in a) for a in answered] == [25, 15, 5, 0]
        assert store.cache.get("other-user") is not None  # untouched by the expiry: still cached
        assert _contents(store) == sorted(r["content"] for r in keep + other)
    finally:
        store.close()


# ---------------------------------------------------------------- a row the store refuses at run time (pure logic)


def _refusing_log(tmp_path, refuse):
    """A CommitLog on a real write-ahead log whose commit refuses the batches `refuse(rows)` says to."""
    from sidecar.messages.commit_log import CommitLog

    committed: list[str] = []

    def commit(rows, vectors):
        if refuse(rows):
            raise RuntimeError("LanceDB refused the batch")
        committed.extend(r["content"] for r in rows)

    return CommitLog(WriteAheadLog(tmp_path / WAL_DIR, DIM), commit), committed


def test_a_row_refused_again_and_again_is_set_aside_once_the_rest_of_its_batch_commits(tmp_path):
    import pytest

    from sidecar.messages.commit_log import ISOLATE_AFTER
    from sidecar.storage import StoreError

    log_, committed = _refusing_log(tmp_path, lambda rows: any(r["content"] == "note 2" for r in rows))
    rows, vectors = table_rows(5, "u", "note")
    log_.append(rows, vectors)
    for _ in range(ISOLATE_AFTER - 1):  # refusals are retried as they come: the store may be briefly full
        with pytest.raises(StoreError):
            log_.flush()
        assert committed == [] and log_.logged("u")
    log_.flush()  # then the batch is committed in halves and the row at fault set aside
    assert sorted(committed) == sorted(r["content"] for r in rows if r["content"] != "note 2")
    assert not log_.logged("u")
    assert [r for path in log_.wal.segments() for rs, _ in log_.wal.read(path) for r in rs] == []  # log dropped
    aside = list((tmp_path / "quarantine").glob("*.jsonl"))
    assert len(aside) == 1 and log_.quarantined == 1
    line = aside[0].read_text()
    assert '"note 2"' in line and "LanceDB refused" in line
    log_.close()


def test_a_store_that_refuses_every_write_keeps_every_row_logged(tmp_path):
    import pytest

    from sidecar.messages.commit_log import ISOLATE_AFTER
    from sidecar.storage import StoreError

    log_, committed = _refusing_log(tmp_path, lambda rows: True)  # a full disk: nothing commits
    rows, vectors = table_rows(4, "u", "note")
    log_.append(rows, vectors)
    for _ in range(ISOLATE_AFTER + 2):
        with pytest.raises(StoreError):
            log_.flush()
    assert committed == [] and log_.logged("u") and log_.quarantined == 0
    assert not (tmp_path / "quarantine").exists()
    log_.wal.close()
    replayed = [
        r["content"]
        for path in WriteAheadLog(tmp_path / WAL_DIR, DIM).segments()
        for rs, _ in WriteAheadLog(tmp_path / WAL_DIR, DIM).read(path)
        for r in rs
    ]
    assert sorted(replayed) == sorted(r["content"] for r in rows)  # still there for the next start
