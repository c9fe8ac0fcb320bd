"""What a vector must be before it reaches a table or a score: finite float32 values (LanceDB refuses a
commit holding a NaN, and an infinity or a 1e30 wins every cosine), and, for a model that normalises its
vectors, of length 1 (a length far from 1 is not one of its vectors). Pure."""

from __future__ import annotations

import numpy as np

NORM_TOLERANCE = 0.01  # |length - 1| a normalising model's vector may show (float32 rounding is about 1e-6)
MAX_NORM = 1e6  # a model that does not normalise: longer than this is no vector of it (a dot product stays finite)


def vector_problems(vectors: np.ndarray, normalized: bool = True) -> list[str | None]:
    """Per row of a (n, dim) array: why it is no usable vector (a sentence), or None."""
    v = np.asarray(vectors)
    if v.ndim == 1:
        v = v.reshape(1, -1)
    finite = np.isfinite(v).all(axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.linalg.norm(np.where(np.isfinite(v), v, 0).astype(np.float64), axis=1)
    out: list[str | None] = []
    for ok, norm in zip(finite.tolist(), norms.tolist()):
        if not ok:
            out.append("vector has values that are not finite numbers (NaN or infinity)")
        elif normalized and abs(norm - 1.0) > NORM_TOLERANCE:
            out.append(f"vector has length {norm:.6g}, not 1 as this model's vectors are (normalised)")
        elif not normalized and norm > MAX_NORM:
            out.append(f"vector has length {norm:.6g}, over {MAX_NORM:g}")
        else:
            out.append(None)
    return out


def all_finite(vectors: np.ndarray) -> bool:
    return bool(np.isfinite(vectors).all())
