"""all-MiniLM-L6-v2 sentence embeddings: tokenizer + one onnxruntime session.

Mean pooling over the attention mask, L2 normalisation, truncation at the model's
max_seq_length (256, from sentence_bert_config.json, not the 128 baked into tokenizer.json),
and no fixed padding: texts are sorted by token length and each batch is padded only to its
own longest text.
"""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

from .model import ModelFiles

log = logging.getLogger("sidecar.embedder")

BATCH_SIZE = 32
# Padded tokens per ONNX run. Attention memory grows with batch x length^2: 32 texts of 256 tokens
# peaked near 1 GB RSS (measured). 64 texts of 256 tokens raised the peak by 127-181 MB with a
# budget of 2048 (8 per run), 53-66 MB with 1024 (4 per run) and 0-8 MB with 512, at the same
# throughput within noise; 1024 still runs short chat messages (about 25 tokens) 32 at a time.
TOKEN_BUDGET = 1024


class Embedder:
    def __init__(self, files: ModelFiles, threads: int = 2):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.files = files
        self.dim = files.dim
        self.max_length = files.max_seq_length
        tok = Tokenizer.from_file(str(files.tokenizer))
        tok.no_padding()
        tok.enable_truncation(max_length=self.max_length)
        self._tokenizer = tok

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # The arena keeps the peak of every batch shape forever (RSS past 1.5 GB after 256-token
        # batches, measured); without it, memory goes back to the allocator after each run.
        opts.enable_cpu_mem_arena = False
        opts.log_severity_level = 3
        self._session = ort.InferenceSession(str(files.onnx), opts, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        out = self._session.get_outputs()[0]
        if out.shape and out.shape[-1] != self.dim:
            raise ValueError(f"{files.onnx} produces {out.shape[-1]}-d outputs, expected {self.dim}")
        self._output = out.name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, unit-length rows, in the order given."""
        n = len(texts)
        out = np.empty((n, self.dim), dtype=np.float32)
        if n == 0:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(n), key=lambda i: len(encodings[i].ids))
        for idx in self._batches(order, [len(e.ids) for e in encodings]):
            width = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                e = encodings[i].ids
                ids[row, : len(e)] = e
                mask[row, : len(e)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run([self._output], feeds)[0]
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[idx] = pooled / np.clip(norms, 1e-12, None)
        return out

    @staticmethod
    def _batches(order: list[int], lengths: list[int]):
        """Consecutive runs of the length-sorted order, each within BATCH_SIZE and TOKEN_BUDGET."""
        batch: list[int] = []
        for i in order:
            if batch and (len(batch) == BATCH_SIZE or (len(batch) + 1) * lengths[i] > TOKEN_BUDGET):
                yield batch
                batch = []
            batch.append(i)
        if batch:
            yield batch

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]
