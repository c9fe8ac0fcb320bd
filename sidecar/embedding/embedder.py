"""Sentence embeddings: tokenizer + one onnxruntime session, set up by the model's own configs (spec.py).

The ONNX file gives token embeddings; they are pooled (the model's pooling: mean over the attention mask
for all-MiniLM-L6-v2, CLS, max, ...), L2-normalised when the model's pipeline has a Normalize module, and
inputs are truncated at the model's max_seq_length (256 for the default, from sentence_bert_config.json,
not the 128 baked into its tokenizer.json). No fixed padding: texts are sorted by token length and each
batch is padded only to its own longest text. Every caller says whether it embeds a query or a passage
(a stored memory, a fact, a name): models such as e5 want a different prefix on each.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from .mapped import mapped_model
from .model import ModelFiles
from .spec import ModelConfigError

if TYPE_CHECKING:  # onnxruntime is imported when the model loads
    from onnxruntime import NodeArg, RunOptions

Kind = Literal["query", "passage"]

log = logging.getLogger("sidecar.embedder")

BATCH_SIZE = 32
# Padded tokens per ONNX run. Attention memory grows with batch x length^2, and onnxruntime's arena (on: see
# `__init__`) keeps the largest run's memory for reuse, so this budget bounds what the arena holds. Measured
# in-process with the sidecar's malloc settings (int8 model, 2 threads, 4,000 chat lines in stores of 200, then
# 64 texts of 256 tokens), RSS after load 114 MB: budget 1,024 -> 169-177 MB, 512 -> 141-148, 256 -> 131-139,
# at the same rate within noise (466-579 chat lines/s, medians 499 / 487 / 564 over three runs each). 256
# tokens run a long text alone and short chat lines about 8 at a time.
TOKEN_BUDGET = 256
# A text is cut to its first HEAD_CHARS characters (at a space) before tokenizing: the window keeps at most
# 256 tokens, and tokenizing a 1 MB text only to throw all but the first 256 away took about 0.3 s.
HEAD_CHARS = 16_384
# Long memories are cut into windows over pieces of this many characters at a time (`windows`)
PIECE_CHARS = 8_192
PREEMPTED_MAX = 1  # background runs stopped in a row by requests before one runs unstoppable
# Before each background window, wait while requests are in hand (`busy`), up to this long: a request's
# work besides its own embedding (the cache search, its answer) then does not share the cores with a
# window. Under requests that never pause, a window still runs every STEP_ASIDE_MAX.
STEP_ASIDE_MAX = 0.25


class Embedder:
    def __init__(self, files: ModelFiles, threads: int = 2):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.files = files
        self.spec = spec = files.spec
        self.dim = files.dim
        self.max_length = spec.max_length
        try:
            tok = Tokenizer.from_file(str(files.tokenizer))
        except Exception as exc:  # tokenizers raises its own Exception with serde's words, naming no file
            raise ModelConfigError(
                f"{files.tokenizer} is not a tokenizer file the tokenizers library can read ({str(exc)[:200]}): "
                "correct or replace it, or choose another model"
            ) from None
        padding = tok.padding or {}
        self._pad_id = int(padding.get("pad_id", 0)) if padding else _pad_id(tok)
        tok.no_padding()
        tok.enable_truncation(max_length=self.max_length)
        self._tokenizer = tok
        self._prefix = {"query": spec.query_prefix, "passage": spec.passage_prefix}
        # the passage prefix as token ids, put after the first token of long memories' windows (`embed_ids`)
        self._passage_ids = _prefix_ids(tok, spec.passage_prefix)
        self._prefix_tokens = {"query": len(_prefix_ids(tok, spec.query_prefix)), "passage": len(self._passage_ids)}
        # One tokenizer for requests and for long memories' windows, which take it a piece at a time with their
        # own truncation (`windows`): a second one doubled its memory, and a multilingual model's 250,000-token
        # unigram tokenizer alone holds 279 MiB private (multilingual-e5-small, measured in-process).
        self._tok_lock = threading.Lock()
        # Background work (chunks of long memories) runs one small batch at a time, never while a request's
        # embedding runs (see `embed_ids`); one background caller at a time.
        self._run_lock = threading.Lock()
        self._waiting = 0
        self._waiting_lock = threading.Lock()
        self._background: RunOptions | None = None  # the RunOptions of the background run in progress
        self.busy: Callable[[], bool] | None = None  # are requests in hand? (the host's traffic; runtime/app.py)

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        # the second thread's spinning wait (onnxruntime's default), on by decision: off, a saturated soak of
        # 60,000 requests took 12% longer (docs/performance.md, "Background work off the request lock")
        opts.add_session_config_entry("session.intra_op.allow_spinning", "1")
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # onnxruntime's own arena reuses each run's memory for the next. Without it every tensor over the
        # fixed mmap threshold the sidecar sets for glibc (runtime/native_memory.py) was a fresh mmap, page-faulted
        # and zeroed on each run: measured in-process with those malloc settings, stores of 200 chat lines
        # embedded at 327/s without the arena and 529/s with it, one line at a time 2.59 -> 1.76 ms (p50). The
        # arena holds what the largest run needed (TOKEN_BUDGET bounds it) and no more: RSS stayed at 129 MB
        # over 3,000 runs of random shapes (1-40 texts of 3-250 words).
        opts.enable_cpu_mem_arena = True
        opts.log_severity_level = 3
        # the weights mapped from a copy of the file with them kept apart, not copied into the process (mapped.py)
        onnx = mapped_model(files.onnx, files.digest) or files.onnx
        self._session = ort.InferenceSession(str(onnx), opts, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        unknown = self._inputs - {"input_ids", "attention_mask", "token_type_ids"}
        if unknown:
            raise ModelConfigError(
                f"{files.onnx} needs inputs the sidecar does not give ({', '.join(sorted(unknown))}); "
                "export the model with input_ids, attention_mask (and token_type_ids) only"
            )
        out = _token_output(self._session.get_outputs())
        self._pooled = len(out.shape) == 2  # the file pools itself (a sentence_embedding output): use it as it is
        width = out.shape[-1] if isinstance(out.shape[-1], int) else None
        expected = self.dim if self._pooled else spec.word_dim
        if width is not None and expected is not None and width != expected:
            raise ModelConfigError(
                f"{files.onnx} produces {width}-d {'sentence' if self._pooled else 'token'} "
                f"embeddings, but the model's configs say {expected}: the configs and the ONNX "
                "file are of different models"
            )
        self._output = out.name

    def embed(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        """(len(texts), dim) float32 rows in the order given (unit length when the model normalises):
        `kind` says whether they are queries or passages (stored texts)."""
        return self.embed_flagged(texts, kind)[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts, "query")

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts, "passage")

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text], "query")[0]

    def embed_passage(self, text: str) -> np.ndarray:
        return self.embed([text], "passage")[0]

    def embed_flagged(self, texts: Sequence[str], kind: Kind) -> tuple[np.ndarray, list[bool]]:
        """The vectors of `embed`, and for each text whether it may run past the window (it filled the
        window, or was cut to its head): those are the ones worth chunking."""
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32), []
        prefix = self._prefix[kind]
        heads = [_head(t) for t in texts]
        with self._tok_lock:
            encodings = self._tokenizer.encode_batch([prefix + h for h in heads] if prefix else heads)
        ids = [e.ids for e in encodings]
        full = [bool(e.overflowing) or len(h) < len(t) for e, h, t in zip(encodings, heads, texts)]
        with self._waiting_lock:  # background work steps aside meanwhile (`embed_ids`)
            self._waiting += 1
            if self._background is not None:
                self._background.terminate = True
        try:  # requests (and the graph's and facts' own work) still run side by side, as they always did
            return self._embed_ids(ids, TOKEN_BUDGET, prefix_tokens=self._prefix_tokens[kind]), full
        finally:
            with self._waiting_lock:
                self._waiting -= 1

    def _embed_ids(
        self,
        encodings: Sequence[np.ndarray] | Sequence[Sequence[int]],
        budget: int,
        options: object = None,
        prefix_tokens: int = 0,
    ) -> np.ndarray:
        """Vectors of token id lists (special tokens included), length-sorted batches within `budget`.
        `prefix_tokens`: how many tokens after the first are the prompt (left out of the pooling when the
        model's pooling config says include_prompt false)."""
        n = len(encodings)
        out = np.empty((n, self.dim), dtype=np.float32)
        order = sorted(range(n), key=lambda i: len(encodings[i]))
        for idx in self._batches(order, [len(e) for e in encodings], budget):
            width = max(len(encodings[i]) for i in idx)
            ids = np.full((len(idx), width), self._pad_id, dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                e = encodings[i]
                ids[row, : len(e)] = e
                mask[row, : len(e)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run([self._output], feeds, options)[0]
            if self._pooled:
                pooled = hidden.astype(np.float32, copy=False)
            else:
                keep = mask
                if prefix_tokens and not self.spec.include_prompt:
                    keep = mask.copy()
                    keep[:, 1 : 1 + prefix_tokens] = 0
                pooled = pool(hidden, mask, keep, self.spec.pooling)
            if pooled.shape[1] != self.dim:
                raise ModelConfigError(f"{self.files.onnx} gave {pooled.shape[1]}-d vectors, expected {self.dim}")
            if self.spec.normalize:
                pooled = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out[idx] = pooled
        return out

    def windows(self, text: str, size: int, overlap: int) -> tuple[list[tuple[int, int]], list[np.ndarray]]:
        """The text as overlapping windows of `size` tokens (the next starts `size - overlap` tokens on):
        each window's character span [start, end) in `text` and its token ids (int64), [CLS] and [SEP] included
        (`embed_ids` puts the passage prefix after [CLS]). `size` is cut to what the model's window holds
        beside the prefix. A text that fits the window with the prefix gives no window (its own vector covers
        it). The tokenizer cuts them itself (truncation with a stride: each overflowing part repeats `overlap`
        tokens), in calls that release the GIL, over pieces of at most PIECE_CHARS characters cut at a space
        (the request path's tokenizer, lent for one piece at a time):
        each piece but the last leaves its last window to start the next piece, so the windows run on across
        the cut. Tokenized whole, a 1 MB memory's 1,093 windows took +166 MiB at their peak (the tokenizer's
        encodings of every window at once) and held 33 MiB as lists of ints; in pieces, and held as arrays,
        a few MiB (measured in-process, RssAnon)."""
        tok = self._tokenizer
        room = self.max_length - 2 - len(self._passage_ids)
        size = max(8, min(size, room))
        overlap = min(overlap, size // 4)
        spans: list[tuple[int, int]] = []
        ids: list[np.ndarray] = []
        start = 0
        while True:
            end = _piece_end(text, start)
            with self._tok_lock:  # requests' texts wait for a piece at most (a few ms), then are cut as always
                tok.enable_truncation(max_length=size + 2, stride=overlap)
                try:
                    [first] = tok.encode_batch([text[start:end]])
                finally:
                    tok.enable_truncation(max_length=self.max_length)
            parts = [first, *first.overflowing]
            if start == 0 and end == len(text):  # the whole text in one piece: it may fit the window
                tokens = len(first.ids) - 2 + sum(len(p.ids) - 2 - overlap for p in parts[1:])
                if tokens <= room:
                    return [], []
            last = end == len(text) or len(parts) == 1
            kept = parts if last else parts[:-1]
            for p in kept:
                spans.append((start + p.offsets[1][0], start + p.offsets[-2][1]))
                ids.append(np.array(p.ids, dtype=np.int64))
            if end == len(text):
                return spans, ids
            start = end if len(parts) == 1 else start + parts[-1].offsets[1][0]

    def embed_ids(self, windows: Sequence[np.ndarray] | Sequence[Sequence[int]]) -> Iterator[np.ndarray]:
        """Background embedding of token windows, one at a time, yielding each one's vector. A request's
        embedding does not wait behind one: it stops the run in progress (onnxruntime's terminate flag), which
        is then run again, and before each window it steps aside while requests are in hand (up to
        STEP_ASIDE_MAX). After PREEMPTED_MAX stopped runs in a row, one window runs unstoppable, so
        background work still progresses under a steady stream of requests (a request then runs beside that
        one window, 30 ms for 200 tokens here, sharing the CPU with it; it never waits for a lock). Measured
        with a request every 100 ms, two windows per run were stopped nearly every time and 162 windows took 104 s."""
        import onnxruntime as ort

        start, stopped = 0, 0
        while start < len(windows):
            aside_until = time.monotonic() + STEP_ASIDE_MAX
            while self._waiting or (self.busy is not None and time.monotonic() < aside_until and self.busy()):
                time.sleep(0.002)
            with self._run_lock:
                options = ort.RunOptions()
                with self._waiting_lock:
                    if self._waiting:
                        continue
                    if stopped < PREEMPTED_MAX:
                        self._background = options
                window = [int(t) for t in windows[start]]
                window[1:1] = self._passage_ids
                try:
                    vectors = self._embed_ids([window], 1 << 30, options, prefix_tokens=len(self._passage_ids))
                except Exception:
                    if not options.terminate:
                        raise
                    stopped += 1
                    continue
                finally:
                    with self._waiting_lock:
                        self._background = None
            stopped = 0
            start += 1
            yield vectors

    @staticmethod
    def _batches(order: list[int], lengths: list[int], budget: int = TOKEN_BUDGET):
        """Consecutive runs of the length-sorted order, each within BATCH_SIZE and the token budget."""
        batch: list[int] = []
        for i in order:
            if batch and (len(batch) == BATCH_SIZE or (len(batch) + 1) * lengths[i] > budget):
                yield batch
                batch = []
            batch.append(i)
        if batch:
            yield batch


def pool(hidden: np.ndarray, mask: np.ndarray, keep: np.ndarray, modes: tuple[str, ...]) -> np.ndarray:
    """Token embeddings (batch, tokens, width) -> one vector per row, the modes concatenated in order, as
    sentence-transformers' Pooling computes them. `mask`: the attention mask (1 = a real token, padding on the
    right); `keep`: the tokens pooled (the mask less the prompt's tokens when the model says so)."""
    h = hidden.astype(np.float32, copy=False)
    k = keep[:, :, None].astype(np.float32)
    parts = []
    for mode in modes:
        if mode == "cls":
            parts.append(h[:, 0])
        elif mode == "max":
            parts.append(np.where(k > 0, h, np.float32(-1e9)).max(axis=1))
        elif mode in ("mean", "mean_sqrt_len_tokens"):
            total, count = (h * k).sum(axis=1), np.clip(k.sum(axis=1), 1e-9, None)
            parts.append(total / (count if mode == "mean" else np.sqrt(count)))
        elif mode == "weightedmean":
            w = k * np.arange(1, h.shape[1] + 1, dtype=np.float32)[None, :, None]
            parts.append((h * w).sum(axis=1) / np.clip(w.sum(axis=1), 1e-9, None))
        elif mode == "lasttoken":
            last = np.clip(mask.sum(axis=1) - 1, 0, None)
            parts.append(h[np.arange(len(h)), last])
        else:  # spec.py refuses any other at start-up
            raise ModelConfigError(f"unknown pooling {mode!r}")
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)


def _token_output(outputs: list[NodeArg]) -> NodeArg:
    """The session's output to pool: token embeddings (rank 3: last_hidden_state / token_embeddings), else a
    pooled sentence_embedding (rank 2)."""
    by_name = {o.name: o for o in outputs}
    for name in ("last_hidden_state", "token_embeddings"):
        if name in by_name:
            return by_name[name]
    ranked = [o for o in outputs if len(o.shape) == 3] or [o for o in outputs if len(o.shape) == 2]
    if not ranked:
        raise ModelConfigError("the ONNX file has no token-embedding (3-d) or sentence-embedding (2-d) output")
    return ranked[0]


def _pad_id(tok: object) -> int:
    for token in ("[PAD]", "<pad>", "<|endoftext|>"):
        found = tok.token_to_id(token)  # type: ignore[attr-defined]
        if found is not None:
            return int(found)
    return 0


def _prefix_ids(tok: object, prefix: str) -> list[int]:
    """The token ids the prefix adds after the first special token, found as the difference between the
    encodings of a probe text with and without it (so that a tokenizer that joins the prefix's trailing space
    to the next word still gets the ids the full text would get)."""
    if not prefix:
        return []
    probe = "memory"
    plain = tok.encode(probe).ids  # type: ignore[attr-defined]
    full = tok.encode(prefix + probe).ids  # type: ignore[attr-defined]
    tail = len(plain) - 1
    if tail > 0 and full[-tail:] == plain[-tail:] and full[:1] == plain[:1]:
        return full[1 : len(full) - tail]
    return tok.encode(prefix, add_special_tokens=False).ids  # type: ignore[attr-defined]


def _piece_end(text: str, start: int) -> int:
    """Where the piece of `text` that starts at `start` ends: PIECE_CHARS on, cut at the last whitespace in
    its second half (else there), or the end of the text."""
    end = start + PIECE_CHARS
    if end >= len(text):
        return len(text)
    for i in range(end, start + PIECE_CHARS // 2, -1):
        if text[i].isspace():
            return i
    return end


def _head(text: str) -> str:
    """The text, or its first HEAD_CHARS characters cut at the last space (more than the window holds)."""
    if len(text) <= HEAD_CHARS:
        return text
    cut = text.rfind(" ", HEAD_CHARS // 2, HEAD_CHARS)
    return text[: cut if cut > 0 else HEAD_CHARS]
