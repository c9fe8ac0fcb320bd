"""Issue 64 (hardening round 3's surfaces), the import and limits part, through the real process: an imported
vector that is not one of the model's (NaN, infinity, 1e30) never reaches LanceDB or a score; a write-ahead
log LanceDB refuses is set aside, never a start that fails; an import holds its records to the limits a
`store` has; content and query text are measured after NFKC, in bounded work; bad start-up options and model
files fail naming the option or the file."""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
from conftest import ROOT, bare_env

from sidecar.messages.wal import encode_record

ASSETS = ROOT / "sidecar" / "assets" / "all-MiniLM-L6-v2"


def _vector(value: float) -> str:
    return base64.b64encode(np.full(384, value, dtype="<f4").tobytes()).decode("ascii")


def _lines(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def test_imported_vectors_of_nan_infinity_or_1e30_are_embedded_again_and_the_store_goes_on(spawn, tmp_path):
    """Before: the NaN record imported as `imported` with 0 invalid, then every store was answered but could
    not be committed (`internal`), forget_user `internal`, and every later start `startup_failed`; the 1e30
    one ranked first with similarity 3e29."""
    sc = spawn("--ttl-days", "0")
    sc.store("u1", "I have a cat named Tom")
    r = sc.request({"type": "remember", "user_id": "u1", "text": "u1 likes green tea", "category": "preference"})
    assert r["type"] == "remembered", r
    out = tmp_path / "x.jsonl"
    assert sc.request({"type": "export", "out": str(out), "vectors": True})["type"] == "exported"
    assert sc.shutdown() == 0

    records = _lines(out)
    message = next(r for r in records if r["kind"] == "message")
    fact = next(r for r in records if r["kind"] == "fact")
    edited = [r for r in records if r["kind"] not in ("message", "fact", "graph")]
    end = edited.pop()
    texts = {"nan": "my parrot is called Polly", "inf": "I grow tomatoes", "1e30": "I play the cello"}
    for n, (value, text) in enumerate(texts.items()):
        edited.append({**message, "id": f"bad-{n}", "content": text, "vector": _vector(float(value))})
    edited.append({**fact, "id": "bad-fact", "text": "u1 drinks coffee", "vector": _vector(float("nan"))})
    edited.append(end)
    bad = _write(tmp_path / "bad.jsonl", edited)

    sc = spawn("--ttl-days", "0", data_dir=tmp_path / "fresh")
    r = sc.request({"type": "import", "path": str(bad)}, 120)
    assert r["type"] == "imported", r
    assert (r["messages"], r["facts"], r["invalid"], r["reembedded"]) == (3, 1, 0, 4), r
    assert all("not finite" in e["message"] or "length" in e["message"] for e in r["errors"]), r
    assert len(r["errors"]) == 4, r

    assert sc.request({"type": "store", "user_id": "u1", "content": "hello there"})["type"] == "ok"
    q = sc.request({"type": "query", "user_id": "u1", "text": "what instrument do I play", "mode": "semantic"})
    assert q["type"] == "results" and q["messages"], q
    assert all(-1.0 <= m["similarity"] <= 1.0 for m in q["messages"]), q
    assert q["messages"][0]["id"] == "bad-2", q  # re-embedded: found by its meaning, not by its size
    f = sc.request({"type": "facts", "user_id": "u1", "text": "coffee"})
    assert f["type"] == "facts" and [x["id"] for x in f["facts"]][:1] == ["bad-fact"], f
    assert sc.request({"type": "forget_user", "user_id": "nobody"})["type"] == "ok"
    assert sc.request({"type": "health"})["status"] == "ok"
    sc.kill()  # the log holds the last store: it must replay
    again = spawn("--ttl-days", "0", data_dir=tmp_path / "fresh")
    assert again.request({"type": "stats"})["memories"] == 4
    assert again.shutdown() == 0


def _row(id_: str, content: str, ts: float) -> dict:
    return {
        "id": id_,
        "user_id": "u1",
        "content": content,
        "is_bot": False,
        "timestamp": ts,
        "message_id": None,
        "channel_id": None,
        "reply_to": None,
        "username": None,
        "search_text": content,
        "prev_id": None,
        "prev2_id": None,
    }


def test_a_write_ahead_log_lancedb_refuses_is_set_aside_and_the_start_goes_on(spawn, tmp_path):
    """What a sidecar before the checks logged (an imported NaN vector): every start was `startup_failed`."""
    data = tmp_path / "data"
    sc = spawn("--ttl-days", "0", data_dir=data)
    sc.store("u1", "first memory")
    assert sc.shutdown() == 0
    now = time.time()
    good = np.zeros((1, 384), np.float32)
    good[0, 0] = 1.0
    nan = np.full((1, 384), np.nan, np.float32)
    (data / "wal").mkdir(exist_ok=True)
    (data / "wal" / "000000000099.log").write_bytes(
        encode_record([_row("g1", "a good one", now)], good)
        + encode_record(
            [_row("b1", "my dog is called Rex", now), _row("g2", "another good one", now)], np.concatenate([nan, good])
        )
    )

    sc = spawn("--ttl-days", "0", data_dir=data)  # before: startup_failed, "Vector column contains NaN"
    assert sc.request({"type": "stats"})["memories"] == 3  # the first, g1 and g2
    h = sc.request({"type": "health"})
    assert (h["status"], h["quarantined"]) == ("degraded", 1), h
    assert Path(h["quarantine"]) == data / "quarantine"
    assert "set aside" in sc.stderr() and "NaN" in sc.stderr()
    assert sc.request({"type": "store", "user_id": "u1", "content": "still writing"})["type"] == "ok"
    files = list((data / "quarantine").glob("*.jsonl"))
    assert len(files) == 1
    kept = _lines(files[0])
    assert [(k["id"], k["content"]) for k in kept] == [("b1", "my dog is called Rex")]
    assert "NaN" in kept[0]["reason"]
    assert sc.shutdown() == 0

    # it stays said until the folder is dealt with; the file imports (re-embedded, its id kept)
    back = tmp_path / "back.jsonl"
    shutil.copy(files[0], back)
    sc = spawn("--ttl-days", "0", data_dir=data)
    assert sc.request({"type": "health"})["quarantined"] == 1
    r = sc.request({"type": "import", "path": str(back)}, 120)
    assert (r["type"], r["messages"], r["reembedded"]) == ("imported", 1, 1), r
    q = sc.request({"type": "query", "user_id": "u1", "text": "dog's name", "limit": 1})
    assert q["messages"][0]["id"] == "b1", q
    assert sc.shutdown() == 0


def test_import_holds_records_to_the_content_limits_of_store(spawn, tmp_path):
    """Before: a 3,000-byte memory imported whole under --max-content-bytes 1000 (and a 3 MB one under the
    default 1 MB)."""
    sc = spawn("--max-content-bytes", "1000", "--ttl-days", "0")
    now = int(time.time())
    plain = _write(
        tmp_path / "plain.jsonl",
        [
            {"user_id": "u1", "content": "x" * 3000, "timestamp": now},
            {"user_id": "u1", "content": "\ufdfa" * 300, "timestamp": now},  # 900 bytes, 9,900 after NFKC
            {"user_id": "u1", "content": "a short one that fits", "timestamp": now},
        ],
    )
    r = sc.request({"type": "import", "path": str(plain)}, 120)
    assert (r["type"], r["messages"], r["invalid"]) == ("imported", 1, 2), r
    assert [e["line"] for e in r["errors"]] == [1, 2], r
    assert all("--max-content-bytes" in e["message"] for e in r["errors"]), r
    assert "NFKC" in r["errors"][1]["message"], r
    r = sc.request({"type": "import", "path": str(plain), "strict": True}, 120)
    assert r["type"] == "error" and r["code"] == "bad_file" and "line 1" in r["message"], r
    big = _write(tmp_path / "big.jsonl", [{"user_id": "u2", "content": "y" * 3_000_000, "timestamp": now}])
    r = sc.request({"type": "import", "path": str(big)}, 120)
    assert (r["type"], r["messages"], r["invalid"]) == ("imported", 0, 1), r
    assert sc.request({"type": "stats"})["memories"] == 1
    assert sc.shutdown() == 0


def test_query_text_and_content_are_measured_after_nfkc_in_bounded_work(sidecar):
    """Before: query `text` had no limit below the 6 MB line (a 5.8 MB one took 58 s and 2.6 GB); U+FDFA
    grew 18 times under NFKC; a run of alternating combining marks made normalisation quadratic."""
    r = sidecar.request({"type": "query", "user_id": "u1", "text": "cat " * 17_000})
    assert (r["type"], r["code"]) == ("error", "too_large") and "65536" in r["message"], r
    r = sidecar.request({"type": "query", "user_id": "u1", "text": "\ufdfa" * 4000})  # 12 KB, 72 KB after NFKC
    assert (r["type"], r["code"]) == ("error", "too_large") and "NFKC" in r["message"], r
    for request in (
        {"type": "facts", "user_id": "u1", "text": "\ufdfa" * 4000},
        {"type": "context", "users": {"u1": "U"}, "text": "\ufdfa" * 4000},
        {"type": "recall", "users": {"u1": "U"}, "text": "\ufdfa" * 4000},
    ):
        r = sidecar.request(request)
        assert (r["type"], r["code"]) == ("error", "too_large"), (request["type"], r)
    assert sidecar.request({"type": "query", "user_id": "u1", "text": "\ufdfa" * 1000})["type"] == "results"

    r = sidecar.request({"type": "store", "user_id": "u1", "content": "\ufdfa" * 60_000})  # 180 KB, 2 MB after
    assert (r["type"], r["code"]) == ("error", "too_large"), r
    assert "NFKC" in r["message"] and "--max-content-bytes" in r["message"], r
    # 160,000 alternating marks (320 KB): Python sorts such a run in quadratic time (minutes); cut to 30
    marks = "a" + "\u0301\u0316" * 80_000 + " zalgo"
    assert sidecar.request({"type": "store", "user_id": "u1", "content": marks})["type"] == "ok"
    r = sidecar.request({"type": "query", "user_id": "u1", "text": "zalgo " + "\u0301\u0316" * 10_000})
    assert r["type"] == "results" and r["messages"], r


def test_graph_row_numbers_must_be_finite_and_bounded():
    from sidecar.portable.importer import _number_problem

    assert _number_problem({"id": "e", "user_id": "u", "ts": 1.7e9, "aliases": ["a"], "seq": 3}) is None
    assert "1e+300" in _number_problem({"id": "e", "user_id": "u", "ts": 1e300})
    assert _number_problem({"id": "e", "user_id": "u", "activation": -1e30}) is not None
    assert _number_problem({"id": "e", "user_id": "u", "low": True}) is None


# ------------------------------------------------------------------ start-up: the option or the file named


def _start(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sidecar", *args],
        input=b'{"type":"ping"}\n',
        capture_output=True,
        timeout=timeout,
        env=bare_env(PATH="", PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1"),
        cwd=ROOT,
    )


def test_options_that_name_nothing_or_too_much_fail_naming_the_option(tmp_path):
    for args, option in (
        (("--languages", ""), "--languages"),  # before: silently auto
        (("--languages", ",,,"), "--languages"),
        (("--query-prefix", "q" * 100_000), "--query-prefix"),  # before: accepted (1 MB: 0.7 s per store)
        (("--passage-prefix", "p" * 1001), "--passage-prefix"),
    ):
        p = _start("--data-dir", str(tmp_path / "d"), *args)
        assert p.returncode == 2 and p.stdout == b"", (args[0], p)
        assert option in p.stderr.decode(), (args[0], p.stderr[-500:])


def _model_dir(tmp_path: Path, name: str, **files: str | bytes) -> Path:
    """The bundled model's files in a folder of their own, some replaced."""
    folder = tmp_path / name
    shutil.copytree(ASSETS, folder)
    for file, text in files.items():
        target = folder / file.replace("__", "/")
        target.write_bytes(text if isinstance(text, bytes) else text.encode())
    return folder


def test_a_bad_model_file_fails_the_start_naming_the_file(spawn, tmp_path):
    deep = b"[" * 100_000 + b"]" * 100_000
    for name, files, named in (
        ("tokenizer", {"tokenizer.json": '{"version": "1.0", "trunc'}, "tokenizer.json"),  # before: serde's words
        ("deep", {"modules.json": deep}, "modules.json"),  # before: "maximum recursion depth exceeded"
        ("prompt", {"config_sentence_transformers.json": orjson.dumps({"prompts": {"query": "q" * 5000}})}, "prompts"),
    ):
        folder = _model_dir(tmp_path, name, **files)
        sc = spawn("--model-dir", str(folder), data_dir=tmp_path / f"data-{name}", wait_ready=False)
        r = sc.recv(180)
        assert r["type"] == "error" and r["code"] == "startup_failed", (name, r)
        assert str(folder) in r["message"] and named in r["message"], (name, r)
        assert sc.proc.wait(60) == 1
