"""Long memories, end to end over the pipe: a memory past the model's 256-token window is embedded whole,
in overlapping chunks (sidecar/messages/chunks.py), ranked by its best chunk, returned once with that
chunk's span, and every chunk leaves with the memory (delete, forget_user, expiry). Also: the 1 MB content
limit, other users served while a 1 MB memory is stored, and the migration of a schema-4 store."""

from __future__ import annotations

import random
import shutil
import statistics
import time

import orjson
import pytest

from sidecar.storage import SCHEMA_VERSION

DAY = 86_400
FACT = "My grandmother's secret lasagna recipe uses freshly grated nutmeg in the bechamel sauce."
QUESTION = "What spice goes into grandmother's lasagna sauce?"
FILLER_WORDS = (
    "the train was late again so we talked about the weather the garden the river the "
    "old bridge the library and the long walk home through the quiet streets"
).split()


def filler(chars: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    words: list[str] = []
    size = 0
    while size < chars:
        w = rng.choice(FILLER_WORDS)
        words.append(w)
        size += len(w) + 1
    return " ".join(words)[:chars]


def long_memory(chars: int = 20_000, fact: str = FACT, seed: int = 0) -> str:
    """A memory whose only mention of the fact is its last sentence."""
    return filler(chars - len(fact) - 1, seed) + " " + fact


def chunk_stats(sc) -> dict[str, int]:
    return sc.request({"type": "stats"})["chunks"]


def wait_chunked(sc, timeout: float = 120.0) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while True:
        stats = chunk_stats(sc)
        if stats["pending"] == 0:
            return stats
        assert time.monotonic() < deadline, stats
        time.sleep(0.2)


def store_distractors(sc, user: str) -> None:
    for text in (
        "I like cooking pasta on Sundays",
        "My dog barks at the mail carrier",
        "We visited Rome last year and loved the food",
        "The museum in Istanbul was closed on Monday",
        "Grandma always knitted scarves for the whole family",
    ):
        sc.store(user, text)


@pytest.mark.parametrize("flags", [(), ("--cache-mb", "0")], ids=["cached", "from-the-tables"])
def test_a_fact_at_the_end_of_a_long_memory_is_found_at_rank_1_with_its_span(spawn, flags):
    sidecar = spawn(*flags)
    store_distractors(sidecar, "u")
    content = long_memory()
    rid = sidecar.store("u", content)
    stats = wait_chunked(sidecar)
    assert stats["vectors"] >= 20, stats  # about 4,000 tokens in windows of 200, 50 shared
    for mode in ("semantic", "hybrid"):
        res = sidecar.request({"type": "query", "user_id": "u", "text": QUESTION, "mode": mode, "limit": 5})
        ids = [m["id"] for m in res["messages"]]
        assert ids[0] == rid, (mode, [m["content"][:40] for m in res["messages"]])
        assert ids.count(rid) == 1  # the memory once, however many chunks it has
        top = res["messages"][0]
        assert top["content"] == content  # the whole text, as stored
        start, end = top["span"]
        assert 0 <= start < end == len(content) and end - start < 2_000, top["span"]
        assert "nutmeg" in content[start:end]
        assert all("span" not in m for m in res["messages"][1:])  # short memories carry none
    res = sidecar.request({"type": "query", "user_id": "u", "text": "nutmeg bechamel", "mode": "keyword"})
    assert [m["id"] for m in res["messages"]] == [rid]  # keyword search sees the whole text


def test_delete_forget_and_expiry_remove_every_chunk(sidecar):
    old = time.time() - 40 * DAY
    a = sidecar.store("a", long_memory(seed=1))
    sidecar.store(
        "a", long_memory(8_000, "I keep my bicycle in the blue shed behind the house.", seed=2), timestamp=old
    )
    sidecar.store("b", long_memory(6_000, "My sister Mira lives in Porto near the river.", seed=3))
    sidecar.store("b", "a short memory has no chunks")
    total = wait_chunked(sidecar)["vectors"]
    assert total > 0

    assert sidecar.request({"type": "delete", "id": a})["deleted"] == 1
    after_delete = chunk_stats(sidecar)["vectors"]
    assert 0 < after_delete < total
    res = sidecar.request({"type": "query", "user_id": "a", "text": QUESTION, "mode": "semantic", "limit": 5})
    assert a not in [m["id"] for m in res["messages"]]

    assert sidecar.request({"type": "cleanup", "ttl_days": 30})["deleted"] == 1  # the old bicycle memory
    after_expiry = chunk_stats(sidecar)["vectors"]
    assert 0 < after_expiry < after_delete
    assert sidecar.request({"type": "query", "user_id": "a", "text": "where is the bicycle?"})["messages"] == []

    forgot = sidecar.request({"type": "forget_user", "user_id": "b"})
    assert forgot["deleted"] == 2 and forgot["removed"]["chunks"] == after_expiry, forgot  # b's are all that is left
    assert chunk_stats(sidecar) == {"vectors": 0, "pending": 0}


def test_a_deleted_memory_leaves_no_chunk_even_mid_embedding(sidecar):
    rid = sidecar.store("u", long_memory(200_000, seed=4))  # about 40k tokens: seconds of chunking
    assert sidecar.request({"type": "delete", "id": rid})["deleted"] == 1
    assert wait_chunked(sidecar, 30) == {"vectors": 0, "pending": 0}
    time.sleep(1.0)  # a run in flight when the delete came has finished by now
    assert chunk_stats(sidecar) == {"vectors": 0, "pending": 0}


def test_content_limit_is_one_megabyte_of_utf8(sidecar):
    r = sidecar.request({"type": "store", "user_id": "u", "content": "x" * 1_000_001})
    assert r["code"] == "too_large", r
    assert "1000000" in r["message"] and "--max-content-bytes" in r["message"], r
    r = sidecar.request({"type": "store", "user_id": "u", "content": "é" * 500_001})  # 500k characters, 1 MB+
    assert r["code"] == "too_large" and "1000002 bytes" in r["message"], r
    r = sidecar.request(
        {"type": "store", "messages": [{"user_id": "u", "content": "ok"}, {"user_id": "u", "content": "y" * 1_000_001}]}
    )
    assert r["code"] == "too_large" and r["message"].startswith("messages[1]"), r
    assert sidecar.request({"type": "stats"})["memories"] == 0


def test_a_one_megabyte_memory_does_not_hold_up_other_users(spawn):
    sc = spawn()
    store_distractors(sc, "other")
    sc.request({"type": "query", "user_id": "other", "text": "warm up", "limit": 3})
    big = long_memory(1_000_000, seed=5)
    assert len(big.encode()) == 1_000_000  # exactly at the limit
    sc.send({"type": "store", "user_id": "big", "content": big, "request_id": "big"})
    latencies, overlapped = [], 0
    for i in range(40):
        kind = (
            {"type": "query", "user_id": "other", "text": "what did I cook?", "limit": 3}
            if i % 2
            else {"type": "store", "user_id": "other", "content": f"small note number {i}"}
        )
        t0 = time.perf_counter()
        r = sc.request({**kind, "request_id": i})
        if i == 0:  # the big store was ahead of it, in order
            assert r["request_id"] == "big" and r["type"] == "ok", r
            r = sc.recv()
        latencies.append(time.perf_counter() - t0)
        assert r["request_id"] == i and r["type"] in ("ok", "results"), r
        if i % 8 == 7:
            overlapped += chunk_stats(sc)["pending"]
        time.sleep(0.05)
    print(
        f"other user's requests during a 1 MB store: first (behind the store) {latencies[0] * 1000:.0f} ms, "
        f"median {statistics.median(latencies) * 1000:.0f} ms, max of the rest {max(latencies[1:]) * 1000:.0f} ms"
    )
    assert overlapped == 5, "the 1 MB memory was still being chunked during these requests"
    # Embedding 1 MB (about 1,700 windows of 200 tokens) takes a minute here; a store that did it on the request
    # path would hold the next request that long, and one that embedded in slices between requests would add
    # a slice to each. The goal is 100 ms (measured on a quiet machine: docs/performance.md); these bounds
    # leave room for a machine loaded several times over, as the shared test machines are.
    assert latencies[0] < 3.0, latencies[0]
    assert statistics.median(latencies) < 0.5, [round(x * 1000) for x in latencies]
    assert max(latencies[1:]) < 3.0, [round(x * 1000) for x in latencies]

    # shut down mid-chunking: the memory stays pending, is chunked again from the start at the next
    # start-up, and is searchable meanwhile (keyword over its whole text, semantic by its first window)
    assert sc.shutdown() == 0
    sc2 = spawn()
    assert chunk_stats(sc2) == {"vectors": 0, "pending": 1}
    res = sc2.request({"type": "query", "user_id": "big", "text": "train late weather", "mode": "keyword"})
    [found] = res["messages"]
    assert found["content"] == big and "span" not in found
    # deleting it mid-chunking stops the work and leaves nothing behind
    assert sc2.request({"type": "delete", "id": found["id"]})["deleted"] == 1
    assert chunk_stats(sc2) == {"vectors": 0, "pending": 0}
    time.sleep(2.0)  # the window in flight when the delete came is done by now
    assert chunk_stats(sc2) == {"vectors": 0, "pending": 0}
    assert not (sc2.data_dir / "chunks.pending").read_bytes()
    # the chunker takes one memory at a time: a new one is chunked promptly only if the deleted 1 MB job
    # (about a minute of windows left) really stopped
    sc2.store("next", long_memory(6_000, seed=6))
    assert wait_chunked(sc2, 15)["vectors"] > 0


def _downgrade_to_schema_4(data_dir) -> None:
    """What a data dir of schema 4 held: no chunks table, no pending list, schema_version 4."""
    shutil.rmtree(data_dir / "lancedb" / "chunks.lance")
    (data_dir / "chunks.pending").unlink()
    meta = orjson.loads((data_dir / "meta.json").read_bytes())
    meta["schema_version"] = 4
    (data_dir / "meta.json").write_bytes(orjson.dumps(meta))


def test_a_schema_4_store_migrates_and_chunks_its_long_memories(spawn, tmp_path):
    sc = spawn(data_dir=tmp_path / "old")
    store_distractors(sc, "u")
    rid = sc.store("u", long_memory())
    wait_chunked(sc)
    assert sc.shutdown() == 0
    _downgrade_to_schema_4(tmp_path / "old")

    sc = spawn(data_dir=tmp_path / "old")
    stats = wait_chunked(sc)
    assert stats["vectors"] >= 20
    assert sc.request({"type": "stats"})["schema_version"] == SCHEMA_VERSION
    res = sc.request({"type": "query", "user_id": "u", "text": QUESTION, "mode": "semantic"})
    assert (
        res["messages"][0]["id"] == rid
        and "nutmeg" in res["messages"][0]["content"][slice(*res["messages"][0]["span"])]
    )
    assert sc.shutdown() == 0


def test_export_and_import_keep_a_long_memory_searchable_by_its_end(spawn, tmp_path):
    sc = spawn(data_dir=tmp_path / "one")
    store_distractors(sc, "u")
    rid = sc.store("u", long_memory())
    out = tmp_path / "u.jsonl.gz"
    assert sc.request({"type": "export", "out": str(out)}, 120)["messages"] == 6
    assert sc.shutdown() == 0

    sc2 = spawn(data_dir=tmp_path / "two")
    r = sc2.request({"type": "import", "path": str(out)}, 120)
    assert r["type"] == "imported", r
    wait_chunked(sc2)  # chunk vectors are not exported: the import chunks long memories again
    res = sc2.request({"type": "query", "user_id": "u", "text": QUESTION, "mode": "semantic"})
    assert res["messages"][0]["id"] == rid and "span" in res["messages"][0]
    assert sc2.shutdown() == 0
