"""The benchmarks behind `python scripts/bench.py SUBCOMMAND`: one module per subcommand, and the pieces
they share:

  client    the sidecar as a child process over its pipes (one request at a time, or pipelined)
  timing    percentiles of latencies (`pct`)
  output    the table printer, progress lines on stderr, JSON files
  workload  seeded chat messages and questions, batch fill, conversation lengths
  procfs    RSS from /proc (VmRSS/VmHWM, resident memory by kind of mapping)

Not an entry point: run `python scripts/bench.py --help`.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
