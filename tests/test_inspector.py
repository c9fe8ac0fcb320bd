"""`memory-sidecar inspect`: the read-only web page, tested in a real headless browser (Debian's chromium
and chromedriver, driven by selenium) beside a real running sidecar on the same data dir.

The browser is installed with apt-get when it is missing (root on Debian, as in CI), never skipped.
Screenshots of every view are written to the folder printed at the start of the browser tests; with
INSPECTOR_DOCS_SCREENSHOTS=1 they are also copied to docs/ (how docs/inspector-*.png were made).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import ROOT, WINDOWS, Sidecar, linux_only
from helpers import T0

from sidecar.inspector import pages
from sidecar.inspector.drawing import HEIGHT, MARGIN, WIDTH, force_layout
from sidecar.runtime.config import FACE_OPTIONS, ConfigError, face_options, resolve

BROWSER_PACKAGES = ("chromium", "chromium-driver")
HOSTILE = "<script>window.pwned=1</script>"
QUOTED = "My friend \"Bob 'the builder' O'Neil\" visited."
USER = "alice"


# ---------------------------------------------------------------- pure parts


def test_layout_is_deterministic_and_inside_the_drawing():
    edges = [(0, 1), (1, 2), (2, 0), (3, 4)]
    a, b = force_layout(7, edges), force_layout(7, edges)
    assert (a == b).all()
    assert (a[:, 0] >= MARGIN - 1e-6).all() and (a[:, 0] <= WIDTH - MARGIN + 1e-6).all()
    assert (a[:, 1] >= MARGIN - 1e-6).all() and (a[:, 1] <= HEIGHT - MARGIN + 1e-6).all()
    distances = [float(((a[i] - a[j]) ** 2).sum() ** 0.5) for i in range(7) for j in range(i)]
    assert min(distances) > 20  # nodes do not sit on each other
    assert force_layout(0, []).shape == (0, 2) and force_layout(1, []).shape == (1, 2)


def test_pages_escape_stored_text():
    users = [{"user_id": '"><img src=x>', "username": HOSTILE, "messages": 1, "facts": 0, "entities": 0, "last": 0.0}]
    html = pages.users_page(users)
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html
    assert "user=%22%3E%3Cimg+src%3Dx%3E" in html  # the id in a link is URL-encoded, then escaped
    row = {
        "id": "1",
        "content": HOSTILE,
        "is_bot": False,
        "username": 'O\'Neil "B"',
        "channel_id": None,
        "timestamp": 0.0,
        "similarity": 0.5,
        "ranks": {"semantic": 1},
        "score": 0.1,
    }
    html = pages.messages_page("u'\"", 'q"><script>', "hybrid", 5, [row], None, [row], 1, 0)
    assert "<script>" not in html
    assert "O&#x27;Neil &quot;B&quot;" in html and 'value="q&quot;&gt;&lt;script&gt;"' in html


def test_inspect_options():
    config = resolve(["--data-dir", "/tmp/x", "--port", "8123", "--token", "abc_D-1"], environ={}, face="inspect")
    assert (config.port, config.token, config.data_dir) == (8123, "abc_D-1", Path("/tmp/x"))
    assert resolve([], environ={"MEMORY_SIDECAR_TOKEN": ""}, face="inspect").token == ""  # the check off
    assert resolve([], environ={}, face="inspect").token is None  # a random one at start
    for bad in (["--port", "70000"], ["--token", "a b;c"]):
        with pytest.raises(ConfigError):
            resolve(bad, environ={}, face="inspect")
    with pytest.raises(SystemExit):  # options that write (expiry, compaction, ...) are not the inspector's
        resolve(["--ttl-days", "1"], environ={}, face="inspect")
    doc = (ROOT / "docs" / "inspector.md").read_text()
    for opt in face_options("inspect"):
        assert f"`{opt.flag}`" in doc, opt.flag
    for opt in FACE_OPTIONS["inspect"]:
        assert f"`{opt.env}`" in doc, opt.env


# ---------------------------------------------------------------- the browser


def _browser_paths() -> tuple[str | None, str | None]:
    # Debian's chromium here; Google Chrome and its driver ($CHROMEWEBDRIVER) on GitHub's Ubuntu runners (ci.yml)
    names = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
    chrome = next((shutil.which(n) for n in names if shutil.which(n)), None)
    driver = shutil.which("chromedriver") or shutil.which("chromedriver", path=os.environ.get("CHROMEWEBDRIVER", ""))
    return chrome, driver


def ensure_browser() -> tuple[str, str]:
    """chromium and chromedriver, installed with apt-get when missing; fails loudly when that fails."""
    chrome, driver = _browser_paths()
    if chrome and driver:
        return chrome, driver
    apt = shutil.which("apt-get")
    assert apt, f"chromium/chromedriver are missing and there is no apt-get to install {BROWSER_PACKAGES}"
    assert os.geteuid() == 0, f"chromium/chromedriver are missing; installing {BROWSER_PACKAGES} needs root"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in ([apt, "update"], [apt, "install", "-y", "--no-install-recommends", *BROWSER_PACKAGES]):
        sys.stderr.write(f"installing the test browser: {' '.join(cmd)}\n")
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, (
            f"{' '.join(cmd)} failed with code {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    chrome, driver = _browser_paths()
    assert chrome and driver, f"apt-get installed {BROWSER_PACKAGES}, yet chromium={chrome} chromedriver={driver}"
    return chrome, driver


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chrome, driver_path = ensure_browser()
    options = webdriver.ChromeOptions()
    options.binary_location = chrome
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1000",
        "--lang=en-US",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(60)
    driver.implicitly_wait(20)  # a click's page load may still be on its way on a busy machine
    yield driver
    driver.quit()


# ---------------------------------------------------------------- a sidecar and an inspector


class Inspector:
    """`memory-sidecar inspect` as a child process; its URL read from its stderr."""

    def __init__(self, data_dir: Path, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sidecar", "inspect", "--data-dir", str(data_dir), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(ROOT),
            text=True,
            creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
        )
        self.lines: list[str] = []
        found = threading.Event()

        def read() -> None:
            for line in self.proc.stderr:
                self.lines.append(line)
                if "read-only at http://" in line:
                    found.set()
            found.set()

        threading.Thread(target=read, daemon=True).start()
        assert found.wait(120) and self.proc.poll() is None, f"no URL on stderr:\n{''.join(self.lines)}"
        self.url = re.search(r"http://\S+", "".join(self.lines)).group(0)
        self.base = self.url.split("?")[0].rstrip("/")
        self.token = self.url.partition("?token=")[2]
        self.cookie = f"memory_inspector_{self.base.rsplit(':', 1)[1]}={self.token}"

    def get(
        self, path: str, headers: dict[str, str] | None = None, method: str = "GET", cookie: bool = True
    ) -> tuple[int, str]:
        all_headers = {**({"Cookie": self.cookie} if cookie else {}), **(headers or {})}
        request = urllib.request.Request(self.base + path, headers=all_headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.CTRL_BREAK_EVENT if WINDOWS else signal.SIGTERM)  # its stop signals
        return self.proc.wait(30)


def _fill(sc: Sidecar) -> dict[str, str]:
    """A user with messages (two hostile), facts with history, and a graph with traces."""
    for text in [
        "I live in Berlin with my sister Anna.",
        "My cat Miso hates the vacuum.",
        "I work at Acme Robotics.",
        "Anna and I went hiking in the Alps last weekend.",
        "I moved to Munich in March.",
        HOSTILE,
        QUOTED,
    ]:
        sc.store(USER, text, username="Alice")
    sc.store("bob", "Bob here: I grow tomatoes on my balcony.", username="Bob")
    old = sc.request({"type": "remember", "user_id": USER, "text": "Lives in Berlin", "category": "answer"})
    new = sc.request({"type": "remember", "user_id": USER, "text": "Lives in Munich", "category": "answer"})
    r = sc.request(
        {"type": "resolve", "fact_id": new["fact"]["id"], "candidate_id": old["fact"]["id"], "action": "INVALIDATE"}
    )
    assert r["type"] == "resolved", r
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the graph is built in the background
        names = {x["name"] for x in sc.request({"type": "entities", "user_id": USER})["entities"]}
        if {"Miso", "O'Neil", "Munich"} <= names:
            break
        time.sleep(0.3)
    assert {"Miso", "O'Neil", "Munich"} <= names, names
    assert sc.request({"type": "consolidate", "user_id": USER})["type"] == "consolidated"
    return {"old_fact": old["fact"]["id"]}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A running sidecar with data, and an inspector on its data dir beside it."""
    data_dir = tmp_path_factory.mktemp("inspector") / "data"
    sc = Sidecar(data_dir)
    try:
        _fill(sc)
        inspector = Inspector(data_dir)
        yield sc, inspector
        assert inspector.stop() == 0, "".join(inspector.lines)
    finally:
        if sc.alive():
            assert sc.shutdown() == 0
        else:
            sc.kill()


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory, request):
    folder = tmp_path_factory.getbasetemp() / "inspector-screenshots"
    folder.mkdir(exist_ok=True)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"inspector screenshots: {folder}")
    return folder


def _shoot(driver, folder: Path, name: str) -> None:
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(1280, min(max(int(height) + 40, 700), 2400))
    path = folder / f"inspector-{name}.png"
    assert driver.save_screenshot(str(path)), path
    if os.environ.get("INSPECTOR_DOCS_SCREENSHOTS") == "1":
        shutil.copyfile(path, ROOT / "docs" / path.name)


# ---------------------------------------------------------------- the tests beside a running sidecar


@linux_only("lists the listening sockets from /proc/net/tcp and tcp6")
def test_loopback_only_host_check_token_and_read_only_methods(live):
    sc, inspector = live
    assert inspector.base.startswith("http://127.0.0.1:")
    assert inspector.get("/")[0] == 200
    assert inspector.get("/", {"Host": "evil.example"})[0] == 403  # DNS rebinding: another name
    assert inspector.get("/", {"Host": f"evil.example:{inspector.base.rsplit(':', 1)[1]}"})[0] == 403
    assert inspector.get("/", cookie=False)[0] == 403  # no token
    assert inspector.get("/?token=wrong", cookie=False)[0] == 403
    assert inspector.get("/", {"Cookie": inspector.cookie + "x"}, cookie=False)[0] == 403
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert inspector.get("/", method=method)[0] == 405
    port = int(inspector.base.rsplit(":", 1)[1])
    assert _listening(port) == ["0100007F"]  # one listening socket, on 127.0.0.1 (none on ::, none on 0.0.0.0)
    assert sc.alive()


def _raw(inspector: Inspector, data: bytes, abort: bool = False) -> bytes:
    """Bytes sent on a fresh connection; what comes back (nothing when `abort`: the client resets at once)."""
    import socket
    import struct

    port = int(inspector.base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        if abort:  # gone before the answer: a reset instead of a close
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return b""
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def test_every_other_method_is_405_with_headers_and_a_client_gone_is_no_traceback(live):
    _, inspector = live
    host = inspector.base.removeprefix("http://")
    for method in ("TRACE", "CONNECT", "PROPFIND", "MKCOL", "PUT", "BREW"):
        answer = _raw(inspector, f"{method} / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        head = answer.split(b"\r\n\r\n")[0].decode()
        assert head.startswith("HTTP/1.0 405") or head.startswith("HTTP/1.1 405"), (method, head)
        assert "Content-Security-Policy: default-src 'none'" in head and "X-Frame-Options: DENY" in head, head
    # the standard library's own refusals (a broken request line, a URL too long) carry the headers too
    for request in (b"NONSENSE\r\n\r\n", b"GET /" + b"q" * 70_000 + b" HTTP/1.1\r\n\r\n"):
        answer = _raw(inspector, request)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.split(b" ")[1] in (b"400", b"414") and b"Content-Security-Policy" in head, head
        assert b"q" * 201 not in body, body[:300]
    before = len(inspector.lines)
    request = f"GET /style.css HTTP/1.1\r\nHost: {host}\r\nCookie: {inspector.cookie}\r\n\r\n"
    for _ in range(200):  # each reset before (or while) its answer is written
        _raw(inspector, request.encode(), abort=True)
    assert inspector.get("/")[0] == 200  # still serving
    time.sleep(1)
    new = "".join(inspector.lines[before:])
    assert "Traceback" not in new and "BrokenPipeError" not in new and "ConnectionResetError" not in new, new[:2000]


def _listening(port: int) -> list[str]:
    """Local addresses (kernel hex) of the sockets listening on `port`, IPv4 and IPv6 (Linux /proc)."""
    found = []
    for name in ("tcp", "tcp6"):
        path = Path("/proc/net") / name
        for line in path.read_text().splitlines()[1:] if path.exists() else []:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.append(address)
    return found


@pytest.mark.slow  # a real Chromium: `pytest -m slow`
@linux_only("drives Debian's chromium and chromedriver, installed with apt-get when missing")
def test_views_in_a_browser(live, browser, screenshots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    sc, inspector = live
    browser.get(inspector.url)  # the token: once in the URL, then a cookie
    assert "token=" not in browser.current_url
    assert USER in browser.find_element(By.TAG_NAME, "table").text
    _shoot(browser, screenshots, "users")

    browser.get(f"{inspector.base}/messages?user={USER}")
    browser.find_element(By.NAME, "q").send_keys("tell me about pets")
    Select(browser.find_element(By.NAME, "mode")).select_by_value("hybrid")
    browser.find_element(By.CSS_SELECTOR, "form.search button").click()
    assert browser.find_element(By.ID, "mode").text == "hybrid"
    first = browser.find_elements(By.CSS_SELECTOR, "table")[0].find_elements(By.CSS_SELECTOR, "tbody tr")[0]
    cells = [c.text for c in first.find_elements(By.TAG_NAME, "td")]
    assert cells[4] == "My cat Miso hates the vacuum.", cells
    assert float(cells[1]) > 0 and 0 < float(cells[2]) <= 1 and "semantic #" in cells[3], cells
    body = browser.find_element(By.TAG_NAME, "body").text
    assert HOSTILE in body and QUOTED in body  # shown as text ...
    assert browser.execute_script("return typeof window.pwned") == "undefined"  # ... never run
    _shoot(browser, screenshots, "search")

    browser.get(f"{inspector.base}/facts?user={USER}")
    text = browser.find_element(By.TAG_NAME, "table").text
    assert "Lives in Munich" in text and "Lives in Berlin" in text and "replaced" in text
    browser.find_elements(By.TAG_NAME, "summary")[-1].click()  # a fact's history
    assert "invalidated" in browser.find_element(By.TAG_NAME, "table").text.lower()
    _shoot(browser, screenshots, "facts")

    browser.get(f"{inspector.base}/graph?user={USER}")
    circles = browser.find_elements(By.CSS_SELECTOR, "svg.graph circle")
    assert len(circles) >= 5 and all(c.is_displayed() and c.size["width"] > 0 for c in circles)
    assert browser.find_elements(By.CSS_SELECTOR, "svg.graph g.relation line")
    assert browser.find_elements(By.CSS_SELECTOR, "svg.graph g.relation.closed")  # Berlin, before Munich
    assert browser.find_elements(By.CSS_SELECTOR, "svg.graph a.trace rect")
    labels = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "svg.graph a.entity text")]
    assert "O'Neil" in labels and "Miso" in labels, labels
    text = browser.find_element(By.TAG_NAME, "body").text
    assert "still valid" in text and QUOTED in text and HOSTILE in text  # the traces' summaries, as text
    assert browser.execute_script("return typeof window.pwned") == "undefined"
    _shoot(browser, screenshots, "graph")

    browser.find_element(By.LINK_TEXT, "timeline").click()
    assert browser.find_elements(By.CSS_SELECTOR, "svg.timeline rect.relation.ended")  # Berlin, before Munich
    assert browser.find_elements(By.CSS_SELECTOR, "svg.timeline rect.fact")
    _shoot(browser, screenshots, "timeline")
    picker = browser.find_element(By.CSS_SELECTOR, 'input[type="date"][name="as_of"]')
    browser.execute_script("arguments[0].value = '2001-02-03'", picker)  # typing a date depends on the locale
    browser.find_element(By.CSS_SELECTOR, "form.search button").click()
    deadline = time.monotonic() + 60  # the click's page load, on a busy machine
    while "as_of=2001-02-03" not in browser.current_url:
        assert time.monotonic() < deadline, browser.current_url
        time.sleep(0.1)
    assert "true on 2001-02-03" in browser.find_element(By.ID, "then").text
    assert "nothing was known then" in browser.find_element(By.TAG_NAME, "body").text
    assert browser.execute_script("return typeof window.pwned") == "undefined"

    browser.get(f"{inspector.base}/stats")
    text = browser.find_element(By.TAG_NAME, "body").text
    assert "health ok" in text and "messages 8" in text, text
    _shoot(browser, screenshots, "stats")
    assert sc.alive()


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
def test_search_ranks_as_the_sidecar_does(live, mode):
    """The ranking and the no-padding step are the sidecar's (a question no replaced memory answers: the page
    does not apply the "what is true now" step, docs/inspector.md)."""
    sc, inspector = live
    text = "what does my cat hate"
    answer = sc.request({"type": "query", "user_id": USER, "text": text, "limit": 5, "mode": mode})
    status, html = inspector.get(f"/messages?user={USER}&q={text.replace(' ', '+')}&mode={mode}&limit=5")
    assert status == 200
    results = html.split("<h2>results", 1)[1].split("<h2>messages", 1)[0]
    assert re.findall(r"<code>([0-9a-f-]{36})</code>", results) == [m["id"] for m in answer["messages"]]


def test_sees_new_writes_of_the_running_sidecar(live):
    sc, inspector = live
    sc.store(USER, "I started learning the cello today.")
    deadline = time.monotonic() + 15  # committed by the sidecar's write-ahead log flusher within about a second
    while "learning the cello" not in inspector.get(f"/messages?user={USER}")[1]:
        assert time.monotonic() < deadline, "a stored message never showed up in the inspector"
        time.sleep(0.2)
    status, html = inspector.get(f"/messages?user={USER}&q=cello&mode=keyword")
    assert status == 200 and '<code id="mode">keyword</code>' in html and "learning the cello" in html


def test_timeline_pure_bars_escape_and_what_was_true_then():
    facts = [
        {"text": HOSTILE, "active": False, "superseded_at": 200.0, "updated_at": 150.0, "created_at": 100.0},
        {"text": "Lives in Munich", "active": True, "created_at": 200.0, "updated_at": 200.0},
    ]
    html = pages.timeline_page('u"1', None, facts, 150.0, 1000.0)
    assert "<script>" not in html and html.count("<rect") == 2 and 'class="then"' in html
    then = html.split('id="then"', 1)[1]
    assert "pwned" in then and "Lives in Munich" not in then  # the first fact only: the second came later
    now = pages.timeline_page("u", None, facts, None, 1000.0).split('id="then"', 1)[1]
    assert "Lives in Munich" in now and "pwned" not in now
    assert pages.valid_at(100.0, 200.0, 200.0) is False and pages.valid_at(100.0, None, 100.0) is True


def test_timeline_agrees_with_the_sidecars_as_of_and_refuses_a_bad_date(live):
    sc, inspector = live
    month = 30 * 86_400
    start = T0 - 3 * month
    msgs = [
        {"user_id": "tl", "username": "Tia", "content": "I live in Lisbon.", "timestamp": start},
        {"user_id": "tl", "username": "Tia", "content": "I moved to Oslo.", "timestamp": start + month},
    ]
    assert sc.request({"type": "store", "messages": msgs})["type"] == "ok"
    assert sc.request({"type": "entities", "user_id": "tl"})["type"] == "entities"  # waits for the user's graph
    deadline = time.monotonic() + 30  # the inspector reads the tables the sidecar commits
    while "Oslo" not in inspector.get("/timeline?user=tl")[1]:
        assert time.monotonic() < deadline, "the relations never showed on the timeline"
        time.sleep(0.3)
    for at in (start + month // 2, start + month + 60):
        said = sc.request({"type": "entity", "user_id": "tl", "name": "me", "as_of": at})
        places = {r["object"] for r in said["relations"] if r["predicate"] == "lives_in"}
        status, html = inspector.get(f"/timeline?user=tl&as_of={at}")
        then = html.split('id="then"', 1)[1]
        assert status == 200 and len(places) == 1, (said, status)
        for place in ("Lisbon", "Oslo"):
            assert (place in then) == (place in places), (at, place, then[:500])
    day = time.strftime("%Y-%m-%d", time.gmtime(start + month // 2))
    status, html = inspector.get(f"/timeline?user=tl&as_of={day}")  # what the date picker sends
    assert status == 200 and f'value="{day}"' in html and "Lisbon" in html.split('id="then"', 1)[1]
    status, html = inspector.get("/timeline?user=tl&as_of=last+tuesday")
    assert status == 400 and "neither a date (YYYY-MM-DD) nor unix seconds" in html


# ---------------------------------------------------------------- read-only: no lock, no write


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_takes_no_lock_and_writes_nothing(spawn, tmp_path):
    data_dir = tmp_path / "data"
    sc = spawn(data_dir=data_dir)
    sc.store(USER, "My cat Miso hates the vacuum.")
    sc.store(USER, "I live in Berlin with my sister Anna.")
    assert sc.shutdown() == 0
    before = _snapshot(data_dir)
    inspector = Inspector(data_dir)
    try:
        for path in (
            "/",
            f"/messages?user={USER}&q=cat",
            f"/messages?user={USER}&q=cat&mode=semantic",
            f"/facts?user={USER}",
            f"/graph?user={USER}",
            "/stats",
            "/style.css",
        ):
            status, _ = inspector.get(path)
            assert status == 200, path
        assert _snapshot(data_dir) == before  # not a byte, not a file, not a timestamp
        again = spawn(data_dir=data_dir)  # the data dir's lock is free: a sidecar starts beside the inspector
        assert again.request({"type": "query", "user_id": USER, "text": "pets", "limit": 1})["type"] == "results"
        assert again.shutdown() == 0
    finally:
        assert inspector.stop() == 0


def test_not_a_data_dir_is_a_clear_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "sidecar", "inspect", "--data-dir", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        cwd=str(ROOT),
        timeout=120,
    )
    assert done.returncode == 1 and "is not a memory-sidecar data dir" in done.stderr, done.stderr
    assert not (tmp_path / "nothing").exists()  # not even created
