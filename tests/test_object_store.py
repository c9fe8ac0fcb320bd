"""Object-store data dirs (`--data-dir s3://bucket/prefix`): real sidecar processes over real pipes
against a real S3-compatible server (moto's server mode) on 127.0.0.1, started here.

Two sidecars over one bucket: writes in one are seen by queries in the other, a forget in one is
honoured by the other (semantic and keyword), concurrent writers lose nothing, a SIGKILL of a writer
loses nothing acknowledged, the lease passes to the survivor, a store without safe concurrent commits
has one writer, and a wrong key, a missing bucket, an unreachable endpoint each fail start-up clearly.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.request

import pytest
from conftest import new_bucket, s3_env

from sidecar.runtime.config import ConfigError, resolve
from sidecar.storage import ObjectLocation, ObjectStoreSettings
from sidecar.storage.objectstore import S3Client

REFRESH = 1.0  # --refresh-seconds in these tests
LEASE = 3.0  # --lease-seconds


@pytest.fixture
def shared(spawn, s3, tmp_path):
    """start(name, *flags) -> a sidecar on this test's own bucket (s3://<bucket>/mem)."""
    uri = f"s3://{new_bucket(s3)}/mem"

    def start(name: str, *flags: str, env: dict[str, str] | None = None, wait_ready: bool = True):
        return spawn(
            "--data-dir",
            uri,
            "--refresh-seconds",
            str(REFRESH),
            "--lease-seconds",
            str(LEASE),
            *flags,
            data_dir=tmp_path / name,
            env=env or s3_env(s3),
            wait_ready=wait_ready,
        )

    start.uri = uri
    return start


def _texts(sc, user: str, text: str = "pets", mode: str = "semantic") -> list[str]:
    r = sc.request({"type": "query", "user_id": user, "text": text, "limit": 20, "mode": mode})
    assert r["type"] == "results", r
    return [m["content"] for m in r["messages"]]


def _eventually(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.2)


# ---------------------------------------------------------------- without a sidecar


def test_locations_and_settings_are_parsed():
    loc = ObjectLocation.parse("s3://my-bucket/team/bot/")
    assert (loc.bucket, loc.prefix, loc.uri) == ("my-bucket", "team/bot", "s3://my-bucket/team/bot")
    assert loc.child_uri("lancedb") == "s3://my-bucket/team/bot/lancedb"
    assert ObjectLocation.parse("s3://my-bucket").key("meta.json") == "meta.json"
    with pytest.raises(ValueError):
        ObjectLocation.parse("s3://B_/x")
    assert resolve(["--data-dir", "s3://my-bucket/p"], {}).data_dir == "s3://my-bucket/p"
    assert resolve(["--data-dir", "/tmp/x"], {}).shared is False
    with pytest.raises(ConfigError, match="s3://"):
        resolve(["--data-dir", "gs://bucket/p"], {})
    with pytest.raises(ConfigError, match="s3-writers"):
        resolve(["--s3-writers", "two"], {})
    env = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000/",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "k",
        "MY_SECRET": "s",
    }
    s = ObjectStoreSettings.resolve(env, secret_env="MY_SECRET")
    assert (s.endpoint, s.region, s.access_key_id, s.secret_access_key) == (
        "http://127.0.0.1:9000",
        "eu-west-1",
        "k",
        "s",
    )
    assert s.lance_options()["allow_http"] == "true"
    assert ObjectStoreSettings.resolve(env, endpoint="https://minio:9000", region="r").base_url == "https://minio:9000"
    assert ObjectStoreSettings.resolve({}).base_url == "https://s3.us-east-1.amazonaws.com"


def test_start_up_problems_are_told_apart_and_the_probe_reads_a_store_that_ignores_conditions():
    from sidecar.storage.objectstore import ObjectStoreError, PreconditionFailed, access_problem, conditional_put_works

    loc, settings = ObjectLocation.parse("s3://bucket-x/p"), ObjectStoreSettings("http://h:1", "eu-west-1", "k", "s")
    told = {
        name: access_problem(exc, loc, settings)
        for name, exc in {
            "down": ObjectStoreError("GET http://h:1/bucket-x: [Errno 111] Connection refused"),
            "bucket": ObjectStoreError("GET", 404, "NoSuchBucket"),
            "key": ObjectStoreError("GET", 403, "InvalidAccessKeyId"),
            "secret": ObjectStoreError("GET", 403, "SignatureDoesNotMatch"),
            "region": ObjectStoreError("GET", 301, "PermanentRedirect"),
        }.items()
    }
    assert "cannot reach" in told["down"] and "--s3-endpoint" in told["down"]
    assert "does not exist" in told["bucket"] and "aws s3 mb s3://bucket-x" in told["bucket"]
    assert all("refused the credentials" in told[k] and "AWS_SECRET_ACCESS_KEY" in told[k] for k in ("key", "secret"))
    assert "another region than eu-west-1" in told["region"]

    class Store:  # honours If-None-Match, or ignores it as some gateways do
        def __init__(self, honours: bool):
            self.honours, self.keys = honours, set()

        def put(self, key, body, if_none_match=False, if_match=None):
            if self.honours and if_none_match and key in self.keys:
                raise PreconditionFailed("PUT", 412, "PreconditionFailed")
            self.keys.add(key)

        def delete(self, key):
            self.keys.discard(key)

    for honours in (True, False):
        store = Store(honours)
        assert conditional_put_works(store, loc, "t") is honours and store.keys == set()


def test_without_obstore_an_object_store_data_dir_says_what_to_install(monkeypatch):
    """obstore is imported only for an s3:// data dir; a build without it (a trimmed binary) fails start-up
    with the package to install, not with an ImportError's traceback."""
    import sys

    from sidecar.storage.shared import SharedAccess, SharedStore, SharedStoreError

    monkeypatch.setitem(sys.modules, "obstore", None)  # `import obstore` raises ImportError
    store = SharedStore(
        ObjectLocation.parse("s3://bucket-x/p"), ObjectStoreSettings("http://127.0.0.1:1", "r", "k", "s")
    )
    with pytest.raises(SharedStoreError, match=r"need the obstore package .*pip install"):
        SharedAccess(store)


# ---------------------------------------------------------------- two sidecars, one bucket


def test_a_sidecars_own_stores_keep_its_cache(shared):
    """Its own commits advance the table's version by one each: the vector cache is kept (only another
    sidecar's versions drop it), so a sidecar writing alone keeps answering from memory."""
    a = shared("a", "--log-level", "info")
    _eventually(lambda: "cache: 0 users loaded" in a.stderr(), 30, "the start-up warm-up")  # it would refill
    a.store("u1", "I have a cat named Tom")
    assert _texts(a, "u1") == ["I have a cat named Tom"]  # u1 is cached now
    assert a.request({"type": "stats"})["cache"]["users"] == 1
    for text in ("my parrot Kiwi talks all day", "we adopted a hamster"):
        a.store("u1", text)
    time.sleep(REFRESH + 0.5)  # past the interval: the next read checks the version
    assert _texts(a, "nobody") == []  # that check, without reloading u1: a drop would leave only "nobody"
    assert a.request({"type": "stats"})["cache"]["users"] == 2
    assert len(_texts(a, "u1")) == 3
    assert a.shutdown() == 0


def test_an_object_store_start_says_only_who_maintains_it_at_the_default_level(shared):
    """Regression: every lease holder's start on an object store logged a WARNING "0 long memories queued
    for chunked embedding" (its routine look for memories left unchunked); the default level is quiet."""
    a = shared("a")
    a.request({"type": "store", "user_id": "u", "content": "I keep bees in Lyon"})
    assert a.shutdown() == 0
    a = shared("a")  # again, on a store with a memory
    assert a.shutdown() == 0
    said = [line for line in a.stderr().splitlines() if line.strip()]
    assert [line for line in said if "the maintenance lease" not in line] == [], said


def test_writes_and_forgets_cross_between_sidecars(shared):
    a = shared("a")
    a.store("u1", "I have a cat named Tom")
    b = shared("b")
    assert b.ready["memories"] == 1 and b.ready["data_dir"] == shared.uri
    assert _texts(b, "u1") == ["I have a cat named Tom"]  # b's cache is loaded now
    a.store("u1", "my parrot Kiwi talks all day")
    _eventually(lambda: "my parrot Kiwi talks all day" in _texts(b, "u1"), REFRESH + 2, "a's store seen by b")
    b.store("u1", "we adopted a hamster")
    _eventually(lambda: "we adopted a hamster" in _texts(a, "u1"), REFRESH + 2, "b's store seen by a")
    b.store("u2", "my hamster runs at night")

    assert a.request({"type": "forget_user", "user_id": "u1"})["deleted"] == 3
    _eventually(lambda: _texts(b, "u1") == [], REFRESH + 2, "a's forget honoured by b's cached semantic search")
    assert _texts(b, "u1", "parrot Kiwi", mode="keyword") == []
    assert _texts(b, "u1", "hamster", mode="hybrid") == []
    assert _texts(b, "u2", "hamster", mode="keyword") == ["my hamster runs at night"]
    assert b.request({"type": "stats"})["memories"] == 1
    assert a.shutdown() == 0 and b.shutdown() == 0


def test_a_fact_remembered_by_another_sidecar_links_a_relation_stated_again(shared):
    """The graph builder keeps its fact look-ups while its own process writes no fact; on a shared store only
    for half the refresh interval, so another sidecar's fact is linked like a local one (regression)."""

    def pet_fact_id(sc):
        me = sc.request({"type": "entity", "user_id": "u1", "name": "me"})
        return next(r for r in me["relations"] if r["predicate"] == "has_pet").get("fact_id")

    a = shared("a")
    b = shared("b")
    a.store("u1", "I adopted a cat named Luna")
    assert pet_fact_id(a) is None  # no fact states it yet: the answer a keeps
    fact = b.request({"type": "remember", "user_id": "u1", "text": "Has a pet named Luna", "category": "answer"})
    time.sleep(REFRESH + 0.5)
    a.store("u1", "I adopted a cat named Luna")
    assert pet_fact_id(a) == fact["fact"]["id"]
    assert a.shutdown() == 0 and b.shutdown() == 0


def test_concurrent_writers_lose_nothing(shared):
    a, b = shared("a"), shared("b")
    for sc in (a, b):
        assert "only the lease holder writes" not in sc.stderr()  # moto refuses a second conditional write
    ids: dict[str, list[str]] = {"a": [], "b": []}

    def write(sc, name):
        for i in range(15):
            ids[name].append(sc.store(f"user-{i % 3}", f"{name} says message {i} about gardening"))

    threads = [threading.Thread(target=write, args=(sc, n)) for sc, n in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(ids["a"]) == len(ids["b"]) == 15
    for sc in (a, b):
        _eventually(lambda sc=sc: sc.request({"type": "stats"})["memories"] == 30, REFRESH + 2, "30 rows everywhere")
    a.send({"type": "export", "out": str(a.data_dir.parent / "all.jsonl")})
    assert a.recv()["messages"] == 30
    assert a.shutdown() == 0 and b.shutdown() == 0


def test_sigkill_of_a_writer_loses_nothing_and_the_lease_passes(shared):
    a = shared("a")
    b = shared("b")
    assert "now holds the maintenance lease" in a.stderr()
    acked = [a.store("u1", f"note {i}: the meeting moved to room {i}") for i in range(10)]
    # a group: eight stores queued together, one commit, each acknowledged
    for i in range(8):
        a.send({"type": "store", "user_id": "u1", "content": f"queued note {i}", "request_id": i})
    acked += [a.recv()["id"] for _ in range(8)]
    a.proc.kill()  # SIGKILL right after the last answer
    a.proc.wait(10)

    _eventually(lambda: b.request({"type": "stats"})["memories"] == 18, REFRESH + 2, "every acknowledged store")
    c = shared("c")
    assert c.ready["memories"] == 18
    c.send({"type": "export", "out": str(c.data_dir.parent / "after-kill.jsonl")})
    assert c.recv()["messages"] == 18
    exported = (c.data_dir.parent / "after-kill.jsonl").read_text()
    assert all(i in exported for i in acked)

    _eventually(
        lambda: "now holds the maintenance lease" in b.stderr() or "now holds the maintenance lease" in c.stderr(),
        LEASE * 3 + 5,
        "a survivor takes the lease",
    )
    assert not ("now holds the maintenance lease" in b.stderr() and "now holds the maintenance lease" in c.stderr())
    # the killed writer had not built the graph of its last stores (built a second after them): the new
    # holder's catch-up does
    holder = b if "now holds the maintenance lease" in b.stderr() else c
    _eventually(lambda: holder.request({"type": "stats"})["graph"]["episodes"] == 18, 60, "every episode built")
    assert b.shutdown() == 0 and c.shutdown() == 0


def test_one_writer_store_serves_the_others_read_only_until_the_lease_passes(shared):
    """--s3-writers one (what `auto` picks on a store that ignores If-None-Match): only the lease holder
    writes; the others answer writes with `disabled` and serve reads; the survivor of a kill writes."""
    a = shared("a", "--s3-writers", "one")
    a.store("u1", "I live in Lisbon")
    b = shared("b", "--s3-writers", "one")
    r = b.request({"type": "store", "user_id": "u1", "content": "I moved to Porto", "request_id": "x"})
    assert r["type"] == "error" and r["code"] == "disabled" and r["request_id"] == "x", r
    assert "read-only" in r["message"] and "lease holder" in r["message"]
    r = b.request({"type": "forget_user", "user_id": "u1"})
    assert r["code"] == "disabled"
    assert _texts(b, "u1", "city") == ["I live in Lisbon"]
    b.send({"type": "store", "user_id": "u1", "content": "one"})
    b.send({"type": "store", "user_id": "u1", "content": "two"})  # a group: every request refused
    assert [b.recv()["code"], b.recv()["code"]] == ["disabled", "disabled"]
    # graph recall is served, but a read-only sidecar's recall consolidates nothing (no trace written)
    assert a.request({"type": "entities", "user_id": "u1"})["type"] == "entities"  # a has built its episode
    _eventually(lambda: b.request({"type": "stats"})["graph"]["episodes"] == 1, REFRESH + 30, "a's episode")
    r = b.request({"type": "graph_recall", "user_id": "u1", "text": "Where do I live?"})
    assert r["type"] != "error", r
    assert b.request({"type": "stats"})["graph"]["traces"] == 0

    a.proc.kill()
    a.proc.wait(10)

    def b_writes():
        r = b.request({"type": "store", "user_id": "u1", "content": "I moved to Porto"})
        return r["type"] == "ok"

    _eventually(b_writes, LEASE * 3 + 5, "the survivor takes the lease and writes")
    assert sorted(_texts(b, "u1", "city")) == ["I live in Lisbon", "I moved to Porto"]
    assert b.shutdown() == 0


def test_clean_shutdown_hands_the_lease_over_at_once(shared):
    a = shared("a")
    b = shared("b", "--lease-seconds", "60")  # would wait a minute for an expired lease
    assert a.shutdown() == 0
    _eventually(lambda: "now holds the maintenance lease" in b.stderr(), 25, "b takes the released lease")
    assert b.shutdown() == 0


# ---------------------------------------------------------------- bad input at start-up


def _failed(sc) -> str:
    r = sc.recv()
    assert r["type"] == "error" and r["code"] == "startup_failed", r
    assert sc.proc.wait(30) == 1
    return r["message"]


def test_missing_bucket_unreachable_endpoint_and_no_credentials_fail_clearly(spawn, s3, tmp_path):
    sc = spawn("--data-dir", "s3://no-such-bucket-here/mem", data_dir=tmp_path / "a", env=s3_env(s3), wait_ready=False)
    message = _failed(sc)
    assert "bucket 'no-such-bucket-here' does not exist" in message and "create it" in message

    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sc = spawn(
        "--data-dir",
        "s3://any-bucket/mem",
        data_dir=tmp_path / "b",
        env=s3_env(f"http://127.0.0.1:{port}"),
        wait_ready=False,
    )
    message = _failed(sc)
    assert "cannot reach the object store" in message and "AWS_ENDPOINT_URL" in message

    sc = spawn(
        "--data-dir",
        "s3://any-bucket/mem",
        data_dir=tmp_path / "c",
        env={**s3_env(s3), "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""},
        wait_ready=False,
    )
    assert "no credentials" in _failed(sc)


def test_wrong_credentials_fail_clearly_and_touch_nothing(shared, s3):
    a = shared("a")
    a.store("u1", "keep me safe")
    assert a.shutdown() == 0

    def moto_auth(count: str) -> None:  # moto checks keys once its unauthenticated-request budget is spent
        urllib.request.urlopen(
            urllib.request.Request(
                f"{s3}/moto-api/reset-auth", data=count.encode(), method="POST", headers={"Content-Type": "text/plain"}
            )
        )

    moto_auth("0")
    try:
        sc = shared("b", env=s3_env(s3, AWS_ACCESS_KEY_ID="AKIAWRONGWRONGWRONG1"), wait_ready=False)
        message = _failed(sc)
    finally:
        moto_auth("inf")
    assert "refused the credentials" in message and "InvalidAccessKeyId" in message
    assert "AWS_ACCESS_KEY_ID" in message

    c = shared("c")
    assert c.ready["memories"] == 1
    assert _texts(c, "u1", "safe") == ["keep me safe"]
    assert c.shutdown() == 0


# ---------------------------------------------------------------- the lease and the version check, in-process


def test_lease_is_held_by_one_taken_over_after_silence_and_released(s3):
    from sidecar.storage.lease import Lease

    client = S3Client(ObjectStoreSettings(s3, "us-east-1", "test", "test"), new_bucket(s3))
    a, b = Lease(client, "p/lease.json", ttl=1.0), Lease(client, "p/lease.json", ttl=1.0)
    assert a.step() and a.held()
    renewed = time.monotonic()
    assert not b.step() and not b.held() and b.holder_name == a.name
    t0 = time.monotonic()
    while not b.step():  # a stops renewing (as if killed): b waits out the ttl on its own clock
        time.sleep(0.2)
        if time.monotonic() - renewed > 0.8:
            assert not a.held()  # a lapsed by itself, before b could take over
        assert time.monotonic() - t0 < 5
    assert time.monotonic() - t0 >= 1.0 and b.held()
    assert not a.step() and not a.held()  # a sees b's token: a does not write the lease back
    b.release()
    assert client.get("p/lease.json") is None and not b.held()
    assert a.step()  # a free lease is taken at once


def test_lease_holder_keeps_it_while_renewing(s3):
    from sidecar.storage.lease import Lease

    client = S3Client(ObjectStoreSettings(s3, "us-east-1", "test", "test"), new_bucket(s3))
    a, b = Lease(client, "lease.json", ttl=1.0), Lease(client, "lease.json", ttl=1.0)
    assert a.step()
    for _ in range(8):  # 2.4 s: well past the ttl, but a renews every 0.3 s
        time.sleep(0.3)
        assert a.step() and not b.step()


def test_version_check_drops_caches_only_for_versions_made_elsewhere():
    from sidecar.messages.freshness import Freshness

    version = [5]
    dropped = []
    f = Freshness(lambda: version[0], 0.0, lambda: dropped.append(version[0]))
    assert not f.check()  # first look: the caches reflect version 5
    f.own(6)
    f.own(7)  # this process's own commits
    version[0] = 7
    assert not f.check() and dropped == []
    f.own(9)  # someone committed 8 meanwhile
    assert dropped == [7]
    version[0] = 10  # another sidecar's commit
    assert f.check() and dropped == [7, 10]
    local = Freshness(lambda: 1 / 0, None, lambda: dropped.append("never"))
    local.own(3)
    assert not local.check() and not local.enabled
