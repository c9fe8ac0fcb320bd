"""The vector cache's spill to disk (sidecar/messages/spill.py): users evicted from memory come back from a
file, identical; anything that changes their rows makes the file stale; a file not as written is a miss. Then
through the real process: a small --cache-mb spills, answers stay right, deletes leave no file behind."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import files_containing
from helpers import cache_rows

from sidecar.messages.spill import Spill
from sidecar.messages.vector_cache import VectorCache


def _cache(tmp_path, users_fit: int = 1, spill_bytes: int = 1 << 20) -> VectorCache:
    size = VectorCache(8, 1 << 30).put("x", *cache_rows("x", 30)).nbytes
    return VectorCache(8, users_fit * size * 18 // 10, tmp_path / "spill", spill_bytes)  # + a keyword index


def test_an_evicted_user_comes_back_from_the_spill_with_the_same_answers(tmp_path):
    (tmp_path / "spill").mkdir()
    (tmp_path / "spill" / "left-by-a-crash.entry").write_bytes(b"x" * 64)
    cache = _cache(tmp_path)
    assert list((tmp_path / "spill").iterdir()) == []  # emptied when opened: another process's files are never read
    rows, vecs = cache_rows("a", 30)
    entry = cache.put("a", rows, vecs)
    before = (entry.search(vecs[4], 5), cache.keyword_ids("a", entry, "m7", ("content", "search_text"), 5))
    cache.put("b", *cache_rows("b", 30))  # a is evicted: to the spill
    assert cache.stats()["users"] == 1 and cache.stats()["spilled_users"] == 1
    (path,) = (tmp_path / "spill").iterdir()
    written = path.stat().st_mtime_ns
    back = cache.get("a")
    assert back is not None and back is not entry
    assert (back.search(vecs[4], 5), cache.keyword_ids("a", back, "m7", ("content", "search_text"), 5)) == before
    assert cache.stats()["spilled_users"] == 2  # b made room for a and went to the spill; a's file stays valid
    assert cache.get("b") is not None  # a evicted again, unchanged: its file is not written twice
    assert path.stat().st_mtime_ns == written and cache.get("a") is not None
    assert cache.get("nobody") is None


def test_a_store_for_a_spilled_user_keeps_its_file_and_the_next_query_has_the_row(tmp_path):
    """A chat host stores a message, then queries for the same user: the new rows wait beside the spilled file
    (its tail) and join the entry, keyword index included, when it comes back; no table read in between."""
    cache = _cache(tmp_path, users_fit=8)  # the tails' share of the budget (1/16) holds a's two rows
    rows, vecs = cache_rows("a", 30)
    entry = cache.put("a", rows, vecs)
    cache.keyword_ids("a", entry, "m1", ("content",), 5)  # a's keyword index is built, and spilled with it
    for i in range(16):
        cache.put(f"o{i}", *cache_rows(f"o{i}", 30))  # a spilled
    new_rows, new_vecs = cache_rows("a", 2, start=30)
    new_rows[0]["content"] = "quokka bike"
    before = cache.stats()
    cache.append(new_rows, new_vecs)
    assert cache.stats()["spilled_users"] >= 1 and cache.stats()["bytes"] > 0
    after = cache.stats()  # the tail is counted in `bytes`, beside the budget: no one was evicted for it
    assert after["bytes"] > before["bytes"] and after["users"] == before["users"]
    assert after["spilled_users"] == before["spilled_users"]
    back = cache.get("a")
    assert back is not None and len(back) == 32 and back.keywords is not None
    assert cache.keyword_ids("a", back, "quokka", ("content",), 5) == [["a-30"]]
    assert back.search(new_vecs[1], 1)[0]["id"] == "a-31"
    for i in range(16, 32):
        cache.put(f"o{i}", *cache_rows(f"o{i}", 30))  # a evicted again: written anew, with its two new rows
    assert len(cache.get("a")) == 32


def test_what_changes_a_spilled_user_drops_its_file(tmp_path):
    cache = _cache(tmp_path)
    cache.put("a", *cache_rows("a", 30))
    cache.put("b", *cache_rows("b", 30))  # a spilled
    cache.append(*cache_rows("a", 40, start=30))  # more new rows of a than its tail may hold: the file goes stale
    assert cache.get("a") is None and cache.stats()["spilled_users"] == 0
    cache.put("a", *cache_rows("a", 30))  # now b is spilled
    cache.append(*cache_rows("b", 1, start=30))  # b's tail ...
    cache.add_chunks("b", ["b-1"], np.array([[0, 2]], np.int32), np.ones((1, 8), np.float16))  # ... goes with its file
    assert cache.get("b") is None
    cache.put("c", *cache_rows("c", 30))  # a spilled
    cache.append(*cache_rows("a", 1, start=30))  # a tail, then a discard: neither the file nor the tail comes back
    cache.discard("a")
    assert cache.get("a") is None
    cache.put("a", *cache_rows("a", 30))  # c spilled
    assert len(cache.get("c")) == 30  # back in memory, its file still valid
    cache.append(*cache_rows("c", 1, start=30))  # changed in memory: the file is stale
    cache.put("d", *cache_rows("d", 30))  # c evicted again: written anew
    assert len(cache.get("c")) == 31
    cache.clear()
    assert cache.get("c") is None and list((tmp_path / "spill").iterdir()) == []


def test_whatever_happens_a_user_back_from_the_spill_has_exactly_the_tables_rows(tmp_path):
    """Stores, queries, chunks, deletes and clears in a random order over a cache that spills and holds
    tails: every entry a query gets holds the user's rows as the table does, in order, none twice."""
    rng = np.random.default_rng(7)
    cache = _cache(tmp_path, users_fit=6)
    cache.known = set()  # as after the start-up's warm-up: a user's first rows are cached as their whole set
    table: dict[str, list[str]] = {}
    users, applied = [f"u{i}" for i in range(16)], 0
    for step in range(2000):
        user, op = users[rng.integers(len(users))], rng.random()
        if op < 0.5:  # a store of 1-3 rows
            rows, vecs = cache_rows(user, int(rng.integers(1, 4)), start=1000 * step)
            table.setdefault(user, []).extend(r["id"] for r in rows)
            cache.append(rows, vecs)
        elif op < 0.95:  # a query: the entry from memory or the spill, else read from the table
            tails = cache.spill.tail_nbytes
            entry = cache.get(user)
            applied += cache.spill.tail_nbytes < tails
            if entry is None:
                rows, vecs = cache_rows(user, len(table.get(user, [])))
                for r, i in zip(rows, table.get(user, [])):
                    r["id"] = i
                entry = cache.put(user, rows, vecs)
            assert [entry.row(i)["id"] for i in range(len(entry))] == table.get(user, []), step
        elif op < 0.97 and table.get(user):
            cache.add_chunks(user, [table[user][0]], np.array([[0, 1]], np.int32), np.ones((1, 8), np.float16))
        elif op < 0.999 or len(table.get(user, [])) > 60:
            table[user] = []  # a delete of the user's rows
            cache.drop(user)
        else:
            cache.clear()
            cache.known = {u for u, ids in table.items() if ids}  # the warm-up after another sidecar's write
    assert applied >= 20, applied  # users came back from the spill with a tail


class _Unextendable:
    """An entry whose `extend` fails (as on a MemoryError): the spill's own logic, no cache around it."""

    nbytes = 1

    def extend(self, rows, vectors):
        raise MemoryError


def test_a_tail_that_cannot_be_applied_drops_its_file(tmp_path):
    """If the tail fails to join the entry read back, the error reaches the caller and the file goes: read
    alone later, it would miss the tail's rows."""
    spill = Spill(tmp_path / "spill", 1 << 20, tail_budget=1 << 20)
    spill.put("a", _Unextendable())
    rows, vecs = cache_rows("a", 1)
    spill.add("a", rows, vecs)
    assert spill.tail_nbytes > 0
    with pytest.raises(MemoryError):
        spill.load("a")
    assert "a" not in spill and spill.tail_nbytes == 0 and spill.load("a") is None
    assert list((tmp_path / "spill").iterdir()) == []


def test_a_new_users_first_rows_make_the_file_of_their_empty_entry_stale(tmp_path):
    """A query for a user with no rows yet caches an empty entry, which may go to the spill; that user's
    first store must not leave the empty file valid (the review of 36e6221 found the rows lost)."""
    cache = _cache(tmp_path)
    cache.known = set()
    cache.put("y", *cache_rows("y", 0))  # a query for a user with no memories yet
    cache.put("a", *cache_rows("a", 30))
    cache.put("b", *cache_rows("b", 30))  # y's empty entry (the least recently used) and a are evicted to the spill
    assert cache.stats()["spilled_users"] == 2
    cache.append(*cache_rows("y", 30))  # y's first rows: no room for them in memory
    back = cache.get("y")
    assert back is None or len(back) == 30


def test_a_deleted_users_file_goes_and_other_users_files_stay(tmp_path):
    """A delete (expiry, forget_user) drops only the users whose rows went (`drop`): their spill file is
    removed, none of their text stays on disk, and other users' files still serve their next query."""
    cache = _cache(tmp_path)
    for user in "abc":
        cache.put(user, *cache_rows(user, 30))  # a and b spilled, c in memory
    assert cache.stats()["spilled_users"] == 2
    files = set((tmp_path / "spill").iterdir())
    cache.drop("a")
    (left,) = set((tmp_path / "spill").iterdir())
    assert left in files and cache.stats()["spilled_users"] == 1
    assert cache.get("a") is None  # read from the table again
    assert cache.get("b") is not None  # from its file, untouched by a's delete (c goes to the spill)
    cache.drop("b")  # in memory now, its file still valid: both go
    assert left not in set((tmp_path / "spill").iterdir()) and cache.get("b") is None
    assert cache.get("c") is not None


def test_a_file_not_as_written_is_a_miss_and_the_budget_holds(tmp_path):
    cache = _cache(tmp_path)
    cache.put("a", *cache_rows("a", 30))
    cache.put("b", *cache_rows("b", 30))
    (path,) = (tmp_path / "spill").iterdir()
    size = cache.stats()["spilled_bytes"]  # a's file
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    assert cache.get("a") is None and not path.exists()  # read from the table instead

    small = _cache(tmp_path / "small", spill_bytes=1)  # no file fits: eviction only drops
    small.put("a", *cache_rows("a", 30))
    small.put("b", *cache_rows("b", 30))
    assert small.stats()["spilled_users"] == 0 and small.get("a") is None
    two = _cache(tmp_path / "two", spill_bytes=size * 3 // 2)  # room for one file
    for user in "abcd":
        two.put(user, *cache_rows(user, 30))
    assert two.stats()["spilled_users"] == 1 and two.get("c") is not None  # the most recently evicted stays
    assert two.get("a") is None and two.get("b") is None


def test_a_small_cache_spills_and_answers_stay_right_end_to_end(spawn, tmp_path):
    """--cache-mb 1 over 4 users of 1,000 memories (about 550 KB each in the cache): users go to the spill and
    come back; a memory stored for a spilled user is found at once (it waits beside the user's file); forgetting a
    user leaves none of their text in the data dir; the spill folder is gone after shutdown."""
    sc = spawn("--cache-mb", "1")
    marker = {u: f"zebracorn{u}" for u in range(4)}
    for u in range(4):
        r = sc.request(
            {
                "type": "store",
                "messages": [
                    {
                        "user_id": f"s{u}",
                        "content": f"note {i} about the garden of user {u}"
                        if i != 150
                        else f"my secret word is {marker[u]}",
                    }
                    for i in range(1000)
                ],
            },
            timeout=300,  # 1,000 embeddings: seconds on a quiet machine, over a minute on a loaded one
        )
        assert r["type"] == "ok", r

    def top(user, text, mode="hybrid"):
        r = sc.request({"type": "query", "user_id": user, "text": text, "limit": 3, "mode": mode})
        assert r["type"] == "results", r
        return [m["content"] for m in r["messages"]]

    first = {u: top(f"s{u}", marker[u]) for u in range(4)}
    assert all(first[u][0] == f"my secret word is {marker[u]}" for u in range(4))
    cache = sc.request({"type": "stats"})["cache"]
    assert cache["spilled_users"] >= 2 and cache["users"] <= 2, cache
    assert {u: top(f"s{u}", marker[u]) for u in range(4)} == first  # back from the spill, same answers
    before = sc.request({"type": "stats"})["cache"]  # s0, queried first, is on disk again
    assert sc.request({"type": "store", "user_id": "s0", "content": "my new bike is called Quokka"})["type"] == "ok"
    after = sc.request({"type": "stats"})["cache"]
    # the store kept s0's file valid (its row waits beside it, counted in `bytes`): no table read to come
    assert after["spilled_users"] == before["spilled_users"] and after["bytes"] > before["bytes"], (before, after)
    for u in (1, 2, 3):
        top(f"s{u}", "garden")  # s0 is evicted again
    assert top("s0", "Quokka", "keyword") == ["my new bike is called Quokka"]
    assert sc.request({"type": "forget_user", "user_id": "s1"})["type"] == "ok"
    assert files_containing(sc.data_dir, marker[1].encode()) == []
    assert top("s2", marker[2])[0] == f"my secret word is {marker[2]}"
    assert sc.shutdown() == 0
    assert not (sc.data_dir / "spill").exists()
