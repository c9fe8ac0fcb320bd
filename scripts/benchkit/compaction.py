"""What a compaction of the messages table costs: a table of --rows memories over --users users (random
vectors, built as `ab` builds it: one fragment and its BTREE indexes), --appends one-row commits as a stream of
stores leaves them, then LanceDB's `optimize` (the sidecar's compaction) run until a pass finds nothing to fold
in. Each --io-buffer-mb runs in a fresh process on a fresh copy (Lance reads LANCE_DEFAULT_IO_BUFFER_SIZE once
per process; the sidecar's default is 32 MiB, storage/lancedb_import.py): each pass's seconds, peak RSS over
the process's RSS before it, and the fragments after it.

LanceDB 0.40's `optimize` compacts with Lance's default target of 1,048,576 rows per fragment and takes no
options: every fragment below it is a candidate, and Lance merges neighbouring candidates covered by the same
indexes. New rows are first merged among themselves (not yet indexed), then indexed; the next pass rewrites
them with the big fragment, the whole table (docs/performance.md, "Compaction's read-ahead bounded").

    python scripts/bench.py compaction --rows 1000000 --users 10000 --io-buffer-mb 2048 --io-buffer-mb 32
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import ROOT
from .ab import build
from .client import BenchError
from .output import log, print_table, write_json

SUMMARY = "a compaction of the messages table: its time and peak RSS by Lance's scan buffer"

# The child: append, then optimize until nothing changes; each pass's peak is the kernel's own (VmHWM, reset
# before the pass by writing 5 to /proc/self/clear_refs), not a sample.
CHILD = r"""
import json, os, sys, time, uuid
from datetime import timedelta
sys.path.insert(0, os.environ["BENCH_ROOT"])
from sidecar.runtime import native_memory
native_memory.configure()
from sidecar.storage.lancedb_import import import_lancedb
import pyarrow as pa
sys.path.insert(0, os.path.join(os.environ["BENCH_ROOT"], "scripts"))
from benchkit.procfs import status_kib
table = import_lancedb().connect(sys.argv[1]).open_table("messages")
appends = int(sys.argv[2])
sample = table.search().limit(appends).to_arrow()
ids = sample.schema.get_field_index("id")
for i in range(appends):
    table.add(sample.slice(i, 1).set_column(ids, "id", pa.array([str(uuid.uuid4())])))
passes = []
for _ in range(4):
    fragments = table.stats()["fragment_stats"]["num_fragments"]
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    before, t0 = status_kib()["VmRSS"], time.perf_counter()
    table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
    seconds = time.perf_counter() - t0
    passes.append({"seconds": seconds, "peak_over_mib": (status_kib()["VmHWM"] - before) / 1024,
                   "rss_before_mib": before / 1024, "fragments_before": fragments,
                   "fragments_after": table.stats()["fragment_stats"]["num_fragments"]})
    if passes[-1]["fragments_after"] == fragments and len(passes) > 1:
        break
print(json.dumps({"buffer": os.environ["LANCE_DEFAULT_IO_BUFFER_SIZE"], "rows": table.count_rows(), "passes": passes}))
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=100_000, help="memories in the table before the appends")
    parser.add_argument("--users", type=int, default=1_000, help="users they are spread over")
    parser.add_argument("--appends", type=int, default=300, help="one-row commits after the build")
    parser.add_argument(
        "--io-buffer-mb",
        type=int,
        action="append",
        default=None,
        help="Lance's scan buffer for one run (repeat for several; default: 2048 (Lance's own) and 32 (the sidecar's))",
    )
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--json", default="bench-results/compaction.json", help="results file")


def one_run(src: Path, work: Path, appends: int, buffer_mb: int) -> dict[str, Any]:
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(src, work)
    env = {**os.environ, "BENCH_ROOT": str(ROOT), "LANCE_DEFAULT_IO_BUFFER_SIZE": str(buffer_mb << 20)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(work / "lancedb"), str(appends)],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if out.returncode != 0:
        raise BenchError(f"the compaction run failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(args: argparse.Namespace) -> int:
    buffers = args.io_buffer_mb or [2048, 32]
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-compaction-") as tmp:
        src = Path(tmp) / "src"
        log(f"building {args.rows} memories over {args.users} users (random vectors)")
        build(src, args.rows, args.users, args.seed)
        for mb in buffers:
            log(f"{args.appends} appends, then optimize, with a {mb} MiB scan buffer")
            results.append({"io_buffer_mb": mb, **one_run(src, Path(tmp) / "run", args.appends, mb)})
    rows = [
        {
            "scan buffer": f"{r['io_buffer_mb']} MiB",
            "pass": n + 1,
            "fragments": f"{p['fragments_before']} -> {p['fragments_after']}",
            "seconds": round(p["seconds"], 2),
            "peak RSS over start (MiB)": round(p["peak_over_mib"]),
            "RSS before (MiB)": round(p["rss_before_mib"]),
        }
        for r in results
        for n, p in enumerate(r["passes"])
    ]
    print_table(rows)
    write_json(args.json, {"rows": args.rows, "users": args.users, "appends": args.appends, "runs": results})
    return 0
