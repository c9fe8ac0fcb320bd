"""Export and import (sidecar/portable): the file format's reader without a process, then the round trip,
bad files and the CLI against the real process over pipes."""

from __future__ import annotations

import gzip
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import ROOT

from sidecar.portable.fileio import FileProblem, LineProblem, Reader
from sidecar.portable.records import FORMAT_VERSION, decode_vector, encode_vector
from sidecar.portable.schema import DEFAULT_PATH, render

DAY = 86_400


# ---------------------------------------------------------------- the format, without a process


def _header(**extra) -> dict:
    return {
        "kind": "header",
        "format": "memory-sidecar-export",
        "format_version": 1,
        "product_version": "0.1.0",
        "created_at": 1.0,
        "user_id": None,
        "vectors": False,
        "model": {"name": "m", "dim": 4, "digest": "d"},
        "schema_version": 4,
        "graph": False,
        **extra,
    }


def _write(path: Path, lines: list, gz: bool = False) -> Path:
    data = b"".join((orjson.dumps(x) if not isinstance(x, bytes) else x) + b"\n" for x in lines)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _message(i: int, user: str = "u1") -> dict:
    return {"kind": "message", "id": f"m{i}", "user_id": user, "content": f"message number {i}", "timestamp": 1000 + i}


def test_export_schema_is_up_to_date():
    assert DEFAULT_PATH.read_bytes() == render(), (
        "protocol/export.schema.json is stale: python -m sidecar.portable.schema"
    )


def test_vectors_round_trip_exactly():
    v = np.random.default_rng(1).standard_normal(384).astype(np.float32)
    assert np.array_equal(decode_vector(encode_vector(v), 384), v)
    with pytest.raises(ValueError, match="expected 4"):
        decode_vector(encode_vector(v), 4)


def test_a_newer_format_version_is_refused_with_a_clear_message(tmp_path):
    path = _write(tmp_path / "new.jsonl", [_header(format_version=FORMAT_VERSION + 1), {"kind": "end", "counts": {}}])
    with pytest.raises(FileProblem, match=f"format version {FORMAT_VERSION + 1}, newer than .* upgrade memory-sidecar"):
        Reader(path)


def test_records_bad_lines_and_a_missing_end_are_reported_by_line(tmp_path):
    path = _write(
        tmp_path / "x.jsonl", [_header(), _message(1), b"{garbage", {"kind": "message", "id": "m2"}, _message(3)]
    )
    got = list(Reader(path).records())
    assert [n for n, _ in got] == [2, 3, 4, 5, 6]
    assert got[0][1].id == "m1" and got[3][1].id == "m3"
    assert isinstance(got[1][1], LineProblem) and "not valid JSON" in got[1][1].message
    assert isinstance(got[2][1], LineProblem) and "required" in got[2][1].message
    assert isinstance(got[4][1], LineProblem) and "cut short" in got[4][1].message


def test_a_gzip_file_cut_short_is_a_fatal_problem(tmp_path):
    full = _write(
        tmp_path / "x.jsonl.gz",
        [_header()] + [_message(i) for i in range(3000)] + [{"kind": "end", "counts": {}}],
        gz=True,
    )
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    got = list(Reader(cut).records())
    assert isinstance(got[-1][1], LineProblem) and got[-1][1].fatal and "cut short" in got[-1][1].message
    assert all(not isinstance(r, LineProblem) for _, r in got[:-2])


def test_plain_records_get_stable_ids(tmp_path):
    line = {"user_id": 7, "content": "hello there", "timestamp": 1700000000, "username": "ann"}
    path = _write(tmp_path / "plain.jsonl", [line, {**line, "content": "other"}, {"user_id": "7"}])
    reader = Reader(path)
    assert reader.header is None
    a, b, c = [r for _, r in reader.records()]
    assert a.id == next(r for _, r in Reader(path).records()).id and a.id != b.id and a.user_id == "7"
    assert isinstance(c, LineProblem)


# ---------------------------------------------------------------- over the pipe

USERS = {
    "alice": [
        "I adopted a grey cat called Miso last spring",
        "My sister Ana lives in Lisbon",
        "We went hiking in the Alps in July",
        "I work as a nurse at the city hospital",
    ],
    "bob": [
        "I am learning to play the cello",
        "My favourite food is ramen with extra egg",
        "I moved to Berlin for a new job",
        "Our team won the chess tournament",
    ],
    "carol": [
        "I have two dogs, Rex and Luna",
        "I'm allergic to peanuts",
        "My brother Tom is getting married in June",
        "I drive an old red Volvo",
    ],
}
QUERIES = ["pets and animals", "where does family live", "job and work", "food", "sports and hobbies"]


def _fill(sc) -> dict:
    now = int(time.time())
    facts = {}
    for u, (user, lines) in enumerate(USERS.items()):
        msgs = [
            {
                "user_id": user,
                "content": c,
                "timestamp": now - 3600 * (i + 1),
                "channel_id": "general",
                "username": user.title(),
                "message_id": f"{user}-{i}",
            }
            for i, c in enumerate(lines)
        ]
        assert sc.request({"type": "store", "messages": msgs})["type"] == "ok"
        r = sc.request(
            {"type": "remember", "user_id": user, "text": f"{user} works at Acme {u}", "category": "company"}
        )
        facts[user] = r["fact"]["id"]
        sc.request({"type": "remember", "user_id": user, "text": f"{user} likes green tea", "category": "preference"})
        r = sc.request({"type": "update_fact", "fact_id": facts[user], "text": f"{user} works at Globex {u}"})
        assert r["type"] == "fact", r
    return facts


def _answers(sc, facts: dict) -> dict:
    out = {}
    for user in USERS:
        for q in QUERIES:
            for mode in ("hybrid", "semantic", "keyword"):
                r = sc.request({"type": "query", "user_id": user, "text": q, "limit": 5, "mode": mode})
                out[(user, q, mode)] = [(m["id"], m["similarity"], m["content"], m["timestamp"]) for m in r["messages"]]
        r = sc.request({"type": "facts", "user_id": user, "include_inactive": True, "text": "work"})
        out[(user, "facts")] = [(f["id"], f["text"], f["active"], round(f.get("similarity", 0), 6)) for f in r["facts"]]
        out[(user, "history")] = sc.request({"type": "fact_history", "fact_id": facts[user]})["events"]
        ents = sc.request({"type": "entities", "user_id": user, "limit": 50})["entities"]
        out[(user, "entities")] = sorted((e["id"], e["name"], e["type"], e["mentions"]) for e in ents)
    return out


def _same(before: dict, after: dict) -> None:
    assert before.keys() == after.keys()
    for key, want in before.items():
        got = after[key]
        if isinstance(key[-1], str) and key[-1] in ("hybrid", "semantic", "keyword"):
            assert [g[0] for g in got] == [w[0] for w in want], key
            for g, w in zip(got, want):
                assert abs(g[1] - w[1]) <= 1e-6 and g[2:] == w[2:], (key, g, w)
        else:
            assert got == want, key


def test_round_trip_three_users_export_forget_import(spawn, tmp_path):
    sc = spawn("--ttl-days", "0")
    facts = _fill(sc)
    before = _answers(sc, facts)
    assert any(len(v) == 2 for k, v in before.items() if k[1] == "history")  # updated: it has a history
    out = tmp_path / "all.jsonl.gz"
    r = sc.request({"type": "export", "out": str(out), "request_id": 5}, 120)
    assert r["type"] == "exported" and r["request_id"] == 5, r
    assert (r["messages"], r["facts"], r["users"]) == (12, 6, 3) and r["graph"] > 0 and out.stat().st_size == r["bytes"]
    for user in USERS:
        assert sc.request({"type": "forget_user", "user_id": user})["deleted"] == 4
    assert sc.request({"type": "stats"})["memories"] == 0
    # forgotten stays forgotten: the backup brings none of it back (every record counted); asked to, it does
    r = sc.request({"type": "import", "path": str(out)}, 120)
    assert (r["messages"], r["facts"], r["users"], r["graph"]) == (0, 0, 0, 0) and r["forgotten"] >= 12 + 6 + 3, r
    assert sc.request({"type": "stats"})["memories"] == 0
    r = sc.request({"type": "import", "path": str(out), "restore_forgotten": True}, 120)
    assert r["type"] == "imported", r
    assert (r["messages"], r["facts"], r["users"], r["skipped"], r["invalid"]) == (12, 6, 3, 0, 0), r
    assert r["forgotten"] == 0 and "restore_forgotten: 3 tombstones cleared" in " ".join(r["notes"]), r
    assert (r["vectors"], r["graph_source"], r["reembedded"]) == ("reused", "restored", 0)
    _same(before, _answers(sc, facts))
    # a second run converges: everything is already there
    r = sc.request({"type": "import", "path": str(out)}, 120)
    assert r["messages"] == 0 and r["facts"] == 0 and r["skipped"] > 12, r
    _same(before, _answers(sc, facts))
    # one user, without vectors, into a fresh data dir: re-embedded, same ranking (same model)
    one = tmp_path / "bob.jsonl"
    r = sc.request({"type": "export", "out": str(one), "user_id": "bob", "vectors": False})
    assert (r["messages"], r["graph"], r["vectors"]) == (4, 0, False), r
    assert sc.shutdown() == 0
    sc2 = spawn("--ttl-days", "0", data_dir=tmp_path / "other")
    r = sc2.request({"type": "import", "path": str(one)}, 120)
    assert (r["messages"], r["reembedded"], r["vectors"], r["graph_source"]) == (4, 6, "reembedded", "rebuilt"), r
    q = sc2.request({"type": "query", "user_id": "bob", "text": "food", "limit": 5, "mode": "semantic"})
    want = before[("bob", "food", "semantic")]
    assert [m["id"] for m in q["messages"]] == [w[0] for w in want]
    assert all(abs(m["similarity"] - w[1]) < 1e-4 for m, w in zip(q["messages"], want))


def _export_file(sc, tmp_path: Path, name: str = "x.jsonl") -> Path:
    now = int(time.time())
    sc.request(
        {
            "type": "store",
            "messages": [
                {"user_id": "u", "content": f"note {i} about the garden", "timestamp": now - i} for i in range(30)
            ],
        }
    )
    path = tmp_path / name
    assert sc.request({"type": "export", "out": str(path)})["messages"] == 30
    return path


def test_bad_files_are_refused_or_reported_and_a_strict_failure_touches_nothing(spawn, tmp_path):
    sc = spawn("--ttl-days", "0")
    good = _export_file(sc, tmp_path)
    lines = good.read_bytes().splitlines()
    sc.request({"type": "forget_user", "user_id": "u"})
    sc.store("keep", "this one stays")
    # a newer format version
    newer = tmp_path / "newer.jsonl"
    newer.write_bytes(b"\n".join([orjson.dumps({**orjson.loads(lines[0]), "format_version": 99}), *lines[1:]]))
    r = sc.request({"type": "import", "path": str(newer)})
    assert r["type"] == "error" and r["code"] == "bad_file" and "newer" in r["message"], r
    # a gzip file cut short: strict refuses it and writes nothing; otherwise what is readable goes in
    gz = tmp_path / "cut.jsonl.gz"
    gz.write_bytes(gzip.compress(good.read_bytes())[:-40])
    r = sc.request({"type": "import", "path": str(gz), "strict": True})
    assert r["type"] == "error" and r["code"] == "bad_file" and "nothing was imported" in r["message"], r
    assert sc.request({"type": "stats"})["memories"] == 1
    # a line of garbage: strict refuses with its line number; otherwise it is skipped and reported
    bad = tmp_path / "garbage.jsonl"
    bad.write_bytes(b"\n".join([*lines[:5], b"\x00\xffnot json at all", *lines[5:]]) + b"\n")
    r = sc.request({"type": "import", "path": str(bad), "strict": True})
    assert r["type"] == "error" and r["code"] == "bad_file" and "line 6" in r["message"], r
    assert sc.request({"type": "stats"})["memories"] == 1
    r = sc.request({"type": "import", "path": str(bad), "restore_forgotten": True})
    assert r["type"] == "imported" and r["messages"] == 30 and r["invalid"] == 1, r
    assert r["errors"][0]["line"] == 6 and "JSON" in r["errors"][0]["message"]
    # on_conflict fail: refused before anything is written
    sc.request({"type": "forget_user", "user_id": "u"})
    sc.request({"type": "store", "messages": [{"user_id": "u", "content": "x", "timestamp": 1}]})
    partial = tmp_path / "partial.jsonl"
    partial.write_bytes(b"\n".join([lines[0], *lines[1:11], lines[-1]]) + b"\n")
    assert sc.request({"type": "import", "path": str(partial), "restore_forgotten": True})["messages"] == 10
    r = sc.request({"type": "import", "path": str(good), "on_conflict": "fail"})
    assert r["type"] == "error" and r["code"] == "conflict" and "already stored" in r["message"], r
    assert sc.request({"type": "stats"})["memories"] == 12
    r = sc.request({"type": "import", "path": str(good), "on_conflict": "overwrite"})
    assert (r["messages"], r["overwritten"]) == (30, 10), r
    assert sc.request({"type": "stats"})["memories"] == 32
    # not there at all
    r = sc.request({"type": "import", "path": str(tmp_path / "nope.jsonl")})
    assert r["code"] == "bad_file" and "cannot read" in r["message"]
    assert sc.alive()


def _import_with_header(sc, tmp_path: Path, change) -> dict:
    """Export user u's 30 memories, rewrite the file's header with `change(header)`, forget u, import the file:
    the import's answer."""
    lines = _export_file(sc, tmp_path).read_bytes().splitlines()
    header = orjson.loads(lines[0])
    change(header)
    changed = tmp_path / "changed.jsonl"
    changed.write_bytes(b"\n".join([orjson.dumps(header), *lines[1:]]) + b"\n")
    sc.request({"type": "forget_user", "user_id": "u"})
    return sc.request({"type": "import", "path": str(changed), "restore_forgotten": True}, 120)


def test_another_models_file_is_reembedded_and_says_so(spawn, tmp_path):
    def other_model(header: dict) -> None:
        header["model"]["digest"] = "0" * 64

    r = _import_with_header(spawn("--ttl-days", "0"), tmp_path, other_model)
    assert r["type"] == "imported" and (r["messages"], r["reembedded"], r["vectors"]) == (30, 30, "reembedded"), r
    assert any("000000000000" in n and "re-embedded" in n for n in r["notes"]), r


def test_vectors_made_with_another_passage_prefix_are_reembedded_and_say_so(spawn, tmp_path):
    """The header says what shaped its vectors besides the weights (the passage prefix, pooling, normalisation):
    vectors made with a prefix this sidecar does not put before stored text are not reused."""

    def prefixed(header: dict) -> None:
        assert header["model"]["embedding"] == {"pooling": "mean", "normalize": True, "passage_prefix": ""}
        header["model"]["embedding"]["passage_prefix"] = "passage: "

    r = _import_with_header(spawn("--ttl-days", "0"), tmp_path, prefixed)
    assert r["type"] == "imported" and (r["messages"], r["reembedded"], r["vectors"]) == (30, 30, "reembedded"), r
    assert any("passage prefix" in n and "re-embedded" in n for n in r["notes"]), r


def test_a_file_from_the_model_shipped_before_keeps_its_vectors(spawn, tmp_path):
    from sidecar.embedding.model import FUSED_FP16_ONNX

    def older(header: dict) -> None:
        assert set(header["model"]) == {"name", "dim", "digest", "embedding"}
        header["model"]["digest"] = FUSED_FP16_ONNX
        del header["model"]["embedding"]  # written before the header said its settings: mean, normalised, no prefix

    r = _import_with_header(spawn("--ttl-days", "0"), tmp_path, older)
    assert r["type"] == "imported" and (r["messages"], r["reembedded"], r["vectors"]) == (30, 0, "reused"), r


def test_plain_json_lines_import_once_even_when_run_twice(sidecar, tmp_path):
    path = tmp_path / "plain.jsonl"
    lines = [
        {"user_id": "p", "content": f"plain message {i} about sailing", "timestamp": 1700000000 + i, "username": "Pat"}
        for i in range(20)
    ]
    lines.insert(3, {"user_id": "p", "timestamp": 5})
    path.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    r = sidecar.request({"type": "import", "path": str(path)}, 120)
    assert (r["format"], r["messages"], r["invalid"], r["errors"][0]["line"]) == ("plain", 20, 1, 4), r
    assert any("older than --ttl-days" in n for n in r["notes"])  # the default TTL would expire them
    r = sidecar.request({"type": "import", "path": str(path)}, 120)
    assert (r["messages"], r["skipped"]) == (0, 20), r
    q = sidecar.request({"type": "query", "user_id": "p", "text": "sailing", "limit": 3})
    assert len(q["messages"]) == 3 and q["messages"][0]["username"] == "Pat"


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sidecar", *args], capture_output=True, cwd=str(ROOT), timeout=timeout)


def test_cli_import_leaves_without_the_interpreters_teardown(spawn, tmp_path):
    """Regression: after a complete `import` the process died of SIGABRT (exit -6) in about one run in six, in
    Python's teardown, where the native libraries' threads were stopped. The command now leaves as the sidecar
    does (frozen.exit_now) once the data dir is closed and the answer written: an atexit hook never runs, and
    every one of several imports exits 0 with its answer."""
    sc = spawn("--ttl-days", "0")
    path = _export_file(sc, tmp_path)
    assert sc.shutdown() == 0
    hook = (
        "import atexit, sys; atexit.register(lambda: sys.stderr.write('TEARDOWN\\n')); "
        "from sidecar.runtime.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    for i in range(6):
        p = subprocess.run(
            [
                sys.executable,
                "-c",
                hook,
                "import",
                "--data-dir",
                str(tmp_path / f"fresh{i}"),
                str(path),
                "--ttl-days",
                "0",
            ],
            capture_output=True,
            cwd=str(ROOT),
            timeout=120,
        )
        assert p.returncode == 0, (i, p.returncode, p.stderr[-2000:])
        assert orjson.loads(p.stdout)["messages"] == 30 and b"TEARDOWN" not in p.stderr


def test_cli_refuses_a_data_dir_a_live_sidecar_holds_then_exports_and_imports(spawn, tmp_path):
    data = tmp_path / "data"
    sc = spawn("--ttl-days", "0", data_dir=data)
    _export_file(sc, tmp_path)
    out = tmp_path / "cli.jsonl.gz"
    p = _cli("export", "--data-dir", str(data), "--out", str(out))
    assert p.returncode == 1 and b"in use by another memory-sidecar" in p.stderr, p.stderr
    assert not out.exists() and p.stdout == b""
    assert sc.shutdown() == 0
    p = _cli("export", "--data-dir", str(data), "--out", str(out), "--user", "u")
    assert p.returncode == 0, p.stderr
    r = orjson.loads(p.stdout)
    assert r["type"] == "exported" and r["messages"] == 30
    fresh = tmp_path / "fresh"
    p = _cli("import", "--data-dir", str(fresh), str(out), "--on-conflict", "fail", "--strict", "--ttl-days", "0")
    assert p.returncode == 0, p.stderr
    r = orjson.loads(p.stdout)
    assert (r["type"], r["messages"], r["vectors"]) == ("imported", 30, "reused")
    p = _cli("import", "--data-dir", str(fresh), str(out), "--on-conflict", "fail")
    assert p.returncode == 1 and b"conflict" in p.stderr and p.stdout == b""
    p = _cli("import", "--data-dir", str(fresh), "--on-conflict", "sometimes", str(out))
    assert p.returncode == 2
    sc2 = spawn("--ttl-days", "0", data_dir=fresh)
    assert sc2.request({"type": "stats"})["memories"] == 30


def test_an_interrupted_import_finished_by_a_rerun_equals_one_clean_import(spawn, tmp_path):
    # a crash mid-import leaves a prefix of the file written (batches go in in file order, each durable):
    # modelled by importing a cut copy first, then the whole file with the default `skip`
    sc = spawn("--ttl-days", "0")
    facts = _fill(sc)
    out = tmp_path / "all.jsonl"
    sc.request({"type": "export", "out": str(out)})
    assert sc.shutdown() == 0
    lines = out.read_bytes().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"\n".join(lines[:9]) + b"\n" + lines[9][:50])  # 8 messages and half a line
    clean = spawn("--ttl-days", "0", data_dir=tmp_path / "clean")
    clean.request({"type": "import", "path": str(out)})
    want = _answers(clean, facts)
    resumed = spawn("--ttl-days", "0", data_dir=tmp_path / "resumed")
    r = resumed.request({"type": "import", "path": str(cut)})
    assert (r["messages"], r["invalid"], len(r["errors"])) == (8, 1, 2), r  # the half line, and no `end`
    r = resumed.request({"type": "import", "path": str(out)})
    assert (r["messages"], r["skipped"], r["invalid"]) == (4, 8, 0), r
    _same(want, _answers(resumed, facts))
    assert resumed.request({"type": "stats"})["memories"] == clean.request({"type": "stats"})["memories"] == 12


def test_export_and_import_reject_bad_requests_and_keep_serving(sidecar, tmp_path):
    (tmp_path / "adir").mkdir()
    bad = [
        ({"type": "export"}, "field `out` is required"),
        ({"type": "export", "out": "  "}, "out"),
        ({"type": "export", "out": 5}, "out"),
        ({"type": "export", "out": "x.jsonl", "vectors": "yes"}, "vectors"),
        ({"type": "export", "out": "x\u0000.jsonl"}, "NUL"),
        ({"type": "export", "out": str(tmp_path / "adir")}, "directory"),
        ({"type": "import"}, "field `path` is required"),
        ({"type": "import", "path": "x.jsonl", "on_conflict": "sometimes"}, "on_conflict"),
        ({"type": "import", "path": "x.jsonl", "strict": 1}, "strict"),
    ]
    for request, words in bad:
        r = sidecar.request(request)
        assert r["type"] == "error" and r["code"] == "invalid_request" and words in r["message"], (request, r)
    # a folder that cannot be made is the file system's refusal: io_error, and nothing left behind
    r = sidecar.request({"type": "export", "out": "/proc/no-such-dir/x.jsonl"})
    assert r["type"] == "error" and r["code"] == "io_error" and "cannot write" in r["message"], r
    r = sidecar.request({"type": "import", "path": str(tmp_path / "adir")})
    assert r["code"] == "bad_file" and "directory" in r["message"], r
    assert not list(tmp_path.glob("**/*.partial"))
    assert sidecar.request({"type": "ping"})["type"] == "pong"
