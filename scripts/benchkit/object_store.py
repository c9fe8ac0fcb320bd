"""Object-store mode against a local data dir on the same machine: start-up to `ready`, batch ingest
(--messages generated messages in batches of 1000), sequential single `store`s and `query`s
(p50/p95/p99 over the pipe, semantic and hybrid, every user queried once before), and, for the
object store, the lag until a store acknowledged by one sidecar is returned by a second sidecar's
query over the same location.

The object store is a moto S3 server on 127.0.0.1 started here (`pip install 'moto[server]'`, in the
test extra), or any S3-compatible endpoint with --endpoint and a bucket you made (credentials from
AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY). moto keeps objects in memory in this process: it has no
network or disk latency, so the object-store rows show the sidecar's own extra round trips (commit
before acknowledging, version checks), a floor for a real store; add the round-trip time of yours.

    python scripts/bench.py object-store                      # 5,000 messages: about two minutes
    python scripts/bench.py object-store --endpoint http://127.0.0.1:9000 --bucket mem   # e.g. MinIO
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from .client import BenchError, Sidecar, add_sidecar_arguments
from .output import log, print_table, write_json
from .timing import pct
from .workload import fill, make_message, make_question, query_every_user, user_id

SUMMARY = "object-store data dir (s3://, moto on loopback or --endpoint) against a local one: store, query, ingest"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--messages", type=int, default=5_000, help="messages batch-stored before the timed requests")
    parser.add_argument("--users", type=int, default=50, help="users the messages are spread over")
    parser.add_argument("--requests", type=int, default=200, help="sequential single stores, and queries per mode")
    parser.add_argument(
        "--lag-samples", type=int, default=20, help="stores whose visibility in a second sidecar is timed"
    )
    parser.add_argument("--refresh-seconds", type=float, default=2.0, help="the sidecars' --refresh-seconds")
    parser.add_argument("--endpoint", help="an S3-compatible endpoint to use instead of a moto server on 127.0.0.1")
    parser.add_argument("--bucket", help="with --endpoint: an existing bucket (a fresh prefix is used in it)")
    parser.add_argument("--seed", type=int, default=11)
    add_sidecar_arguments(parser, timeout=600.0)
    parser.add_argument("--json", type=Path, help="write all results here")


def _moto() -> tuple[Any, str, str]:
    try:
        import boto3
        from moto.server import ThreadedMotoServer
    except ImportError:
        raise BenchError("needs moto's server: pip install 'moto[server]' (or give --endpoint and --bucket)") from None
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id="bench", aws_secret_access_key="bench", region_name="us-east-1"
    ).create_bucket(Bucket="bench-memory")
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"})
    return server, endpoint, "bench-memory"


def _requests(sc: Sidecar, rng: random.Random, n: int, users: int) -> dict[str, dict[str, float]]:
    stores, queries, hybrid = [], [], []
    for _ in range(n):
        _, t = sc.timed(
            {"type": "store", "user_id": user_id(rng.randrange(users)), "content": make_message(rng, False)}, "ok"
        )
        stores.append(t)
    for _ in range(n):
        q = {"type": "query", "user_id": user_id(rng.randrange(users)), "text": make_question(rng), "limit": 5}
        queries.append(sc.timed(q, "results")[1])
        hybrid.append(sc.timed({**q, "mode": "hybrid"}, "results")[1])
    return {"store": pct(stores), "query": pct(queries), "hybrid query": pct(hybrid)}


def _lag(a: Sidecar, b: Sidecar, samples: int, rng: random.Random) -> dict[str, float]:
    """Seconds from a's acknowledgement of a store to b's first query that returns it (polled every 50 ms)."""
    lags = []
    for i in range(samples):
        user = f"lag-{i}"
        b.request({"type": "query", "user_id": user, "text": "x", "limit": 1}, "results")  # b caches the user
        a.request({"type": "store", "user_id": user, "content": make_message(rng, False)}, "ok")
        t0 = time.perf_counter()
        while not b.request({"type": "query", "user_id": user, "text": "x", "limit": 1}, "results")["messages"]:
            if time.perf_counter() - t0 > 60:
                raise b.fail("a store was not visible in the second sidecar within 60 s")
            time.sleep(0.05)
        lags.append(time.perf_counter() - t0)
    return pct(lags)


def _measure(
    where: str | Path, args: argparse.Namespace, tmp: Path, label: str, flags: list[str]
) -> list[dict[str, Any]]:
    rng = random.Random(args.seed)
    with Sidecar(where, flags, python=args.python, stderr=tmp / f"{label}.log", timeout=args.timeout) as sc:
        ready_s, _ = sc.wait_ready()
        log(f"{label}: ready in {ready_s:.1f} s; ingesting {args.messages} messages")
        ingest = fill(sc, rng, args.messages, args.users, 1000, quiet=True)
        sc.compact()
        query_every_user(sc, args.users, rng)  # as after the start-up warm-up: every user in the cache
        log(f"{label}: {ingest['msgs_per_s']:.0f} msg/s; {args.requests} stores and queries")
        lat = _requests(sc, rng, args.requests, args.users)
        rows = [
            {"data dir": label, "measure": "start-up to ready", "value": ready_s * 1000, "unit": "ms"},
            {"data dir": label, "measure": "ingest (batches of 1000)", "value": ingest["msgs_per_s"], "unit": "msg/s"},
        ]
        for name, p in lat.items():
            rows.append(
                {
                    "data dir": label,
                    "measure": f"{name} p50 / p95 / p99",
                    "value": p["p50_ms"],
                    "p95": p["p95_ms"],
                    "p99": p["p99_ms"],
                    "unit": "ms",
                }
            )
        if str(where).startswith("s3://") and args.lag_samples:
            with Sidecar(where, flags, python=args.python, stderr=tmp / f"{label}-b.log", timeout=args.timeout) as b:
                b.wait_ready()
                p = _lag(sc, b, args.lag_samples, rng)
                rows.append(
                    {
                        "data dir": label,
                        "measure": "store in one sidecar -> seen by another",
                        "value": p["p50_ms"],
                        "p95": p["p95_ms"],
                        "p99": p["max_ms"],
                        "unit": "ms (p99 column: max)",
                    }
                )
                b.shutdown()
        sc.shutdown()
    return rows


def run(args: argparse.Namespace) -> int:
    server = None
    if args.endpoint:
        if not args.bucket:
            raise BenchError("--endpoint needs --bucket (an existing bucket)")
        endpoint, bucket = args.endpoint, args.bucket
    else:
        server, endpoint, bucket = _moto()
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    flags = ["--refresh-seconds", str(args.refresh_seconds), "--graph", "false"]
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-object-store-") as tmp_name:
            tmp = Path(tmp_name)
            rows += _measure(tmp / "local", args, tmp, "local disk", flags)
            uri = f"s3://{bucket}/bench-{uuid.uuid4().hex[:8]}"
            rows += _measure(
                uri, args, tmp, "object store" if args.endpoint else "object store (moto, loopback)", flags
            )
    finally:
        if server is not None:
            server.stop()
    print_table(
        rows,
        title=f"object-store: {args.messages} messages over {args.users} users, {args.requests} "
        f"sequential requests each, refresh {args.refresh_seconds:g} s, graph off",
    )
    if args.json:
        write_json(args.json, {"endpoint": endpoint if args.endpoint else "moto on 127.0.0.1", "rows": rows})
    return 0
