"""Percentiles of latencies: the one summary every subcommand reports from."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

PERCENTILES = (50, 95, 99)


def pct(values_s: Iterable[float], method: str = "linear") -> dict[str, float]:
    """n, p50/p95/p99, mean, min and max in milliseconds of latencies given in seconds.

    method "linear" interpolates between the two nearest samples (numpy's default; its p50 is the median);
    "rank" takes the sample at index int(p / 100 * n) of the sorted values, as the soak's intervals and the
    p99s of `maintenance` and `ab` have always been read. No values: n 0 and zeros.
    """
    a = np.sort(np.asarray(list(values_s), dtype=np.float64) * 1000.0)
    if not a.size:
        return {"n": 0, **{f"p{p}_ms": 0.0 for p in PERCENTILES}, "mean_ms": 0.0, "min_ms": 0.0, "max_ms": 0.0}
    if method == "rank":

        def at(p: float) -> float:
            return float(a[min(a.size - 1, int(p / 100 * a.size))])
    elif method == "linear":

        def at(p: float) -> float:
            return float(np.percentile(a, p))
    else:
        raise ValueError(f"unknown percentile method {method!r}")
    return {
        "n": int(a.size),
        **{f"p{p}_ms": at(p) for p in PERCENTILES},
        "mean_ms": float(a.mean()),
        "min_ms": float(a[0]),
        "max_ms": float(a[-1]),
    }
