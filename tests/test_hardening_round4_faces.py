"""Round four's faults on the model and batch faces (issue 64), over the real process with the real model: a
model config asking for more tokens than the model has positions, a --model-dir that holds no model, a
mismatch error that names the setting that differs (also mid `--reembed`), and the users of one `context` or
`recall` request bounded. (The MCP face's answers to what it cannot parse: tests/test_mcp.py.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson

from sidecar.embedding.model import ASSETS_DIR

# a text of well over 512 tokens (each word one token of the bundled tokenizer)
LONG = " ".join(f"garden{i % 7} apple river stone" for i in range(300))


def model_dir(tmp_path: Path, **sbert: object) -> Path:
    """The bundled model's files in a folder of their own, with `sbert` over its sentence_bert_config.json."""
    folder = tmp_path / "model"
    shutil.copytree(ASSETS_DIR, folder)
    config = json.loads((folder / "sentence_bert_config.json").read_text())
    (folder / "sentence_bert_config.json").write_text(json.dumps({**config, **sbert}))
    return folder


def startup_error(spawn, *args: str, **kwargs) -> str:
    sc = spawn(*args, wait_ready=False, **kwargs)
    line = sc.recv(120)
    assert line["type"] == "error" and line["code"] == "startup_failed", line
    assert sc.proc.wait(30) == 1
    return line["message"]


# ---------------------------------------------------------------- 6: max_seq_length above the model's positions


def test_max_seq_length_over_the_models_positions_is_clamped_with_a_warning(spawn, tmp_path):
    """Before: `ready`, then every store over 512 tokens failed with an `internal` ONNX error and was lost."""
    sc = spawn("--model-dir", str(model_dir(tmp_path, max_seq_length=1024)))
    stored = sc.request({"type": "store", "user_id": "u", "content": LONG})
    assert stored["type"] == "ok", stored
    assert sc.request({"type": "stats"})["model"]["max_length"] == 512
    found = sc.request({"type": "query", "user_id": "u", "text": "apple river stone", "mode": "semantic"})
    assert [m["id"] for m in found["messages"]] == [stored["id"]]
    err = sc.stderr()
    assert "max_seq_length 1024" in err and "at most 512 tokens" in err, err
    assert sc.shutdown() == 0


# ---------------------------------------------------------------- 7: a --model-dir without a model


def test_a_model_dir_without_a_model_fails_start_up_naming_the_path(spawn, tmp_path):
    """Before: `ready` on the bundled model, nothing on stderr: a typo built a store with another model."""
    missing = tmp_path / "no-such-model"
    message = startup_error(spawn, "--model-dir", str(missing))
    assert str(missing) in message and "does not exist" in message, message

    no_onnx = tmp_path / "configs-only"
    no_onnx.mkdir()
    shutil.copy(ASSETS_DIR / "config.json", no_onnx / "config.json")
    message = startup_error(spawn, "--model-dir", str(no_onnx))
    assert str(no_onnx) in message and "model.onnx" in message and "holds no model" in message, message

    a_file = tmp_path / "model.onnx"
    a_file.write_bytes((ASSETS_DIR / "model.onnx").read_bytes())
    message = startup_error(spawn, "--model-dir", str(a_file))
    assert str(a_file) in message and "not a directory" in message, message

    no_tokenizer = tmp_path / "other-model"  # an ONNX file the sidecar does not know, without its tokenizer
    no_tokenizer.mkdir()
    (no_tokenizer / "model.onnx").write_bytes((ASSETS_DIR / "model.onnx").read_bytes() + b"\0")
    shutil.copy(ASSETS_DIR / "config.json", no_tokenizer / "config.json")
    message = startup_error(spawn, "--model-dir", str(no_tokenizer))
    assert str(no_tokenizer) in message and "tokenizer.json" in message, message
    assert not (tmp_path / "data" / "meta.json").exists()  # no store was made with another model


# ---------------------------------------------------------------- 8: the mismatch names the setting


def test_a_passage_prefix_change_is_refused_naming_the_prefix(spawn, tmp_path):
    """Before: "made with model all-MiniLM-L6-v2 (dim 384, sha256 2252...), but this sidecar runs all-MiniLM-L6-v2
    (dim 384, sha256 2252...)": the same words twice."""
    sc = spawn("--passage-prefix", "passage: ")
    sc.store("u", "We adopted a grey cat")
    assert sc.shutdown() == 0
    message = startup_error(spawn)
    assert 'passage prefix "passage: " (this sidecar: "")' in message, message
    assert '--passage-prefix "passage: "' in message and "--reembed" in message, message
    assert "sha256" not in message  # the same file: not named as a difference


def test_mid_reembed_the_advice_names_the_settings_of_the_move(spawn, tmp_path):
    """A store being moved by --reembed to the "passage: " prefix, started with the settings it is moved from:
    the advice gave `--model <the model already running>`; it names the prefix the move needs."""
    sc = spawn("--passage-prefix", "passage: ")
    sc.store("u", "We adopted a grey cat")
    assert sc.shutdown() == 0
    meta_path = tmp_path / "data" / "meta.json"
    meta = orjson.loads(meta_path.read_bytes())
    before = {**meta["model"], "embedding": {**meta["model"]["embedding"], "passage_prefix": ""}}
    meta["reembed"] = {"from": before, "total": 1, "done": 0, "facts": False, "phase": "embed", "started_at": 0}
    meta_path.write_bytes(orjson.dumps(meta))
    (tmp_path / "data" / "reembed.ids").write_text("x")
    message = startup_error(spawn)
    assert "being moved by --reembed" in message, message
    assert 'passage prefix "passage: " (this sidecar: "")' in message, message
    assert 'Start with --passage-prefix "passage: " to let it finish' in message, message
    assert "--model " not in message, message


# ---------------------------------------------------------------- 10: users per context / recall request


def test_users_per_context_and_recall_are_bounded_with_a_clear_error(spawn):
    """Before: 1,000 users in one `context` (the --max-batch of a batch store) held every other request for 28 s.
    Now --max-users (default 100): one over is `too_large` naming the option, answered before any user's work;
    at the limit every user is answered; the process goes on."""
    sc = spawn()
    sc.request({"type": "remember", "user_id": "u7", "text": "Plays the violin", "category": "pattern"})
    at_limit = {f"u{i}": None for i in range(100)}
    over = {**at_limit, "u100": None}
    for kind in ("recall", "context"):
        r = sc.request({"type": kind, "users": over, "text": "music", "request_id": kind})
        assert (r["type"], r["code"], r["request_id"]) == ("error", "too_large", kind), r
        assert "101 users" in r["message"] and "100" in r["message"] and "--max-users" in r["message"], r
    recalled = sc.request({"type": "recall", "users": at_limit, "text": "music"})
    assert len(recalled["users"]) == 100 and recalled["users"][7]["facts"][0]["text"] == "Plays the violin"
    block = sc.request({"type": "context", "users": at_limit, "text": "music"})
    assert block["type"] == "context" and "Plays the violin" in block["text"], block
    assert sc.request({"type": "ping"})["type"] == "pong"
    assert sc.shutdown() == 0
    raised = spawn("--max-users", "1000", data_dir=sc.data_dir)  # hosts that need more say so
    assert raised.request({"type": "recall", "users": over, "limit": 1})["type"] == "recall"
    assert raised.shutdown() == 0
