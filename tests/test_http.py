"""The HTTP face (`memory-sidecar serve`, docs/http.md) through a real process and real sockets: any command on
/v1/command and the seed's routes, the token, the Host check, every status, the bad input of issue 70 (slow
and idle connections, a body too large or without end, not JSON, the wrong shape, a client gone mid-answer),
8 clients at once, SIGTERM and `shutdown` (exit 0, nothing acknowledged lost), a second server on one data dir."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
from conftest import WINDOWS, Sidecar, posix_only

SERVE = [sys.executable, "-m", "sidecar", "serve"]
REQUEST_TIMEOUT = 2  # --request-timeout of the module's server: slow clients are cut after 2 s
MAX_LINE = 2_000_000  # --max-line-bytes of the module's server: a 3 MB body is over it


def serve(data_dir: Path, *args: str, wait_ready: bool = True) -> Sidecar:
    return Sidecar(data_dir, "--listen", "127.0.0.1:0", *args, command=SERVE, wait_ready=wait_ready)


class Client:
    """One keep-alive connection to a `serve` process, with its token."""

    def __init__(self, ready: dict[str, Any], token: str | None = None):
        url = urlsplit(ready["url"])
        self.host, self.port = url.hostname, url.port
        self.token = Path(ready["token_file"]).read_text().strip() if token is None else token
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)

    def call(
        self, method: str, path: str, body: bytes | dict | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any]]:
        data = orjson.dumps(body) if isinstance(body, dict) else body
        head = {"Authorization": f"Bearer {self.token}", **(headers or {})}
        self.conn.request(method, path, body=data, headers=head)
        response = self.conn.getresponse()
        raw = response.read()
        if response.getheader("connection", "").lower() == "close":
            self.conn.close()
        return response.status, orjson.loads(raw)

    def command(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return self.call("POST", "/v1/command", request)

    def close(self) -> None:
        self.conn.close()


def raw_exchange(ready: dict[str, Any], data: bytes, deadline: float = 60.0) -> bytes:
    """Send bytes on a fresh socket and read until the server closes it."""
    url = urlsplit(ready["url"])
    with socket.create_connection((url.hostname, url.port), timeout=deadline) as sock:
        sock.sendall(data)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sc = serve(
        tmp_path_factory.mktemp("http") / "data",
        "--request-timeout",
        str(REQUEST_TIMEOUT),
        "--max-line-bytes",
        str(MAX_LINE),
    )
    yield sc
    assert sc.alive(), f"the server died; stderr:\n{sc.stderr()}"
    sc.proc.send_signal(signal.SIGTERM if not WINDOWS else signal.CTRL_BREAK_EVENT)
    assert sc.proc.wait(60) == 0, sc.stderr()
    sc._stderr.close()
    for raw in sc.raw_stdout:
        assert isinstance(orjson.loads(raw), dict), raw


@pytest.fixture
def client(server):
    c = Client(server.ready)
    yield c
    c.close()


def test_ready_line_names_the_url_and_a_private_token_file(server):
    ready = server.ready
    assert ready["type"] == "ready" and ready["url"].startswith("http://127.0.0.1:")
    token_file = Path(ready["token_file"])
    assert token_file.parent == server.data_dir and len(token_file.read_text().strip()) >= 32
    if not WINDOWS:
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600


def test_any_command_and_the_seed_routes(client):
    status, ok = client.command(
        {"type": "store", "user_id": "ann", "content": "I adopted a cat named Miso", "request_id": 7}
    )
    assert (status, ok["type"], ok["request_id"]) == (200, "ok", 7)
    status, found = client.command({"type": "query", "user_id": "ann", "text": "pets", "limit": 1})
    assert status == 200 and [m["id"] for m in found["messages"]] == [ok["id"]]
    status, ingested = client.call("POST", "/ingest", {"user_id": "ann", "content": "I moved to Lyon last spring"})
    assert status == 200 and ingested["type"] == "ok"
    status, stats = client.command({"type": "stats"})
    assert status == 200 and stats["memories"] >= 2
    status, recalled = client.call("POST", "/recall", {"user_id": "ann", "text": "where do I live"})
    assert status == 200 and recalled["type"] == "graph_recall", recalled
    status, context = client.call("POST", "/context", {"user_id": "ann", "text": "cat"})
    assert status == 200 and context["type"] == "context" and "Miso" in context["text"], context
    status, health = client.call("GET", "/health")
    assert status == 200 and health["type"] == "health" and health["memories"] >= 2
    # a shortcut takes its own command only
    status, err = client.call("POST", "/ingest", {"type": "query", "user_id": "ann", "text": "x"})
    assert (status, err["code"]) == (400, "invalid_request") and "/v1/command" in err["message"]


def test_token_and_host_are_checked_before_anything(server, client):
    store = {"type": "store", "user_id": "eve", "content": "should never be stored"}
    for token, query in (("", ""), ("not-the-token-" * 3, ""), (client.token, f"?token={client.token}")):
        other = Client(server.ready, token=token)
        status, err = other.call("POST", f"/v1/command{query}", store)
        assert (status, err["type"], err["code"]) == (401, "error", "unauthorized"), err
        other.close()
    status, err = client.call("POST", "/v1/command", store, headers={"Host": "evil.example:80"})
    assert (status, err["code"]) == (421, "bad_host") and "evil.example" in err["message"]
    status, err = client.call("GET", "/no/such/route")
    assert (status, err["code"]) == (404, "not_found")
    # no CORS unless --allow-origin: a page of another origin cannot read an answer
    client.conn.request(
        "POST",
        "/v1/command",
        body=b'{"type":"ping"}',
        headers={"Authorization": f"Bearer {client.token}", "Origin": "http://evil.example"},
    )
    answer = client.conn.getresponse()
    answer.read()
    assert answer.status == 200 and answer.getheader("access-control-allow-origin") is None
    other = Client(server.ready, token="")  # a 404 is no way to probe the routes without the token
    assert other.call("GET", "/no/such/route")[0] == 401
    other.close()
    assert client.command({"type": "query", "user_id": "eve", "text": "stored"})[1]["messages"] == []


def test_every_error_has_its_status_and_the_pipes_error_object(server, client, tmp_path):
    cases = [
        (b"this is not json", 400, "invalid_json"),
        (b"[1, 2]", 400, "invalid_request"),
        (orjson.dumps({"type": "store", "user_id": "bob"}), 400, "invalid_request"),
        (orjson.dumps({"type": "no_such_command"}), 400, "unknown_type"),
        (orjson.dumps({"type": "delete", "user_id": "bob", "id": "no-such-id"}), 404, "not_found"),
        (orjson.dumps({"type": "store", "user_id": "bob", "content": "x" * 1_500_000}), 413, "too_large"),
    ]
    for body, status, code in cases:
        got, err = client.call("POST", "/v1/command", body)
        assert (got, err["type"], err["code"]) == (status, "error", code), (body[:60], err)
        assert set(err) <= {"type", "code", "message", "request_id"} and err["message"]
    out = tmp_path / "export.jsonl"
    assert client.command({"type": "export", "out": str(out)})[0] == 200
    status, err = client.command({"type": "export", "out": str(out)})
    assert (status, err["code"]) == (409, "conflict")
    status, err = client.call("GET", "/v1/command")
    assert (status, err["code"]) == (405, "invalid_request")


def test_a_body_over_the_line_limit_gets_413_and_the_server_goes_on(server, client):
    big = b'{"type":"store","user_id":"big","content":"' + b"y" * 3_000_000 + b'"}'
    conn = http.client.HTTPConnection(client.host, client.port, timeout=60)
    conn.putrequest("POST", "/v1/command")
    conn.putheader("Authorization", f"Bearer {client.token}")
    conn.putheader("Content-Length", str(len(big)))
    conn.endheaders()
    try:
        conn.send(big)  # the server answers before reading it all, and closes
    except (BrokenPipeError, ConnectionResetError):
        pass
    response = conn.getresponse()
    assert response.status == 413 and orjson.loads(response.read())["code"] == "too_large"
    conn.close()
    # chunked, so no Content-Length tells the size: cut while reading
    chunked = b"".join(
        b"%x\r\n%s\r\n" % (len(part), part) for part in (big[i : i + 500_000] for i in range(0, len(big), 500_000))
    )
    head = (
        f"POST /v1/command HTTP/1.1\r\nHost: 127.0.0.1:{client.port}\r\nAuthorization: Bearer {client.token}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    try:
        answer = raw_exchange(server.ready, head + chunked + b"0\r\n\r\n")
    except ConnectionResetError:
        answer = b"HTTP/1.1 413"  # reset after the answer, before we read it: the status is checked below
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert client.command({"type": "stats"})[0] == 200
    assert client.command({"type": "query", "user_id": "big", "text": "y"})[1]["messages"] == []


def test_slow_and_idle_clients_are_cut_and_others_served(server, client):
    ready = server.ready
    url = urlsplit(ready["url"])
    # a chunked body that never ends: 408 once --request-timeout has passed
    head = (
        f"POST /v1/command HTTP/1.1\r\nHost: 127.0.0.1:{url.port}\r\nAuthorization: Bearer {client.token}\r\n"
        'Transfer-Encoding: chunked\r\n\r\n5\r\n{"typ'
    ).encode()
    answer = raw_exchange(ready, head)
    assert answer.startswith(b"HTTP/1.1 408") and b"--request-timeout" in answer, answer
    # 1,000 connections opened and left idle, and a slowloris sending a header byte every half second
    idle = [socket.create_connection((url.hostname, url.port), timeout=60) for _ in range(1000)]
    slow = socket.create_connection((url.hostname, url.port), timeout=60)
    cut = threading.Event()

    def loris() -> None:
        try:
            for byte in b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 1000:
                slow.sendall(bytes([byte]))
                if cut.wait(0.5):
                    return
        except OSError:
            return

    sender = threading.Thread(target=loris)
    sender.start()
    try:
        fresh = Client(ready)  # served meanwhile
        status, ok = fresh.command({"type": "store", "user_id": "idle", "content": "served beside idle sockets"})
        assert (status, ok["type"]) == (200, "ok")
        fresh.close()
        slow.settimeout(60)
        answer = b""
        while chunk := slow.recv(4096):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 408"), answer
        for sock in idle[:20]:  # closed by the server too
            sock.settimeout(60)
            assert sock.recv(4096).startswith(b"HTTP/1.1 408")
    finally:
        cut.set()
        sender.join()
        slow.close()
        for sock in idle:
            sock.close()
    assert client.command({"type": "ping"}) == (200, {"type": "pong"})


def test_a_client_gone_mid_answer_leaves_the_server_serving(server, client):
    url = urlsplit(server.ready["url"])
    body = orjson.dumps({"type": "store", "user_id": "gone", "content": "the client left before the answer"})
    for _ in range(5):
        sock = socket.create_connection((url.hostname, url.port))
        sock.sendall(
            (
                f"POST /v1/command HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {client.token}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode()
            + body
        )
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST on close
        sock.close()
    assert client.command({"type": "ping"}) == (200, {"type": "pong"})
    deadline = time.monotonic() + 60  # the stores run to their end although nobody reads the answers
    while client.command({"type": "stats"})[1]["memories"] < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    status, found = client.command({"type": "query", "user_id": "gone", "text": "client left", "limit": 10})
    assert status == 200 and found["messages"], found


def test_keep_alive_and_pipelined_requests_are_answered_in_order(server, client):
    one = orjson.dumps({"type": "ping", "request_id": 1})
    two = orjson.dumps({"type": "stats", "request_id": 2})
    head = f"POST /v1/command HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {client.token}\r\n"
    data = b"".join(
        f"{head}Content-Length: {len(body)}\r\n{close}\r\n".encode() + body
        for body, close in ((one, ""), (two, "Connection: close\r\n"))
    )
    answer = raw_exchange(server.ready, data)  # both in one write, on one connection
    assert answer.count(b"HTTP/1.1 200") == 2, answer
    assert answer.index(b'"request_id":1') < answer.index(b'"request_id":2')


def test_eight_clients_at_once_lose_nothing(server):
    errors: list[Any] = []
    stored: dict[int, list[str]] = {}

    def worker(n: int) -> None:
        c = Client(server.ready)
        stored[n] = []
        try:
            for i in range(30):
                if i % 2 == 0:
                    status, r = c.command({"type": "store", "user_id": f"w{n}", "content": f"worker {n} note {i}"})
                    stored[n].append(r.get("id"))
                else:
                    status, r = c.command({"type": "query", "user_id": f"w{n}", "text": f"note {i - 1}", "limit": 50})
                    # a store this client had acknowledged is found by its next query
                    if status == 200 and stored[n][-1] not in {m["id"] for m in r["messages"]}:
                        errors.append(("not found after its ack", n, i))
                if status != 200:
                    errors.append((status, r))
        finally:
            c.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert errors == []
    c = Client(server.ready)
    for n in range(8):
        status, r = c.command({"type": "query", "user_id": f"w{n}", "text": "note", "limit": 100})
        assert status == 200 and {m["id"] for m in r["messages"]} >= set(stored[n]) and len(stored[n]) == 15
    c.close()


def test_openapi_is_made_from_the_wire_models(client):
    from openapi_spec_validator import validate

    status, spec = client.call("GET", "/openapi.json")
    assert status == 200
    validate(spec)
    assert set(spec["paths"]) == {"/v1/command", "/ingest", "/recall", "/context", "/health", "/openapi.json"}
    schemas = spec["components"]["schemas"]
    assert {"StoreRequest", "GraphRecallRequest", "ContextRequest", "ErrorResponse", "HealthResponse"} <= set(schemas)
    assert spec["paths"]["/v1/command"]["post"]["responses"]["413"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorResponse"
    }


@posix_only("SIGTERM")
def test_sigterm_finishes_requests_in_hand_closes_the_store_and_exits_0(tmp_path):
    data = tmp_path / "data"
    sc = serve(data)
    clients = [Client(sc.ready) for _ in range(4)]
    answers: list[tuple[int, dict]] = []

    def store(c: Client, n: int) -> None:
        try:
            batch = [{"user_id": "t", "content": f"message {n}-{i} about the garden"} for i in range(40)]
            answers.append(c.command({"type": "store", "messages": batch}))
        except (ConnectionError, http.client.HTTPException):
            pass  # not answered: sent after the stop began

    threads = [threading.Thread(target=store, args=(c, n)) for n, c in enumerate(clients)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while not answers and time.monotonic() < deadline:  # at least one answered, others in hand
        time.sleep(0.01)
    sc.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join(120)
    assert sc.proc.wait(60) == 0, sc.stderr()
    sc._stderr.close()
    acknowledged = [a for a in answers if a[0] == 200]
    assert acknowledged and all(a[1]["type"] == "ok" for a in acknowledged)
    again = serve(data)  # the store was closed cleanly: every acknowledged memory is there
    c = Client(again.ready)
    assert c.command({"type": "stats"})[1]["memories"] == 40 * len(acknowledged)
    assert c.command({"type": "shutdown"}) == (200, {"type": "ok"})
    assert again.proc.wait(60) == 0
    again._stderr.close()


def test_a_second_server_on_the_same_data_dir_fails_clearly(tmp_path):
    data = tmp_path / "data"
    first = serve(data)
    second = serve(data, wait_ready=False)
    line = second.recv()
    assert (line["type"], line["code"]) == ("error", "startup_failed") and "lock" in line["message"].lower(), line
    assert second.proc.wait(60) == 1
    second._stderr.close()
    assert Client(first.ready).command({"type": "ping"}) == (200, {"type": "pong"})
    first.proc.send_signal(signal.SIGTERM if not WINDOWS else signal.CTRL_BREAK_EVENT)
    assert first.proc.wait(60) == 0
    first._stderr.close()


def test_another_address_than_loopback_needs_a_token_file_made_by_the_operator(tmp_path):
    sc = Sidecar(tmp_path / "data", "--listen", "0.0.0.0:0", command=SERVE, wait_ready=False)
    line = sc.recv()
    assert line["code"] == "startup_failed" and "--token-file" in line["message"], line
    assert sc.proc.wait(60) == 1
    sc._stderr.close()
    missing = tmp_path / "token"
    sc = Sidecar(
        tmp_path / "data", "--listen", "0.0.0.0:0", "--token-file", str(missing), command=SERVE, wait_ready=False
    )
    line = sc.recv()
    assert line["code"] == "startup_failed" and "does not exist" in line["message"], line
    assert sc.proc.wait(60) == 1 and not missing.exists()
    sc._stderr.close()
    missing.write_text("operator-made-token-0123456789\n")
    os.chmod(missing, 0o644)  # readable by others: served, with a warning
    origin = "http://localhost:5173"
    sc = Sidecar(
        tmp_path / "data",
        "--listen",
        "0.0.0.0:0",
        "--token-file",
        str(missing),
        "--allow-origin",
        origin,
        command=SERVE,
    )
    assert "not a loopback address" in sc.stderr()
    assert WINDOWS or f"the token file {missing} is readable by other users" in sc.stderr()
    c = Client({**sc.ready, "url": sc.ready["url"].replace("0.0.0.0", "127.0.0.1")})
    assert c.command({"type": "ping"}) == (200, {"type": "pong"})
    # --allow-origin: a browser's preflight (which carries no token) is answered for that origin only
    preflight = {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization",
    }
    c.conn.request("OPTIONS", "/v1/command", headers=preflight)
    answer = c.conn.getresponse()
    answer.read()
    assert answer.status == 200 and answer.getheader("access-control-allow-origin") == origin
    c.conn.request("OPTIONS", "/v1/command", headers={**preflight, "Origin": "http://evil.example"})
    answer = c.conn.getresponse()
    answer.read()
    assert answer.status == 400 and answer.getheader("access-control-allow-origin") is None
    assert c.command({"type": "shutdown"})[0] == 200
    assert sc.proc.wait(60) == 0
    sc._stderr.close()


# ----------------------------------------------------------------- pure logic: options, Host names, statuses


def test_listen_addresses_and_the_options_page():
    from sidecar.runtime.config import FACE_OPTIONS, ConfigError, resolve
    from sidecar.runtime.face_values import parse_listen

    assert parse_listen("127.0.0.1:7438") == ("127.0.0.1", 7438)
    assert parse_listen("[::1]:0") == ("::1", 0)
    assert parse_listen(":9000") == ("127.0.0.1", 9000)
    for bad in ("127.0.0.1", "::1:80", "host:port", "127.0.0.1:70000"):
        with pytest.raises(ValueError):
            parse_listen(bad)
    assert resolve(["--data-dir", "/tmp/x"], {}, face="serve").listen == "127.0.0.1:7438"
    with pytest.raises(ConfigError, match="--listen"):
        resolve(["--listen", "nowhere"], {}, face="serve")
    with pytest.raises(ConfigError, match="--allow-origin"):
        resolve(["--allow-origin", "localhost:5173"], {}, face="serve")
    page = (Path(__file__).resolve().parent.parent / "docs" / "http.md").read_text()
    for opt in FACE_OPTIONS["serve"]:
        assert f"`{opt.flag}`" in page and f"`{opt.env}`" in page, opt.name


def test_host_names_accepted_for_each_listen_address():
    from sidecar.http import Guard

    loopback = Guard.for_listen("t" * 32, "127.0.0.1", 7438)
    assert {"127.0.0.1:7438", "localhost:7438", "[::1]:7438", "localhost"} <= loopback.hosts
    assert loopback.check("localhost:7438", "Bearer " + "t" * 32, "") is None
    assert loopback.check("evil.example:7438", "Bearer " + "t" * 32, "").code == "bad_host"
    assert loopback.check("127.0.0.1:7438", "Basic " + "t" * 32, "").code == "unauthorized"
    assert Guard.for_listen("t" * 32, "0.0.0.0", 80).hosts is None  # any Host; the token still holds
    assert Guard.for_listen("t" * 32, "192.168.1.5", 80).hosts == {"192.168.1.5", "192.168.1.5:80"}


def test_every_error_code_has_a_status():
    from sidecar.http import STATUS_BY_CODE
    from sidecar.wire.errors import ERROR_CODES

    assert set(ERROR_CODES) <= set(STATUS_BY_CODE)
    assert {STATUS_BY_CODE[c] for c in ("invalid_request", "not_found", "conflict", "too_large", "internal")} == {
        400,
        404,
        409,
        413,
        500,
    }
