"""The HTTP face against the pipe, same machine, same run: throughput and store/query latency with 1, 8 and 32
clients at once.

Two fresh data dirs: one served by a pipe sidecar (`python -m sidecar`), one by `python -m sidecar serve`.
Each client is a thread with its own user: it sends `--requests` requests one after the other, stores and
queries alternating (a query asks for a note the client stored). Over HTTP each client has its own keep-alive
connection (http.client) and POSTs /v1/command; over the pipe the clients share the one pipe, each waiting for
its own answer (matched by request_id), as the threads of one bot process would. Printed per transport and
client count:

  req/s        requests answered per second (wall time, all clients)
  store/query  p50 and p99 latency of one request, ms, as its client saw it
  errors       answers that were not the expected type (target 0)
  lost         stores acknowledged and not found by a query for them at the end (target 0)
  rss MiB      the server's resident memory after the level (flat across levels: no leak)

    python scripts/bench.py http                              # 1, 8, 32 clients x 100 requests
    python scripts/bench.py http --clients 1,8 --requests 40  # smaller
    python scripts/bench.py http --clients 32,32,32 --requests 104 --queries-only   # rss over 10,000 requests
"""

from __future__ import annotations

import argparse
import http.client
import queue
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .client import BenchError, Sidecar, add_sidecar_arguments, dumps, loads
from .output import log, print_table, write_json
from .procfs import rss_kib
from .timing import pct

SUMMARY = "the HTTP face (serve) against the pipe: req/s, store/query p50/p99 with 1, 8, 32 clients"

Call = Callable[[dict[str, Any]], dict[str, Any]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clients", default="1,8,32", help="client counts, comma-separated")
    parser.add_argument("--requests", type=int, default=100, help="requests per client per level")
    parser.add_argument(
        "--transports", default="pipe,http", help="which to run, comma-separated (http alone: a memory run)"
    )
    parser.add_argument(
        "--queries-only",
        action="store_true",
        help="each client stores one note, then only queries it: the data hardly grows, so the rss shows leaks",
    )
    add_sidecar_arguments(parser, timeout=300.0)
    parser.add_argument("--json", type=Path, help="write the figures here too")


class PipeMux:
    """Many threads over one pipe sidecar: each request carries its own request_id; a reader thread hands
    every answer to the thread waiting for it."""

    def __init__(self, sidecar: Sidecar):
        self.sidecar = sidecar
        self.lock = threading.Lock()
        self.waiting: dict[Any, queue.Queue] = {}
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                answer = self.sidecar.read()
            except (BenchError, OSError, ValueError):  # the pipe closed at the end
                return
            box = self.waiting.pop(answer.get("request_id"), None)
            if box is not None:
                box.put(answer)

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        box: queue.Queue = queue.Queue()
        with self.lock:
            self.next_id += 1
            rid = self.next_id
            self.waiting[rid] = box
            self.sidecar.send({**request, "request_id": rid})
        return box.get(timeout=self.sidecar.timeout)


class Served:
    """`python -m sidecar serve` on a free port: its ready line, url and token."""

    def __init__(self, python: str, data_dir: Path, log_path: Path):
        self._log = open(log_path, "ab")
        cmd = [
            python,
            "-m",
            "sidecar",
            "serve",
            "--data-dir",
            str(data_dir),
            "--ttl-days",
            "0",
            "--listen",
            "127.0.0.1:0",
        ]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._log)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise BenchError(f"serve exited ({self.proc.wait()}) before its ready line; see {log_path}")
        ready = loads(line)
        if ready.get("type") != "ready":
            raise BenchError(f"serve did not start: {ready}")
        url = urlsplit(ready["url"])
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 0
        self.token = Path(ready["token_file"]).read_text().strip()

    def client(self) -> Call:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=300)
        head = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}

        def call(request: dict[str, Any]) -> dict[str, Any]:
            conn.request("POST", "/v1/command", body=dumps(request), headers=head)
            return loads(conn.getresponse().read())

        return call

    def stop(self) -> int:
        self.proc.terminate()
        code = self.proc.wait(120)
        self._log.close()
        return code


def level(calls: list[Call], requests: int, tag: str, queries_only: bool = False) -> dict[str, Any]:
    """Every client's requests, all clients at once; latencies, errors, and what each stored."""
    stores: list[float] = []
    queries: list[float] = []
    errors: list[Any] = []
    stored: dict[str, list[str]] = {}
    lock = threading.Lock()

    def client(n: int, call: Call) -> None:
        user = f"{tag}-{n}"
        mine: list[str] = []
        for i in range(requests):
            store = i == 0 if queries_only else i % 2 == 0
            asked = 0 if queries_only else i - 1
            request = (
                {"type": "store", "user_id": user, "content": f"note {i} from client {n}: the {i}th thing I did today"}
                if store
                else {"type": "query", "user_id": user, "text": f"the {asked}th thing I did", "limit": 5}
            )
            t0 = time.perf_counter()
            try:
                answer = call(request)
            except Exception as exc:  # a dropped connection, a timeout: counted, the client goes on
                answer = {"type": "exception", "message": repr(exc)}
            took = time.perf_counter() - t0
            with lock:
                (stores if store else queries).append(took)
                if answer.get("type") != ("ok" if store else "results"):
                    errors.append(answer)
                elif store:
                    mine.append(answer["id"])
        stored[user] = mine

    threads = [threading.Thread(target=client, args=(n, call)) for n, call in enumerate(calls)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    lost = 0
    for user, ids in stored.items():
        found = calls[0]({"type": "query", "user_id": user, "text": "thing I did today", "limit": max(len(ids), 1)})
        lost += len(set(ids) - {m["id"] for m in found.get("messages", [])})
    return {"wall": wall, "stores": stores, "queries": queries, "errors": errors, "lost": lost}


def row(transport: str, clients: int, result: dict[str, Any], rss_mib: float) -> dict[str, Any]:
    s, q = pct(result["stores"]), pct(result["queries"])
    n = len(result["stores"]) + len(result["queries"])
    return {
        "transport": transport,
        "clients": clients,
        "requests": n,
        "req/s": n / result["wall"],
        "store p50": s["p50_ms"],
        "store p99": s["p99_ms"],
        "query p50": q["p50_ms"],
        "query p99": q["p99_ms"],
        "errors": len(result["errors"]),
        "lost": result["lost"],
        "rss MiB": rss_mib,
    }


def run(args: argparse.Namespace) -> int:
    counts = [int(c) for c in args.clients.split(",") if c.strip()]
    transports = [t.strip() for t in args.transports.split(",") if t.strip() in ("pipe", "http")]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        base = Path(tmp)
        log("starting the pipe sidecar and the HTTP server")
        pipe = Sidecar(base / "pipe", python=args.python, stderr=base / "pipe.log", timeout=args.timeout)
        pipe.wait_ready()
        served = Served(args.python, base / "http", base / "http.log")
        try:
            mux = PipeMux(pipe)
            for n, clients in enumerate(counts):
                for transport in transports:
                    log(f"{transport}: {clients} clients x {args.requests} requests")
                    calls: list[Call] = (
                        [mux.call] * clients if transport == "pipe" else [served.client() for _ in range(clients)]
                    )
                    result = level(calls, args.requests, f"{transport}{clients}-{n}", args.queries_only)
                    pid = pipe.pid if transport == "pipe" else served.proc.pid
                    rows.append(row(transport, clients, result, rss_kib(pid) / 1024))
                    for err in result["errors"][:3]:
                        log(f"  error: {str(err)[:200]}")
        finally:
            code = served.stop()
            pipe.finish(120)
        if code != 0:
            raise BenchError(f"serve exited {code} on SIGTERM (expected 0); see its log")
    mix = "one store, then queries" if args.queries_only else "stores and queries alternating"
    print_table(rows, title=f"HTTP face vs pipe, {args.requests} requests per client ({mix})")
    for clients in dict.fromkeys(counts) if len(transports) == 2 else ():
        by = {r["transport"]: r for r in rows if r["clients"] == clients}
        ratio = by["http"]["query p50"] / by["pipe"]["query p50"] if by["pipe"]["query p50"] else float("nan")
        print(f"{clients} clients: query p50 http/pipe = {ratio:.2f}x")
    if args.json:
        write_json(args.json, rows)
    return 0 if all(r["errors"] == 0 and r["lost"] == 0 for r in rows) else 1
