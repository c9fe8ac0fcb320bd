"""Import and export of hostile files over the pipe: devices, a FIFO with no writer, a directory, a path in
the data dir, and gzip files of at most --max-gz bytes that expand (newlines, `{}` lines, one valid line
repeated, two alternating, one endless line); then, for scale, a file of distinct real chat messages
(LoCoMo turns as plain JSON Lines) of the same compressed size. Each row: the answer, the seconds until
it and until a `ping` sent right behind it, the sidecar's CPU seconds meanwhile (Linux), and the bytes
it wrote on stderr. The bounds of issue 60: 1 s for the refusals, 10 s for any file of at most 100 KB
compressed, 1 MB of stderr per import.

    python scripts/bench.py hostile-files              # about a minute on 2 cores
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .client import Sidecar, add_sidecar_arguments
from .locomo import DEFAULT_DIR as LOCOMO
from .output import log, print_table, write_json

SUMMARY = "import/export of devices, FIFOs, the data dir and small gzip files that expand (issue 60's bounds)"
VALID = b'{"user_id":"bomb","content":"hello there","timestamp":1700000000}\n'
BOMBS = {  # name -> (the line, repeated as often as fits in --max-gz bytes of gzip -9)
    "newlines": b"\n",
    "{} lines": b"{}\n",
    "one valid line repeated": VALID,
    "two valid lines alternating": VALID + VALID.replace(b"hello there", b"goodbye now"),
    "one endless line": b"x" * 64,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-gz", type=int, default=100_000, help="bytes of gzip each file is made up to")
    parser.add_argument("--locomo", type=Path, default=LOCOMO, help="LoCoMo conversation files (real messages)")
    add_sidecar_arguments(parser, timeout=600.0)
    parser.add_argument("--json", type=Path, help="write all results here")


def _fill(unit: bytes, budget: int) -> bytes:
    """The gzip -9 of `unit` repeated as often as fits in `budget` bytes (doubling, then bisecting)."""
    lo, hi = 1, 2
    while len(gzip.compress(unit * hi, 9)) <= budget:
        lo, hi = hi, hi * 2
    while hi - lo > max(1, lo // 100):
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if len(gzip.compress(unit * mid, 9)) <= budget else (lo, mid)
    return gzip.compress(unit * lo, 9)


def _locomo(folder: Path, budget: int) -> bytes | None:
    """Distinct real chat turns as plain JSON Lines, gzip -9, as many as fit in `budget` bytes."""
    lines: list[bytes] = []
    for path in sorted(folder.glob("conv-*.json")):
        data = json.loads(path.read_text())
        conversation = data.get("conversation", data)  # the file is the conversation, or holds it
        for session in conversation.values():
            for turn in session if isinstance(session, list) else []:
                if isinstance(turn, dict) and turn.get("text"):
                    lines.append(
                        json.dumps(
                            {
                                "user_id": "locomo",
                                "content": turn["text"],
                                "timestamp": 1700000000,
                                "username": turn.get("speaker"),
                            }
                        ).encode()
                        + b"\n"
                    )
    if not lines:
        return None
    lo, hi = 1, len(lines)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if len(gzip.compress(b"".join(lines[:mid]), 9)) <= budget else (lo, mid - 1)
    return gzip.compress(b"".join(lines[:lo]), 9)


def _cpu(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _case(sc: Sidecar, log_path: Path, name: str, request: dict[str, Any], size: int | None) -> dict[str, Any]:
    err0, cpu0, t0 = log_path.stat().st_size, _cpu(sc.pid), time.perf_counter()
    sc.send(request)
    sc.send({"type": "ping"})
    answer = sc.read()
    t_answer = time.perf_counter() - t0
    sc.check(sc.read(), "ping", "pong")
    t_ping = time.perf_counter() - t0
    outcome = answer.get("code") or f"{answer['type']} ({answer.get('messages', 0)} messages)"
    log(f"{name}: {outcome} in {t_answer:.2f} s: {str(answer.get('message', ''))[:160]}")
    return {
        "case": name,
        "gz KB": size / 1000 if size else None,
        "answer": outcome,
        "seconds": t_answer,
        "ping s": t_ping,
        "CPU s": _cpu(sc.pid) - cpu0,
        "stderr B": log_path.stat().st_size - err0,
    }


def run(args: argparse.Namespace) -> int:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp_name:
        tmp = Path(tmp_name)
        log_path = tmp / "sidecar.log"
        with Sidecar(tmp / "data", python=args.python, stderr=log_path, timeout=args.timeout, cwd=tmp) as sc:
            sc.wait_ready()
            refusals: list[tuple[str, dict[str, Any]]] = [
                ("directory", {"type": "import", "path": str(tmp)}),
                ("path in the data dir", {"type": "import", "path": str(tmp / "data" / "meta.json")}),
                (
                    "export over the data dir's meta.json",
                    {"type": "export", "out": str(tmp / "data" / "meta.json"), "overwrite": True},
                ),
            ]
            if sys.platform != "win32":
                os.mkfifo(tmp / "fifo")
                refusals[:0] = [
                    ("/dev/zero", {"type": "import", "path": "/dev/zero"}),
                    ("FIFO, no writer", {"type": "import", "path": str(tmp / "fifo")}),
                ]
            for name, request in refusals:
                rows.append(_case(sc, log_path, name, request, None))
            files = {name: _fill(unit, args.max_gz) for name, unit in BOMBS.items()}
            real = _locomo(args.locomo, args.max_gz)
            if real is not None:
                files["distinct real chat messages (LoCoMo)"] = real
            for name, data in files.items():
                path = tmp / f"{len(rows)}.jsonl.gz"
                path.write_bytes(data)
                rows.append(_case(sc, log_path, name, {"type": "import", "path": str(path)}, len(data)))
            sc.shutdown()
    print_table(rows, title=f"hostile files: each gzip made up to {args.max_gz:,} bytes", floatfmt=".2f")
    if args.json:
        write_json(args.json, rows)
    return 0
