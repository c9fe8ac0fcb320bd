#!/usr/bin/env python3
"""A model folder with int8 weights, made once from a float model's folder, for `--model-dir` and
`build_binary.py --model-dir` (build time; the sidecar never runs this):

    python scripts/quantize_model.py SNAPSHOT_DIR OUT_DIR
    memory-sidecar --model intfloat/multilingual-e5-small --model-dir OUT_DIR
    python scripts/build_binary.py --model intfloat/multilingual-e5-small --model-dir OUT_DIR

SNAPSHOT_DIR is the float model's folder (`model.onnx` or `onnx/model.onnx`, `tokenizer.json` and the
sentence-transformers configs: a huggingface-hub snapshot). OUT_DIR gets the configs and tokenizer as they are
and a `model.onnx` quantised with onnxruntime's own tool (`onnxruntime.quantization.matmul_nbits_quantizer`):

- every MatMul with a constant weight becomes MatMulNBits: 8 bits, blocks of 32, symmetric, accuracy level 4
  (int8 compute with each token's activations scaled on their own, block by block, so a text's vector never
  depends on the other texts of its batch), as the bundled all-MiniLM-L6-v2 is built (scripts/build_model.py);
- the token and position embedding tables (a Gather from a constant) become GatherBlockQuantized, 4 bits in
  blocks of 32 (the tool quantises a Gather to 4 bits only), which is most of the size: multilingual-e5-small's
  250,000 x 384 table is 384 MB in fp32, 54 MB in 4 bits.

Not onnxruntime's `quantize_dynamic`: its DynamicQuantizeLinear takes one activation scale per run, so a vector
depends on the other texts in its batch (tests/test_embedder.py refuses such a model). The vectors of the
result are checked against the float file's before it is written: the lowest cosine over a few lines in eight
languages, and a text alone against the same text in a batch. Needs `onnx` and `onnx-ir` (the `build-model`
extra, or `pip install onnx onnx-ir`). A model stored with the float file has other vectors: a data dir moves
between them with `--reembed` (docs/models.md).
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

CHECK_TEXTS = [
    "hello world, how was the hiking trip last weekend?",
    "Ich spiele gern Gitarre, meistens am Abend",
    "我喜欢在周末去爬山",
    "Мой брат живёт в Москве и работает врачом",
    "猫を二匹飼っています",
    "나는 아침마다 커피를 마셔요",
    "वह हर सुबह क्रिकेट खेलता है",
    "أشرب القهوة كل صباح قبل العمل",
]
MIN_COSINE = 0.99


def source_onnx(folder: Path) -> Path:
    for rel in ("model.onnx", "onnx/model.onnx"):
        if (folder / rel).is_file():
            return folder / rel
    raise SystemExit(f"{folder} holds neither model.onnx nor onnx/model.onnx")


def quantize(src: Path, dst: Path) -> None:
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer

    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.WARNING)  # a line a node
    model = onnx.load(str(src))
    for op, bits, axis in (("MatMul", 8, 0), ("Gather", 4, 1)):
        config = DefaultWeightOnlyQuantConfig(
            block_size=32,
            is_symmetric=True,
            accuracy_level=4,
            op_types_to_quantize=(op,),
            quant_axes=((op, axis),),
            bits=bits,
        )
        q = MatMulNBitsQuantizer(
            model,
            bits=bits,
            block_size=32,
            is_symmetric=True,
            accuracy_level=4,
            op_types_to_quantize=(op,),
            quant_axes=((op, axis),),
            algo_config=config,
        )
        q.process()
        model = q.model.model
    onnx.save_model(model, str(dst))


def check(float_dir: Path, quant_dir: Path, name: str | None) -> float:
    """The lowest cosine between the two folders' vectors of CHECK_TEXTS; raises when a text alone and in a
    batch get different vectors from the quantised model."""
    import numpy as np

    from sidecar.embedding.loading import ModelLoad

    def vectors(folder: Path) -> tuple[np.ndarray, np.ndarray]:
        e = ModelLoad(folder, True, None, 2, name).embedder()
        batch = e.embed_passages(CHECK_TEXTS)
        alone = np.stack([e.embed_passages([t])[0] for t in CHECK_TEXTS])
        return batch, alone

    ref, _ = vectors(float_dir)
    batch, alone = vectors(quant_dir)
    if float(np.min(np.sum(batch * alone, axis=1))) < 0.9999:
        raise SystemExit("the quantised model's vectors depend on their batch: not usable (see the docstring)")
    return float(np.min(np.sum(ref * batch, axis=1)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", type=Path, help="the float model's folder (a huggingface-hub snapshot)")
    ap.add_argument("out", type=Path, help="the folder to write (must not exist)")
    ap.add_argument("--model", help="the model's name, as given to --model (how its configs are read)")
    args = ap.parse_args(argv)
    if args.out.exists():
        raise SystemExit(f"{args.out} exists: give a new folder")
    src = source_onnx(args.source)
    with tempfile.TemporaryDirectory(prefix="quantize-", dir=args.out.parent) as tmp:
        work = Path(tmp) / "model"
        shutil.copytree(
            args.source, work, symlinks=False, ignore=shutil.ignore_patterns("onnx", "*.onnx", "*.onnx_data")
        )
        print(f"quantising {src} ({src.stat().st_size / 1e6:.0f} MB) ...", file=sys.stderr, flush=True)
        quantize(src, work / "model.onnx")
        lowest = check(args.source, work, args.model)
        if lowest < MIN_COSINE:
            raise SystemExit(f"the quantised model's vectors are too far from the float model's (cosine {lowest:.4f})")
        work.rename(args.out)
    size = (args.out / "model.onnx").stat().st_size
    print(f"{args.out}: model.onnx {size / 1e6:.1f} MB; lowest cosine to the float model {lowest:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
