"""Export and import against the batch ingest rate: --messages generated messages batch-stored (the
ingest rate), exported over the pipe (with vectors, gzip and plain; without vectors), imported into a
fresh data dir with the vectors reused, and a plain JSON Lines file of --reembed-rows messages imported
(re-embedded, the path from another system). Each row: messages, seconds, messages/s, file size, and
the sidecar's peak RSS (VmHWM) after the step.

    python scripts/bench.py portable                        # 20,000 messages: a few minutes
    python scripts/bench.py portable --messages 100000      # the 100k figure (about 10 minutes)
    python scripts/bench.py portable --forgotten 100000     # only: an import of 100,000 forgotten ids

--forgotten N writes a file of N tombstones (deleted memories) and the N messages they cover (plus 100 that no
tombstone covers), imports it into a fresh data dir (the tombstones are written, the covered messages skipped
without being embedded), then again (the tombstones known: none written, every covered message skipped).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from .client import Sidecar, add_sidecar_arguments
from .output import log, print_table, write_json
from .workload import fill, make_message, user_id

SUMMARY = "export and import (vectors reused, re-embedded) against the batch ingest rate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--messages", type=int, default=20_000, help="messages stored, exported and imported")
    parser.add_argument("--users", type=int, default=100, help="users the messages are spread over")
    parser.add_argument(
        "--reembed-rows", type=int, default=3_000, help="plain JSON Lines messages imported (re-embedded)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--forgotten", type=int, default=0, metavar="N", help="only the forgotten-ids import")
    add_sidecar_arguments(parser, timeout=3600.0)
    parser.add_argument("--json", type=Path, help="write all results here")


def _row(step: str, n: int, seconds: float, sc: Sidecar, size: int | None = None) -> dict[str, Any]:
    hwm = sc.vm_status().get("VmHWM", 0) / 1024
    log(f"{step}: {n} messages in {seconds:.1f} s ({n / seconds:.0f}/s)")
    return {
        "step": step,
        "messages": n,
        "seconds": seconds,
        "msg/s": n / seconds,
        "file MiB": (size or 0) / 2**20,
        "peak RSS MiB": hwm,
    }


def _export(sc: Sidecar, out: Path, vectors: bool) -> tuple[dict[str, Any], float]:
    resp, t = sc.timed({"type": "export", "out": str(out), "vectors": vectors}, "exported")
    return resp, t


def _graph_built(sc: Sidecar) -> float:
    """Wait until the graph builder has taken in every stored message (so that nothing competes with the
    timed steps, and the export carries the whole graph); the seconds waited."""
    t0 = time.perf_counter()
    while sc.request({"type": "health"}, "health")["graph"]["queue"]:
        time.sleep(1.0)
    return time.perf_counter() - t0


def forgotten(args: argparse.Namespace) -> int:
    """An import of N forgotten ids (tombstones first, then the messages they cover): twice."""
    import orjson

    n, kept, now = args.forgotten, 100, int(time.time())
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-forgotten-") as tmp_name:
        tmp = Path(tmp_name)
        path = tmp / "forgotten.jsonl"
        header = {
            "kind": "header",
            "format": "memory-sidecar-export",
            "format_version": 1,
            "product_version": "bench",
            "created_at": now,
            "user_id": None,
            "vectors": False,
            "model": {"name": "bench", "dim": 384, "digest": "bench"},
            "schema_version": 4,
            "graph": False,
        }
        with path.open("wb") as f:
            f.write(orjson.dumps(header) + b"\n")
            for i in range(n):
                f.write(orjson.dumps({"kind": "tombstone", "of": "memory", "id": f"m{i}", "at": now}) + b"\n")
            for i in range(n + kept):
                f.write(
                    orjson.dumps(
                        {
                            "kind": "message",
                            "id": f"m{i}",
                            "user_id": user_id(i % 100),
                            "content": f"note number {i} about the garden",
                            "timestamp": now - 60,
                        }
                    )
                    + b"\n"
                )
            f.write(orjson.dumps({"kind": "end", "counts": {"tombstone": n, "message": n + kept}}) + b"\n")
        with Sidecar(tmp / "data", python=args.python, stderr=tmp / "data.log", timeout=args.timeout) as sc:
            sc.wait_ready()
            for step in ("first import (tombstones written)", "again (tombstones known)"):
                r, t = sc.timed({"type": "import", "path": str(path)}, "imported")
                log(f"{step}: {r['forgotten']} forgotten, {r['tombstones']} tombstones, {r['messages']} messages")
                rows.append(
                    {
                        "step": step,
                        "records": 2 * n + kept,
                        "forgotten": r["forgotten"],
                        "tombstones": r["tombstones"],
                        "messages": r["messages"],
                        "seconds": t,
                        "records/s": (2 * n + kept) / t,
                        "peak RSS MiB": sc.vm_status().get("VmHWM", 0) / 1024,
                    }
                )
            sc.shutdown()
    print_table(rows, floatfmt=".1f")
    if args.json:
        write_json(args.json, {"rows": rows})
    return 0


def run(args: argparse.Namespace) -> int:
    if args.forgotten:
        return forgotten(args)
    rng = random.Random(args.seed)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-portable-") as tmp_name:
        tmp = Path(tmp_name)
        with Sidecar(tmp / "source", python=args.python, stderr=tmp / "source.log", timeout=args.timeout) as sc:
            sc.wait_ready()
            ingest = fill(sc, rng, args.messages, args.users, 1000, quiet=True)
            rows.append(_row("batch store (ingest)", args.messages, ingest["seconds"], sc))
            log(f"graph built {_graph_built(sc):.0f} s after the ingest")
            for name, vectors in (("all.jsonl.gz", True), ("all.jsonl", True), ("novec.jsonl.gz", False)):
                resp, t = _export(sc, tmp / name, vectors)
                label = (
                    f"export {'with' if vectors else 'without'} vectors ({'gzip' if name.endswith('gz') else 'plain'})"
                )
                rows.append(_row(label, resp["messages"], t, sc, resp["bytes"]))
            sc.shutdown()
        with Sidecar(tmp / "target", python=args.python, stderr=tmp / "target.log", timeout=args.timeout) as sc:
            sc.wait_ready()
            resp, t = sc.timed({"type": "import", "path": str(tmp / "all.jsonl.gz")}, "imported")
            assert resp["vectors"] == "reused" and resp["messages"] == args.messages, resp
            rows.append(_row("import, vectors reused (gzip)", resp["messages"], t, sc))
            log(f"graph settled {_graph_built(sc):.1f} s after the import")
            sc.shutdown()
        plain = tmp / "plain.jsonl"
        now = time.time()
        with open(plain, "wb") as f:
            for i in range(args.reembed_rows):
                f.write(
                    b'{"user_id":"%s","content":"%s","timestamp":%.3f}\n'
                    % (user_id(i % args.users).encode(), make_message(rng, False).encode(), now - i)
                )
        with Sidecar(tmp / "plain", python=args.python, stderr=tmp / "plain.log", timeout=args.timeout) as sc:
            sc.wait_ready()
            resp, t = sc.timed({"type": "import", "path": str(plain)}, "imported")
            rows.append(_row("import plain JSON Lines (re-embedded)", resp["messages"], t, sc, plain.stat().st_size))
            sc.shutdown()
    print_table(rows, title=f"portable: {args.messages} messages over {args.users} users (batch ingest of 1000)")
    if args.json:
        write_json(args.json, {"messages": args.messages, "rows": rows})
    return 0
