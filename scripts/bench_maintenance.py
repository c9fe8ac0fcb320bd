"""Request latency while background maintenance runs: one host sends store and query requests one at
a time (waiting for each answer) for --seconds, under three configurations:

  none     no expiry, default compaction schedule (the baseline)
  compact  a background compaction after every write (--compact-every-writes 1)
  expire   automatic expiry every ~1.8 s, with 20 expired rows to delete each time

and prints median / p99 / max latency per request type. Maintenance blocks a request when its max
is far above the baseline's.

    python scripts/bench_maintenance.py --seconds 20
    python scripts/bench_maintenance.py --configs none,expire --prefill 20000   # a bigger table
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
DAY = 86_400
CONFIGS = {
    "none": ["--ttl-days", "0"],
    "compact": ["--ttl-days", "0", "--compact-every-writes", "1", "--compact-interval-seconds", "0", "--compact-max-duty", "1"],
    "expire": ["--ttl-days", "1", "--cleanup-interval-hours", "0.0005"],
}


def run(name: str, args: list[str], seconds: float, tmp: str, prefill: int = 0) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_SIDECAR_")}
    proc = subprocess.Popen([sys.executable, "-m", "sidecar", "--data-dir", os.path.join(tmp, name), *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=str(ROOT), env=env)
    assert proc.stdin and proc.stdout
    assert orjson.loads(proc.stdout.readline())["type"] == "ready"

    def request(obj: dict) -> dict:
        proc.stdin.write(orjson.dumps(obj) + b"\n")
        proc.stdin.flush()
        return orjson.loads(proc.stdout.readline())

    for start in range(0, prefill, 1000):  # other users' recent memories: a bigger table to compact
        r = request({"type": "store", "messages": [{"user_id": f"bulk-{k % 100}", "content": f"bulk memory {k}"}
                                                   for k in range(start, min(prefill, start + 1000))]})
        assert r["type"] == "ok", r
    old_ts = time.time() - 10 * DAY
    lat: dict[str, list[float]] = {"store": [], "query": []}
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        if i % 40 == 0:
            request({"type": "store", "messages": [{"user_id": "old", "content": f"old {i} {k}", "timestamp": old_ts}
                                                   for k in range(20)]})
        kind = ("store", "query")[i % 2]
        req = ({"type": "store", "user_id": "live", "content": f"live memory {i}"} if kind == "store"
               else {"type": "query", "user_id": "live", "text": "live memory", "limit": 3})
        t0 = time.perf_counter()
        r = request(req)
        lat[kind].append(time.perf_counter() - t0)
        assert r["type"] in ("ok", "results"), r
        i += 1
    proc.stdin.close()
    proc.wait(60)
    return {k: {"median_ms": round(statistics.median(v) * 1000, 1),
                "p99_ms": round(sorted(v)[int(0.99 * len(v))] * 1000, 1),
                "max_ms": round(max(v) * 1000, 1), "n": len(v)} for k, v in lat.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--prefill", type=int, default=0, help="memories stored before timing starts")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-maint-") as tmp:
        for name in args.configs.split(","):
            res = run(name, CONFIGS[name], args.seconds, tmp, args.prefill)
            print(name, " ".join(f"{k}: median {v['median_ms']} p99 {v['p99_ms']} max {v['max_ms']} ms (n={v['n']})"
                                 for k, v in res.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
