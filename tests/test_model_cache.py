"""The model's weights mapped from a copy kept in the user's cache (sidecar/embedding/mapped.py): made once,
reused, the same answers as the file loaded as it is, made again when damaged, and never in the way when the
cache cannot be written."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import linux_only

MEMORIES = ["I play the violin every evening", "my sister lives in Lisbon", "we adopted a grey cat named Miso"]
QUESTIONS = ["music instrument", "where does my sister live", "pets"]


def _answers(sc) -> list[list[tuple[str, float]]]:
    out = []
    for q in QUESTIONS:
        r = sc.request({"type": "query", "user_id": "u", "text": q, "limit": 3, "mode": "semantic"})
        assert r["type"] == "results", r
        out.append([(m["content"], m["similarity"]) for m in r["messages"]])
    return out


def _copy(cache: Path) -> Path:
    folders = [p for p in cache.iterdir() if not p.name.startswith(".")]
    assert len(folders) == 1, folders  # one copy, of the one model file; no work folder left behind
    assert sorted(p.name for p in folders[0].iterdir()) == ["copy.json", "model.onnx", "model.onnx.data"]
    return folders[0]


def _mapped(sc, data_file: Path) -> bool:
    return str(data_file) in Path(f"/proc/{sc.proc.pid}/maps").read_text()


def test_the_mapped_copy_is_made_once_reused_and_answers_as_the_file_itself(spawn, tmp_path):
    cache = tmp_path / "cache"
    first = spawn(env={"MEMORY_SIDECAR_MODEL_CACHE": str(cache)})
    for m in MEMORIES:
        first.store("u", m)
    mapped = _answers(first)
    assert first.shutdown() == 0
    copy = _copy(cache)
    data = copy / "model.onnx.data"
    made = data.stat().st_mtime_ns

    plain = spawn(env={"MEMORY_SIDECAR_MODEL_CACHE": "off"})  # the original file, loaded as before
    assert _answers(plain) == mapped  # the same vectors, bit for bit
    if sys.platform == "linux":
        assert not _mapped(plain, data)
    assert plain.shutdown() == 0

    again = spawn(env={"MEMORY_SIDECAR_MODEL_CACHE": str(cache)})
    assert _answers(again) == mapped
    assert data.stat().st_mtime_ns == made  # reused, not written again
    if sys.platform == "linux":
        assert _mapped(again, data)  # the weights are the file's pages
    assert again.shutdown() == 0


def test_a_damaged_copy_is_made_again(spawn, tmp_path):
    cache = tmp_path / "cache"
    first = spawn(env={"MEMORY_SIDECAR_MODEL_CACHE": str(cache)})
    first.store("u", MEMORIES[0])
    want = _answers(first)
    assert first.shutdown() == 0
    data = _copy(cache) / "model.onnx.data"
    with open(data, "r+b") as f:  # a flipped byte in the middle of the weights
        f.seek(data.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    damaged = data.stat().st_mtime_ns

    again = spawn(env={"MEMORY_SIDECAR_MODEL_CACHE": str(cache)})
    assert _answers(again) == want
    assert "damaged" in again.stderr()
    assert data.stat().st_mtime_ns != damaged  # written again
    assert again.shutdown() == 0


@linux_only("a path below a regular file cannot be made on any POSIX system; the error differs on Windows")
def test_a_cache_that_cannot_be_written_loads_the_file_as_before_and_says_why(spawn, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    sc = spawn(env={"MEMORY_SIDECAR_MODEL_CACHE": str(blocker / "cache")})
    sc.store("u", MEMORIES[0])
    r = sc.request({"type": "query", "user_id": "u", "text": QUESTIONS[0], "mode": "semantic"})
    assert r["messages"][0]["content"] == MEMORIES[0]
    assert "no mapped copy" in sc.stderr()
    assert sc.shutdown() == 0


def test_making_a_copy_removes_the_ones_no_start_used_for_a_month_and_each_start_marks_its_own(spawn, tmp_path):
    import os
    import time

    cache = tmp_path / "cache"
    month_ago = time.time() - 40 * 86_400
    for name, age in (("a" * 64, month_ago), ("b" * 64, time.time() - 5 * 86_400), (".cc-1-dead", month_ago)):
        folder = cache / name
        folder.mkdir(parents=True)
        (folder / "copy.json").write_text("{}")
        (folder / "model.onnx.data").write_bytes(b"\0" * 16)
        os.utime(folder / "copy.json", (age, age))
        os.utime(folder, (age, age))
    sc = spawn(env={"MEMORY_SIDECAR_MODEL_CACHE": str(cache)})  # a new model copy is made: the old ones go
    assert sc.shutdown() == 0
    left = sorted(p.name for p in cache.iterdir())
    assert "a" * 64 not in left and ".cc-1-dead" not in left and "b" * 64 in left, left  # five days: kept
    (mine,) = [cache / n for n in left if n != "b" * 64]
    os.utime(mine / "copy.json", (month_ago, month_ago))
    again = spawn(env={"MEMORY_SIDECAR_MODEL_CACHE": str(cache)})
    assert again.shutdown() == 0
    assert time.time() - (mine / "copy.json").stat().st_mtime < 3_600  # used now: not the next one to go
