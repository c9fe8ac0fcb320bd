"""Hardening round 4 (issue 64, items 2-4): text that once hung the tokeniser or made the relation reader and
the mention finder quadratic, and "X and I" read right. Pure functions first (their time on 4 KB and 32 KB of
the worst shapes, bounds generous), then the real process where a user sees it: a query that answers, a pong for
another user, another user's relation in their graph soon after, a shutdown that exits soon, the MCP face."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sidecar.graph.mentions import find_mentions
from sidecar.graph.relations import find_relations

ROOT = Path(__file__).resolve().parent.parent

# one Thai letter with 255 tone marks, twice: 512 characters, two clusters of MAX_RUN characters each
MARKS = ("ก" + "\u0e48" * 255) * 2

# the shapes that were quadratic: a run-on sentence with a subject every few words, long capitalised words,
# abbreviations that do not end a sentence, names after commas (find_relations and find_mentions)
SHAPES = [
    " and I live in Berlin",
    " I love it",
    " I'm a nurse",
    " I love jazz and",
    ", Rex",
    "Dr. ",
    " Ana and I",
    ", I live in Oslo",
    " I moved to Lisbon, no wait,",
    "A",
]


def _text(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _best_time(fn, text: str, runs: int = 2) -> float:
    """The least CPU time of `runs` calls, this process's (the machine may be busy with other work: wall time
    then measures the neighbours, and a ratio of two wall times is noise)."""
    best = float("inf")
    for _ in range(runs):
        t0 = time.process_time()
        fn(text)
        best = min(best, time.process_time() - t0)
    return best


# ---------------------------------------------------------------- pure: the tokeniser


def test_the_tokeniser_ends_on_a_letter_with_255_combining_marks():
    """It stepped back over the marks at its 256-character cut to where it began, for ever (the sidecar hung
    and grew 2 MB/s). Run in a child: a hang must fail the test, not take the suite with it."""
    code = (
        "from sidecar.text.analysis import analyse_fields, query_fields\n"
        "from sidecar.text.tokens import normalize, runs\n"
        f"t = {MARKS!r}\n"
        # runs() itself, on the clusters as written: normalize() now cuts a run of marks to 30 (stream-safe), so
        # through it no cluster reaches MAX_RUN, but runs() must end on one whoever calls it
        "pieces = [r for _, r in runs(t * 64)]\n"
        "assert ''.join(pieces) == t * 64, 'runs lost or repeated characters'\n"
        "assert normalize(t) and len(normalize(t)) < len(t)\n"
        "assert analyse_fields(t)[1] and query_fields(t, ['en'])[0]\n"
        "print(len(pieces))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == 128  # one piece per cluster: none of MAX_RUN characters or more is cut


@pytest.mark.parametrize("unit", SHAPES)
def test_the_relation_reader_and_the_mention_finder_are_linear(unit):
    """32 KB of each shape (the content limit the graph reads) within a few seconds, and at most a few times
    eight times the time of 4 KB (quadratic: 64 times; " I love it" took 92 s in process)."""
    for fn in (find_relations, find_mentions):
        small = _best_time(fn, _text(unit, 4_000))
        large = _best_time(fn, _text(unit, 32_000))  # the least of two, as for small: one sample of a busy machine
        assert large < 5.0, (fn.__name__, unit, large)
        assert large < 24 * max(small, 0.005), (fn.__name__, unit, small, large)


def test_a_sentence_of_abbreviations_is_cut_in_linear_time():
    from sidecar.graph.lang import lexicon
    from sidecar.graph.relations.clauses import split_sentences

    grammar = lexicon("en").clauses
    t0 = time.perf_counter()
    found = split_sentences(grammar, _text("Dr. ", 32_000) + "I live in Oslo.")
    assert time.perf_counter() - t0 < 2.0
    assert len(found) == 1  # "Dr." ends no sentence


# ---------------------------------------------------------------- pure: "X and I"


def _read(text: str) -> set[tuple[str | None, str, str]]:
    return {(r.subject, r.predicate, r.object) for r in find_relations(text)}


def test_a_place_before_and_i_is_the_object_not_a_person_living_somewhere():
    assert _read("I visited Paris and I live in Oslo.") == {(None, "lives_in", "Oslo")}


def test_the_i_after_an_object_and_is_read_its_relation_kept():
    assert _read("I moved to Paris and I work at Google.") == {
        (None, "lives_in", "Paris"),
        (None, "works_at", "Google"),
    }
    assert _read("I live in Berlin and I love jazz.") == {(None, "lives_in", "Berlin"), (None, "likes", "jazz")}


def test_x_and_i_opening_a_clause_is_still_both_of_us():
    assert _read("Yesterday Tom and I moved to Lyon.") == {("Tom", "lives_in", "Lyon"), (None, "lives_in", "Lyon")}
    assert _read("Big news: Ben and I moved to Utrecht") == {
        ("Ben", "lives_in", "Utrecht"),
        (None, "lives_in", "Utrecht"),
    }
    assert ("Tom", "lives_in", "Bristol") in _read("My husband Tom and I live in Bristol")


# ---------------------------------------------------------------- the real process


def test_a_letter_with_255_marks_is_stored_and_queried_and_others_are_served(spawn):
    sc = spawn()
    sc.store("thai", MARKS)
    sc.store("thai", "สวัสดีครับ วันนี้อากาศดี")
    for mode in ("keyword", "hybrid"):
        r = sc.request({"type": "query", "user_id": "thai", "text": MARKS, "mode": mode}, timeout=30)
        assert r["type"] == "results", r
    assert sc.request({"type": "ping"}, timeout=10)["type"] == "pong"
    r = sc.request({"type": "query", "user_id": "other", "text": "anything", "mode": "keyword"}, timeout=10)
    assert r["type"] == "results", r
    assert sc.shutdown(timeout=30) == 0


def _relations(sc, user: str, name: str, timeout: float = 60) -> set[tuple[str, str]]:
    r = sc.request({"type": "entity", "user_id": user, "name": name}, timeout=timeout)
    if r["type"] != "entity":
        return set()
    return {(x["predicate"], x["object"]) for x in r["relations"]}


def test_a_long_run_on_message_holds_no_other_users_graph_and_health_shows_the_lag(spawn):
    """One user's 32,000 characters of run-on chat once held the builder 10-92 s: another user's move, stored
    right after, reached their graph 28.7 s later. Now within seconds (bound generous: 15 s)."""
    sc = spawn()
    for unit in (" and I live in Berlin", " I love it", " I'm a nurse"):
        sc.store("talker", _text(unit, 32_000))
    t0 = time.monotonic()
    sc.store("lisbon", "Big news: I moved to Lisbon last month!")
    assert sc.request({"type": "ping"}, timeout=10)["type"] == "pong"
    assert ("lives_in", "Lisbon") in _relations(sc, "lisbon", "Lisbon")
    assert time.monotonic() - t0 < 15.0, time.monotonic() - t0
    for unit in (" and I live in Berlin", " I love it", " I'm a nurse") * 2:  # a backlog of the talker's
        sc.store("talker", _text(unit, 32_000))
    t0 = time.monotonic()
    sc.store("lisbon", "I work at Siemens.")  # the other user's graph commands wait for their own messages only
    assert ("works_at", "Siemens") in _relations(sc, "lisbon", "me")
    assert time.monotonic() - t0 < 15.0, time.monotonic() - t0
    sc.store("talker", _text(" I love it", 32_000))
    behind = sc.request({"type": "health"})["graph"]  # right after a store: the graph is behind, and says so
    assert behind["pending"] >= 1 and isinstance(behind["lag_seconds"], float) and behind["lag_seconds"] >= 0
    sc.request({"type": "entities", "user_id": "talker"}, timeout=60)  # waits for the builder
    settled = sc.request({"type": "health"})["graph"]
    assert settled["pending"] == 0 and settled["lag_seconds"] == 0.0
    assert sc.shutdown(timeout=30) == 0


def test_another_users_statement_reaches_their_graph_while_a_long_message_is_still_being_read(spawn):
    """A message past 8,000 characters is read in slices, each a batch of its own, so another user's statement
    stored right after one waits for a slice, not for the whole message: it is in its user's graph while the long
    message is still pending (`health`). It used to be built in the same batch as the long message, or after it
    (1.5-5.2 s behind 12 x 32 KB of run-on chat on a loaded machine: `bench.py graph-lag`)."""
    sc = spawn()
    sc.store("talker", _text(" and I live in Berlin", 32_000))
    sc.store("lisbon", "Big news: I moved to Lisbon last month!")
    assert ("lives_in", "Lisbon") in _relations(sc, "lisbon", "Lisbon")
    assert sc.request({"type": "health"})["graph"]["pending"] >= 1  # the talker's message: not all read yet
    assert ("lives_in", "Berlin") in _relations(sc, "talker", "Berlin")  # then it is, every slice of it
    assert sc.request({"type": "health"})["graph"]["pending"] == 0
    assert sc.shutdown(timeout=30) == 0


def test_shutdown_exits_soon_while_the_builder_is_busy_and_nothing_is_lost(spawn, tmp_path):
    """`shutdown` answered at once but the process exited 26-30 s later, the builder finishing a long message.
    Now within seconds (bound generous: 10 s); what was not built is built at the next start."""
    sc = spawn()
    ids = [sc.store("busy", _text(unit, 32_000)) for unit in SHAPES[:4] * 3]
    ids.append(sc.store("busy", "I live in Berlin and I love jazz."))
    t0 = time.monotonic()
    assert sc.shutdown(timeout=60) == 0
    assert time.monotonic() - t0 < 10.0, time.monotonic() - t0
    sc = spawn(data_dir=tmp_path / "data")
    assert ("lives_in", "Berlin") in _relations(sc, "busy", "Berlin", timeout=120)
    assert sc.request({"type": "health"})["graph"]["episodes"] == len(ids)
    assert sc.shutdown(timeout=30) == 0


# ---------------------------------------------------------------- the MCP face


def test_the_mcp_face_answers_the_255_marks_and_exits_at_end_of_input(tmp_path):
    pytest.importorskip("mcp", reason="the MCP extra is not installed (pip install -e '.[test]')")

    def rpc(id_: int, method: str, params: dict | None = None) -> bytes:
        msg = {"jsonrpc": "2.0", "id": id_, "method": method, **({"params": params} if params is not None else {})}
        return (json.dumps(msg) + "\n").encode()

    lines = [
        rpc(
            1,
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        ),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
        rpc(2, "tools/call", {"name": "remember", "arguments": {"content": MARKS}}),
        rpc(3, "tools/call", {"name": "search", "arguments": {"query": MARKS}}),
        rpc(4, "tools/call", {"name": "search", "arguments": {"query": "anything else"}}),
    ]
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("MEMORY_SIDECAR_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sidecar", "mcp", "--data-dir", str(tmp_path / "data")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(ROOT),
    )
    try:
        out, err = proc.communicate(b"".join(lines), timeout=180)  # stdin closes after the last line
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    answers = {m["id"]: m for m in map(json.loads, out.decode().splitlines())}
    assert {2, 3, 4} <= set(answers)
    assert all(not answers[i]["result"]["isError"] for i in (2, 3, 4)), answers
