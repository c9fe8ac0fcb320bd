"""What several test files share that is not a fixture (fixtures are in conftest.py): the scripted LLM
server, the graph story and its batch store, rows for the vector cache and the messages table, the golden
transcripts' replay. Test files import from here, never from one another."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT
from filelock import FileLock

sys.path.insert(0, str(ROOT / "scripts"))
from binarykit import transcripts
from binarykit.transcripts import EXAMPLES, match  # noqa: F401 - for test_golden and test_frozen

# ---------------------------------------------------------- an OpenAI-compatible server (test_llm, test_graph_llm)


class ScriptedLLM:
    """Answers decision calls and extraction calls from two queues of steps. A step is a dict:
    {"json": obj} (content = JSON text), {"content": str}, {"status": int}, {"raw": bytes},
    each optionally with "sleep": seconds before answering. Empty queue: KEEP / no facts."""

    def __init__(self):
        self.decide: deque[dict[str, Any]] = deque()
        self.extract: deque[dict[str, Any]] = deque()
        self.calls: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                kind = "decide" if "EXISTING" in body["messages"][1]["content"] else "extract"
                with outer.lock:
                    outer.calls.append(
                        {
                            "kind": kind,
                            "path": self.path,
                            "body": body,
                            "auth": self.headers.get("Authorization"),
                            "at": time.monotonic(),
                        }
                    )
                    queue = outer.decide if kind == "decide" else outer.extract
                    step = (
                        queue.popleft()
                        if queue
                        else ({"json": {"action": "KEEP"}} if kind == "decide" else {"json": {"facts": []}})
                    )
                time.sleep(step.get("sleep", 0))
                if "status" in step:
                    data, status = b'{"error": {"message": "scripted failure"}}', step["status"]
                elif "raw" in step:
                    data, status = step["raw"], 200
                else:
                    content = step["content"] if "content" in step else json.dumps(step["json"])
                    data = json.dumps(
                        {
                            "id": "x",
                            "object": "chat.completion",
                            "model": body["model"],
                            "choices": [
                                {
                                    "index": 0,
                                    "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content},
                                }
                            ],
                        }
                    ).encode()
                    status = 200
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def count(self, kind: str) -> int:
        with self.lock:
            return sum(1 for c in self.calls if c["kind"] == kind)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# ---------------------------------------------------------------- the graph's story (test_graph_e2e, _names, _rows)

T0 = (int(time.time()) // 60 - 24 * 60) * 60  # a day ago (inside the default TTL): validity is checked to the second


def store_all(sc, user: str, lines: list[str], username: str = "Caroline", **extra) -> list[str]:
    msgs = [
        {
            "user_id": user,
            "username": username,
            "content": c,
            "timestamp": T0 + 60 * i,
            "message_id": f"m{i}",
            "channel_id": "general",
            **extra,
        }
        for i, c in enumerate(lines)
    ]
    r = sc.request({"type": "store", "messages": msgs})
    assert r["type"] == "ok", r
    return r["ids"]


STORY = [
    "I moved to Lisbon last year and I work at Acme Robotics.",
    "My sister Ana visited me in Lisbon with her dog Max.",
    "lol ok",
    "Ana loved the tram rides around Lisbon.",
    "Now I live in Porto, the job at Acme Robotics is over.",
]


# ---------------------------------------------------------- rows for the vector cache (test_vector_cache, test_spill)


def cache_rows(user: str, n: int, start: int = 0, bot_every: int = 0):
    rows = [
        {
            "id": f"{user}-{i}",
            "user_id": user,
            "content": f"m{i}",
            "is_bot": bool(bot_every and i % bot_every == 0),
            "timestamp": float(i),
        }
        for i in range(start, start + n)
    ]
    rng = np.random.default_rng(len(user) + start)
    v = rng.normal(size=(n, 8)).astype(np.float32)
    return rows, v / np.linalg.norm(v, axis=1, keepdims=True)


# ---------------------------------------------------------------- the messages table (test_table_reads, test_graph_*)

DIM = 384
MODEL = {"name": "test-model", "dim": DIM, "digest": "0" * 64}


def table_rows(n: int, user: str = "u", text: str | None = None) -> tuple[list[dict], np.ndarray]:
    """n messages of `user` ("note <i> of <user>", or "<text> <i>") as the messages table takes them, and random
    unit vectors for them."""
    rows = [
        {
            "id": str(uuid.uuid4()),
            "user_id": user,
            "content": f"note {i} of {user}" if text is None else f"{text} {i}",
            "is_bot": False,
            "timestamp": time.time(),
            "message_id": None,
            "channel_id": None,
            "reply_to": None,
            "username": None,
        }
        for i in range(n)
    ]
    v = np.random.default_rng().standard_normal((n, DIM)).astype(np.float32)
    return rows, v / np.linalg.norm(v, axis=1, keepdims=True)


def in_thread(fn) -> tuple[threading.Thread, list]:
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    return t, out


# ---------------------------------------------------------------- golden transcripts (test_golden, test_frozen)


def replay(sc, path: Path) -> None:
    """Run one transcript through a sidecar spawned with wait_ready=False (its first line is `ready`)."""
    transcripts.replay(path, sc.send_raw, sc.recv, timeout=120)
    steps = transcripts.steps(path)
    if steps and steps[-1].get("send", {}).get("type") == "shutdown":
        assert sc.proc.wait(30) == 0


# ---------------------------------------------------------------- the TypeScript client's toolchain (npm fixture)

PACKAGE = ROOT / "clients" / "typescript"
STAMP = PACKAGE / "node_modules" / ".memory-sidecar-installed"  # npm ci deletes node_modules, stamp included
OUTPUT_TAIL = 15_000


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"`{name}` is not on PATH: the TypeScript client's tests need Node.js (>= 18) and npm "
            f"(install them, e.g. `apt-get install nodejs npm`); PATH={os.environ.get('PATH', '')}"
        )
    return path


# npm works in clients/typescript (node_modules, dist/): one test worker at a time there (pytest -n)
NPM_LOCK = FileLock(
    os.path.join(
        tempfile.gettempdir(), f"memory-sidecar-npm-{hashlib.sha256(str(PACKAGE).encode()).hexdigest()[:12]}.lock"
    )
)


def npm_run(args: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    with NPM_LOCK:
        return _run(args, timeout, env)


def _run(args: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {
        **os.environ,
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
        **(env or {}),
    }
    try:
        proc = subprocess.run(args, cwd=PACKAGE, env=full_env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(
            f"`{' '.join(args)}` did not finish within {timeout} s\n--- stdout\n{e.stdout}\n--- stderr\n{e.stderr}"
        )
    assert proc.returncode == 0, (
        f"`{' '.join(args)}` (in {PACKAGE}) exited with {proc.returncode}\n"
        f"--- stdout (tail)\n{proc.stdout[-OUTPUT_TAIL:]}\n--- stderr (tail)\n{proc.stderr[-OUTPUT_TAIL:]}"
    )
    return proc


def install_fingerprint(node: str) -> str:
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        digest.update((PACKAGE / name).read_bytes())
    digest.update(version.encode())
    return digest.hexdigest()


def npm_installed() -> str:
    """npm, after `npm ci` in clients/typescript unless node_modules came from this very lockfile (a stamp)."""
    node = tool("node")
    npm = tool("npm")
    fingerprint = install_fingerprint(node)
    with NPM_LOCK:
        if not (STAMP.exists() and STAMP.read_text().strip() == fingerprint):
            npm_run([npm, "ci"], timeout=300)
            STAMP.write_text(fingerprint + "\n")
    return npm
