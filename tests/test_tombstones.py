"""Forgotten stays forgotten, end to end (real sidecar, model and store): `forget_user` and `delete` leave a
tombstone (the id and when, nothing else); an import skips what a tombstone covers and counts it (`forgotten`),
unless `restore_forgotten` (which clears the tombstones it used); an export carries tombstones, so a backup
restored on another machine honours them; what a user says after being forgotten is theirs to keep."""

from __future__ import annotations

import time
from pathlib import Path

import orjson


def _store(sc, user: str, lines: list[str], start: float) -> list[str]:
    msgs = [{"user_id": user, "content": c, "timestamp": start + 60 * i} for i, c in enumerate(lines)]
    r = sc.request({"type": "store", "messages": msgs})
    assert r["type"] == "ok", r
    return r["ids"]


def _export(sc, path: Path, **extra) -> dict:
    r = sc.request({"type": "export", "out": str(path), **extra}, 120)
    assert r["type"] == "exported", r
    return r


def _import(sc, path: Path, **extra) -> dict:
    r = sc.request({"type": "import", "path": str(path), **extra}, 120)
    assert r["type"] == "imported", r
    return r


def _ids(sc, user: str) -> set[str]:
    r = sc.request({"type": "query", "user_id": user, "text": "garden", "limit": 50, "min_score": 0})
    return {m["id"] for m in r["messages"]}


def _lines(path: Path, kind: str) -> list[dict]:
    return [x for x in map(orjson.loads, path.read_bytes().splitlines()) if x["kind"] == kind]


def test_a_backup_restored_elsewhere_honours_what_was_forgotten_and_keeps_what_came_after(spawn, tmp_path):
    now = time.time()
    a = spawn("--ttl-days", "0")
    mine = _store(a, "u1", ["my garden has roses", "the garden shed is blue", "I water the garden daily"], now - 900)
    theirs = _store(a, "u2", ["their garden has tulips", "a garden gnome named Bob"], now - 900)
    fact = a.request({"type": "remember", "user_id": "u1", "text": "Grows roses", "category": "preference"})
    assert fact["type"] == "remembered", fact
    backup = tmp_path / "backup.jsonl"
    _export(a, backup)
    # a delete of an id never stored is not_found, and leaves no tombstone
    r = a.request({"type": "delete", "id": "never-was"})
    assert r["type"] == "error" and r["code"] == "not_found", r
    forgot = a.request({"type": "forget_user", "user_id": "u1"})
    assert forgot["removed"] == {"memories": 3, "facts": 1, "graph_episodes": 3, "chunks": 0}, forgot
    assert forgot["tombstone"]["of"] == "user" and forgot["tombstone"]["id"] == "u1", forgot
    d = a.request({"type": "delete", "id": theirs[1]})
    assert d["deleted"] == 1 and (d["tombstone"]["of"], d["tombstone"]["id"]) == ("memory", theirs[1]), d
    later = tmp_path / "later.jsonl"
    r = _export(a, later)
    assert r["tombstones"] == 2 and r["messages"] == 1, r
    stones = _lines(later, "tombstone")
    assert sorted((t["of"], t["id"]) for t in stones) == [("memory", theirs[1]), ("user", "u1")]
    assert all(set(t) == {"kind", "of", "id", "at"} for t in stones)  # the id and when, nothing else
    # the old backup on this machine: nothing forgotten comes back, and it says how much it left out
    r = _import(a, backup)
    assert (r["messages"], r["facts"], r["users"]) == (0, 0, 0), r
    assert r["forgotten"] >= 3 + 1 + 1, r  # u1's three memories, its fact (and its history), u2's deleted memory
    assert _ids(a, "u1") == set() and _ids(a, "u2") == {theirs[0]}
    assert a.request({"type": "facts", "user_id": "u1"})["facts"] == []
    # what u1 says after being forgotten is theirs: exported with the tombstone, it is not skipped elsewhere
    (new,) = _store(a, "u1", ["my new garden is on the balcony"], time.time() + 5)
    after = tmp_path / "after.jsonl"
    assert _export(a, after)["tombstones"] == 2
    assert a.shutdown() == 0

    # another machine: the later export (tombstones first), then the old backup
    b = spawn("--ttl-days", "0", data_dir=tmp_path / "b")
    r = _import(b, after)
    assert r["tombstones"] == 2 and r["messages"] == 2 and r["forgotten"] == 0, r
    r = _import(b, backup)
    assert r["messages"] == 0 and r["forgotten"] >= 5, r
    assert _ids(b, "u1") == {new} and _ids(b, "u2") == {theirs[0]}
    # asked to, the backup restores what was forgotten and clears the tombstones it used
    r = _import(b, backup, restore_forgotten=True)
    assert r["messages"] == 4 and r["facts"] == 1 and r["forgotten"] == 0, r
    assert "2 tombstones cleared" in " ".join(r["notes"]), r
    assert _ids(b, "u1") == {*mine, new} and _ids(b, "u2") == set(theirs)
    assert _export(b, tmp_path / "restored.jsonl")["tombstones"] == 0
    assert b.shutdown() == 0


def test_one_users_export_carries_only_that_users_tombstone(spawn, tmp_path):
    sc = spawn("--ttl-days", "0")
    (gone,) = _store(sc, "u2", ["a garden note"], time.time() - 60)
    assert sc.request({"type": "delete", "id": gone})["deleted"] == 1
    for user in ("u1", "u3"):
        assert sc.request({"type": "forget_user", "user_id": user})["tombstone"]["id"] == user
    one = tmp_path / "u1.jsonl"
    assert _export(sc, one, user_id="u1")["tombstones"] == 1
    assert [(t["of"], t["id"]) for t in _lines(one, "tombstone")] == [("user", "u1")]
    assert sc.shutdown() == 0


def _file(path: Path, records: list[dict]) -> Path:
    header = {
        "kind": "header",
        "format": "memory-sidecar-export",
        "format_version": 1,
        "product_version": "0.1.0",
        "created_at": 1.0,
        "user_id": None,
        "vectors": False,
        "model": {"name": "m", "dim": 384, "digest": "d"},
        "schema_version": 4,
        "graph": False,
    }
    counts: dict[str, int] = {}
    for r in records:
        counts[r["kind"]] = counts.get(r["kind"], 0) + 1
    lines = [header, *records, {"kind": "end", "counts": counts}]
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


def test_many_forgotten_ids_are_skipped_without_embedding_and_bad_tombstones_are_reported(sidecar, tmp_path):
    ts = int(time.time()) - 100
    n = 3_000  # the bench imports 100,000 (docs/privacy.md); a set: linear in the file
    stones = [{"kind": "tombstone", "of": "memory", "id": f"m{i}", "at": 2_000_000_000} for i in range(n)]
    msgs = [
        {"kind": "message", "id": f"m{i}", "user_id": f"u{i % 7}", "content": f"garden note {i}", "timestamp": ts}
        for i in range(n + 2)
    ]
    bad = [
        {"kind": "tombstone", "of": "planet", "id": "x", "at": 5},
        {"kind": "tombstone", "of": "user", "id": "x", "at": -1},
        {"kind": "tombstone", "of": "user", "id": "", "at": 5},
        {"kind": "tombstone", "of": "user", "id": "x", "at": 5, "why": "secret"},
    ]
    path = _file(tmp_path / "many.jsonl", [*stones, *bad, *msgs])
    r = _import(sidecar, path)
    assert (r["tombstones"], r["forgotten"], r["messages"], r["invalid"]) == (n, n, 2, 4), r
    assert r["reembedded"] == 2  # the forgotten were never embedded
    assert _ids(sidecar, f"u{n % 7}") | _ids(sidecar, f"u{(n + 1) % 7}") == {f"m{n}", f"m{n + 1}"}
    # again: the tombstones are known, none written twice; the two stored are skipped as stored
    r = _import(sidecar, path)
    assert (r["tombstones"], r["forgotten"], r["messages"], r["skipped"]) == (0, n, 0, 2), r
    assert sidecar.request({"type": "ping"})["type"] == "pong"


def test_restore_forgotten_must_be_a_boolean(sidecar, tmp_path):
    r = sidecar.request({"type": "import", "path": str(tmp_path / "x.jsonl"), "restore_forgotten": "yes"})
    assert r["type"] == "error" and r["code"] == "invalid_request" and "restore_forgotten" in r["message"], r
