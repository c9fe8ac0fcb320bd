"""`python scripts/bench.py`: the one benchmark command (scripts/benchkit/). The benchmarks themselves are run
by hand; this pins the entry point, the shared pipe client, the percentile helper and the table printer."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest
from conftest import ROOT, linux_only, posix_only

sys.path.insert(0, str(ROOT / "scripts"))
from benchkit import output, timing
from benchkit.client import BenchError, Sidecar

BENCH = str(ROOT / "scripts" / "bench.py")
SUBCOMMANDS = (
    "core",
    "facts",
    "conversation",
    "query-modes",
    "locomo",
    "memory",
    "maintenance",
    "soak",
    "ab",
    "fact-thresholds",
    "graph-build",
    "graph-lag",
    "graph",
    "graph-quality",
    "validity",
    "portable",
    "realuse",
    "object-store",
    "long-memories",
    "compaction",
    "multilingual",
    "hostile-files",
    "prompt",
    "http",
    "secrets",
    "footprint",
)
# stands in for the sidecar: a ready line, then an answer per request line, echoing its request_id
FAKE = """
import json, sys
print(json.dumps({"type": "ready"}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    if req.get("type") == "silent":
        continue
    print(json.dumps({"type": "ok", "request_id": req.get("request_id")}), flush=True)
"""


def _bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, BENCH, *args], capture_output=True, text=True, timeout=60, cwd=str(ROOT))


# Each subcommand's `--help` through bench.py's own main(), all in one child interpreter: an interpreter per
# subcommand (each importing every benchkit module) cost about 20 s of CPU for the same checks.
SUB_HELPS = """
import contextlib, io, json, runpy, sys
bench = runpy.run_path(sys.argv[1])
out = {}
for name in sys.argv[2:]:
    text, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(err):
        try:
            code = bench["main"]([name, "--help"])
        except SystemExit as e:
            code = e.code
    out[name] = [code, text.getvalue(), err.getvalue()]
print(json.dumps(out))
"""


def test_help_lists_every_subcommand_and_each_explains_itself():
    top = _bench("--help")
    assert top.returncode == 0, top.stderr
    for name in SUBCOMMANDS:
        assert f"\n    {name} " in top.stdout or f"\n    {name}\n" in top.stdout, name
    run = subprocess.run(
        [sys.executable, "-c", SUB_HELPS, BENCH, *SUBCOMMANDS],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(ROOT),
    )
    assert run.returncode == 0, run.stderr
    helps = json.loads(run.stdout)
    for name in SUBCOMMANDS:
        code, stdout, stderr = helps[name]
        assert code == 0, stderr
        assert f"usage: bench.py {name}" in stdout and "default" in stdout


def test_an_unknown_subcommand_is_refused():
    assert _bench("nope").returncode == 2


def test_graph_build_refuses_a_missing_locomo_folder_before_its_long_ingests(tmp_path):
    """Regression: run from a copy of the tree elsewhere, the default LoCoMo folder was missing and the bench
    failed on it only after its two 100k ingests (about 15 minutes), printing none of their figures."""
    out = _bench("graph-build", "--locomo", str(tmp_path / "nowhere"), "--ingest", "100000")
    assert out.returncode == 2 and "no LoCoMo conversation files" in out.stderr and "nowhere" in out.stderr


def test_in_process_measurements_run_under_the_sidecars_native_settings():
    """The floors are measured in the benchmark's own process: with the sidecar's malloc and BLAS settings,
    set before numpy loads, or the floor runs faster than the sidecar can and hides its losses."""
    code = (
        "import os, runpy, sys; runpy.run_path(sys.argv[1], run_name='bench'); "
        "print(os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('ARROW_DEFAULT_MEMORY_POOL'))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "ARROW_DEFAULT_MEMORY_POOL")}
    out = subprocess.run(
        [sys.executable, "-c", code, BENCH], capture_output=True, text=True, timeout=60, cwd=str(ROOT), env=env
    )
    assert out.returncode == 0, out.stderr
    expected = "1 system" if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc" else "1 None"
    assert out.stdout.split("\n")[-2] == expected


def test_pct_interpolates_or_takes_the_sample_by_rank():
    values = [i / 1000 for i in range(1, 11)]  # 1..10 ms
    linear, rank = timing.pct(values), timing.pct(values, "rank")
    assert linear["n"] == rank["n"] == 10
    assert linear["p50_ms"] == pytest.approx(5.5) and rank["p50_ms"] == pytest.approx(6.0)
    assert linear["p99_ms"] == pytest.approx(9.91) and rank["p99_ms"] == pytest.approx(10.0)
    assert linear["min_ms"] == pytest.approx(1.0) and linear["max_ms"] == pytest.approx(10.0)
    assert timing.pct([])["n"] == 0 and timing.pct([], "rank")["p99_ms"] == 0.0


def test_table_aligns_columns_and_right_aligns_numbers():
    text = output.format_table(
        [
            {"request": "store", "n": 3, "p50 ms": 1.25},
            {"request": "query, hybrid", "n": 300, "p50 ms": 12.0, "note": "x"},
        ]
    )
    lines = text.splitlines()
    assert lines[0] == "| request       |   n | p50 ms | note |"
    assert lines[1] == "|---------------|----:|-------:|------|"
    assert lines[2] == "| store         |   3 |    1.2 |      |"
    assert lines[3] == "| query, hybrid | 300 |   12.0 | x    |"
    assert len({len(line) for line in lines}) == 1


def test_client_pipelines_requests_and_reads_answers_in_order(tmp_path):
    with Sidecar(
        tmp_path / "data", command=[sys.executable, "-c", FAKE], stderr=tmp_path / "fake.log", timeout=30
    ) as sc:
        seconds, ready = sc.wait_ready()
        assert ready["type"] == "ready" and seconds > 0
        for i in range(50):
            sc.queue({"type": "store", "request_id": i})
        sc.flush()
        assert [sc.read()["request_id"] for _ in range(50)] == list(range(50))
        resp, seconds = sc.timed({"type": "store"}, "ok")
        assert resp["type"] == "ok" and seconds > 0
        with pytest.raises(BenchError, match="expected a 'results' response"):
            sc.request({"type": "query"}, "results")
        assert sc.finish(30) == 0


def test_client_gives_up_on_a_missing_answer_after_its_timeout(tmp_path):
    with Sidecar(tmp_path / "data", command=[sys.executable, "-c", FAKE], timeout=60) as sc:
        sc.wait_ready()  # a Python's start-up took over 0.5 s on a loaded machine: not the timeout under test
        sc.timeout = 0.5
        with pytest.raises(BenchError, match=r"no response within 0\.5 s"):
            sc.request({"type": "silent"}, "ok")
    assert sc.proc.poll() is not None  # the context manager ended the child


def test_realuse_keeps_the_steady_store_and_times_a_copy_of_it_next_time(tmp_path):
    """--steady-store: (b)'s store (10-20 minutes to build at 100k) is built once per sizes and seed; later runs
    time a copy, so the kept store stays as built; a half-kept store or other sizes build again."""
    from benchkit.realuse import kept_or_made

    made = []

    def make_into(data):
        def make():
            made.append(data)
            data.mkdir()
            (data / "rows").write_text("built")

        return make

    kept, sizes = tmp_path / "kept", {"rows": 100, "users": 10, "seed": 11, "graph": "built"}
    assert kept_or_made(kept, sizes, tmp_path / "b1", make_into(tmp_path / "b1")) is False and len(made) == 1
    (tmp_path / "b1" / "rows").write_text("written by the timed rounds")
    assert kept_or_made(kept, sizes, tmp_path / "b2", make_into(tmp_path / "b2")) is True and len(made) == 1
    assert (tmp_path / "b2" / "rows").read_text() == "built"
    assert kept_or_made(kept, {**sizes, "rows": 200}, tmp_path / "b3", make_into(tmp_path / "b3")) is False
    (kept / "built.json").unlink()  # as a copy cut short leaves it
    assert kept_or_made(kept, sizes, tmp_path / "b4", make_into(tmp_path / "b4")) is False and len(made) == 3
    assert kept_or_made(None, sizes, tmp_path / "b5", make_into(tmp_path / "b5")) is False and len(made) == 4


def test_realuse_table_has_every_row_of_the_speed_issue_with_its_verdict():
    """`realuse`'s one table (issue 21): each state and mode beside the floor, cold vs warm, the soak's
    deciles and each binary, judged against its target."""
    from benchkit import realuse, soak

    def p(p50: float, p99: float) -> dict[str, float]:
        return {"p50_ms": p50, "p99_ms": p99}

    state = {
        "store": p(4.0, 10.0),
        "default": p(2.0, 30.0),
        "semantic": p(2.0, 6.0),
        "keyword": p(2.0, 6.0),
        "peak_rss_mb": 300.0,
    }
    samples = [{"t": float(k), "done": 100 * k, "rss_mib": 400.0, "rss_max_mib": 440.0} for k in range(1, 11)]
    results = {
        "floor_ms": 2.0,
        "floor_long_ms": 20.0,
        "ready": {"median_ms": 900.0, "rss_mb": 300.0},
        "a": {**state, "ingest_per_s": 300.0},
        "b": {
            **state,
            "cold": {
                "cold": p(10.0, 20.0),
                "warm": p(2.0, 4.0),
                "cached_users": 120,
                "spilled_users": 880,
                "first": p(14.0, 30.0),
            },
        },
        "c": {**state, "store": p(30.0, 60.0)},
        "soak": soak.deciles(samples),
        "binaries": [
            {"kind": "onedir", "bytes": 490e6, "ready_ms": 900.0},
            {"kind": "onefile", "bytes": 110e6, "ready_ms": 1400.0},
        ],
    }
    rows = {r["measurement"]: r for r in realuse.report(results)}
    assert rows["(a) store"][""] == "ok" and rows["(a) default"][""] == "MISSED"  # p99 30 ms > 4 x 2 ms
    assert rows["(c) store, against the long floor"]["x floor"] == "1.5x / 3.0x"  # against 20 ms, not 2 ms
    assert rows["(b) peak RSS"][""] == "MISSED"  # 300 MB > 250 MB
    assert not any("rounds' end" in name for name in rows)  # a results file from before the graph was waited for
    results["b"].update(rounds_peak_rss_mb=240.0, graph="built", graph_wait_s=14.2)
    rows = {r["measurement"]: r for r in realuse.report(results)}
    end = rows[
        "(b) peak RSS at the rounds' end (graph built before them; the row above: then 14 s of the graph "
        "building their stores)"
    ]
    assert end["p50 / p99 ms"] == "240 MB" and end[""] == ""  # shown, not judged: the peak above is the one judged
    results["b"].update(graph="building", graph_wait_s=None)  # the queue never emptied within the wait
    rows = {r["measurement"]: r for r in realuse.report(results)}
    assert (
        "(b) peak RSS at the rounds' end (graph building before them; the row above: up to 120 s more, the graph "
        "still building or off)"
    ) in rows
    assert rows["cold vs warm query (120 users in memory, 880 on disk)"][""] == "MISSED"  # 5x warm
    assert rows["a user's first query since start (read from the table)"]["x floor"] == "7.0x warm"
    assert rows["ready: python -m sidecar (median), RSS at ready"][""] == "MISSED"  # 300 MB at ready
    soak_rows = [r for name, r in rows.items() if name.startswith("soak")]
    assert len(soak_rows) == 3 and all(r[""] == "ok" for r in soak_rows)
    assert rows["frozen onedir: size, spawn to ready (median)"][""] == "MISSED"
    assert rows["frozen onefile: size, spawn to ready (median)"][""] == "ok"
    # at 1M memories the budget is 300 MB, and the store reopened for the cold queries is judged too
    results["b"].update(rows=1_000_000, reopened_peak_rss_mb=880.0)
    rows = {r["measurement"]: r for r in realuse.report(results)}
    assert rows["(b) peak RSS"]["target"] == "<= 300 MB at 1M" and rows["(b) peak RSS"][""] == "ok"
    assert rows["(b) reopened: peak RSS through every user's first query"][""] == "MISSED"


@linux_only("the compaction bench resets and reads page counts through /proc/self/clear_refs and status")
def test_compaction_measures_each_pass_and_the_rewrite_of_the_indexed_table(tmp_path):
    """`compaction` (docs/performance.md, "Compaction's read-ahead bounded"): new one-row fragments merged
    among themselves first (not yet indexed), then with the indexed table into one fragment, each pass timed."""
    out = subprocess.run(
        [
            sys.executable,
            BENCH,
            "compaction",
            "--rows",
            "3000",
            "--users",
            "30",
            "--appends",
            "20",
            "--io-buffer-mb",
            "32",
            "--json",
            str(tmp_path / "c.json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(ROOT),
    )
    assert out.returncode == 0, out.stderr
    import json

    run = json.loads((tmp_path / "c.json").read_text())["runs"][0]
    assert run["buffer"] == str(32 << 20) and run["rows"] == 3020
    fragments = [(p["fragments_before"], p["fragments_after"]) for p in run["passes"]]
    assert fragments[:2] == [(21, 2), (2, 1)] and fragments[-1] == (1, 1)
    assert "32 MiB" in out.stdout and all(p["seconds"] > 0 for p in run["passes"])


@linux_only("the RSS timeline reads /proc/<pid>/smaps")
def test_rss_timeline_catches_a_child_processs_peak_with_its_kinds_and_the_phases(tmp_path):
    """`realuse --rss-timeline` (benchkit/timeline.py): a real process that holds 120 MiB for a second shows that
    peak, its kind (large anonymous mappings) at the high, and the marks in order; no path, no file."""
    from benchkit.timeline import rss_timeline

    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; time.sleep(0.5); b = bytearray(120 << 20); "
            "b[::4096] = b'x' * len(b[::4096]); time.sleep(1.0)",
        ]
    )
    try:
        with rss_timeline(tmp_path / "tl.json", child.pid) as timeline:
            timeline.mark("started")
            child.wait(30)
            timeline.mark("exited")
        with rss_timeline(None, child.pid) as nothing:
            nothing.mark("ignored")
    finally:
        child.kill()
    import json

    out = json.loads((tmp_path / "tl.json").read_text())
    assert out["peak"][1] >= 120 and [name for _, name in out["marks"]] == ["started", "exited"]
    assert max(h[2]["anon_large"] for h in out["highs"]) >= 115
    assert list(tmp_path.iterdir()) == [tmp_path / "tl.json"]


def test_graph_build_times_single_stores_in_alternating_blocks_of_both_configurations():
    """graph-build's store figure (issue 19's "added p50"): both configurations get every store, in blocks
    taking turns, with the first of each pair alternating, so a machine's drift during the run weighs on both."""
    from benchkit.graph_build import store_blocks

    blocks = store_blocks(120, 50)
    assert blocks == [
        (True, 0, 50),
        (False, 0, 50),
        (False, 50, 100),
        (True, 50, 100),
        (True, 100, 120),
        (False, 100, 120),
    ]
    for graph in (True, False):
        assert sum(end - first for on, first, end in blocks if on is graph) == 120
    assert store_blocks(0, 50) == []


@posix_only("the heap probe asks a process with SIGUSR2")
def test_the_python_heap_probe_reads_a_hooked_process_and_never_signals_another(monkeypatch, tmp_path):
    """graph-build's arenas row: a Python started after enable() answers SIGUSR2 with its allocator's state (and
    keeps running); one started before has no hook, and read() leaves it alone (SIGUSR2 would end it)."""
    from benchkit import pyheap

    monkeypatch.setattr(pyheap, "_DIR", [])
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    monkeypatch.delenv("BENCH_PYHEAP_DIR", raising=False)
    code = "import sys, time; keep = [str(i) * 20 for i in range(200_000)]; print('up', flush=True); time.sleep(60)"
    plain = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    pyheap.enable(tmp_path)
    hooked = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert plain.stdout.readline() == b"up\n" and hooked.stdout.readline() == b"up\n"
        assert pyheap.read(plain.pid) is None and plain.poll() is None
        heap = pyheap.read(hooked.pid)
        assert heap is not None and hooked.poll() is None
        assert heap["arenas_highwater_mark"] >= heap["arenas_allocated_current"] >= 10  # 200k strings: 10+ MB
        assert heap["bytes_in_allocated_blocks"] > 200_000 * 60
    finally:
        for p in (plain, hooked):
            p.kill()
            p.wait()


def _prompt_user() -> dict:
    """A labelled user as tests/fixtures/prompt_recall/ holds them: Berlin, then Lisbon, then back in Berlin."""
    texts = {"home1": "I live in Berlin.", "s1": "lol", "home2": "I moved to Lisbon.", "s2": "haha nice"}
    texts |= {"home3": "back in Berlin!", "pet1": "my dog is called Rex"}
    questions = [
        ("where do I live now?", "present", "home3", ["home1", "home2"]),
        ("what's my dog called?", "about", "pet1", []),
        ("我住在哪里？", "other_script", "home3", ["home1"]),
    ]
    return {
        "user": "u1",
        "name": "Sam",
        "lang": "zh",
        "split": "tuning",
        "messages": [{"key": k, "ts": 100 + i, "text": t} for i, (k, t) in enumerate(texts.items())],
        "questions": [
            {"text": t, "kind": k, "expect": e, "replaced": r, "small_talk": ["s1", "s2"]} for t, k, e, r in questions
        ],
    }


def test_prompt_scoring_turns_answers_into_the_figures_of_issue_66():
    """`prompt` (benchkit/prompt.py): current-first, replaced-marked (query `superseded`, context "outdated"),
    false marks, padding and rank-1, from fake answers (keys instead of ids)."""
    from benchkit.prompt import figures, judge, tables

    user = _prompt_user()
    present, about, other = user["questions"]
    mark = {"id": "home3", "at": 104}
    # present: the replaced Berlin first (unmarked), then the current one, then Lisbon marked, then small talk
    a = judge(
        user,
        present,
        [{"key": "home1"}, {"key": "home3"}, {"key": "home2", "superseded": mark}, {"key": "s1"}, {"key": "s2"}],
        "<memories>\n- 1970-01-01 Sam: I live in Berlin. (outdated)\n- 1970-01-01 Sam: I moved to Lisbon.\n</memories>",
    )
    assert (a["rank"], a["current_first"], a["replaced_shown"], a["replaced_marked"]) == (2, False, 2, 1)
    assert a["padding"] == ["s1", "s2"] and (a["context_outdated_shown"], a["context_outdated_marked"]) == (2, 1)
    # about: first, no padding; a current memory carrying `superseded` is a false mark; a mark naming a memory
    # that did not replace it (an earlier one) does not count
    b = judge(
        user,
        about,
        [{"key": "pet1"}, {"key": "home3", "superseded": mark}, {"key": "home1", "superseded": {"id": "s1", "at": 1}}],
        "",
    )
    assert (b["rank"], b["false_marks"], b["replaced_shown"], b["replaced_marked"], b["padding"]) == (1, 1, 1, 0, [])
    # other script: the current one first and the replaced one below it, marked
    c = judge(user, other, [{"key": "home3"}, {"key": "home1", "superseded": {"id": "home2", "at": 102}}], "")
    assert (c["rank"], c["current_first"], c["replaced_marked"]) == (1, True, 1)

    f = figures([a, b, c])
    assert f["questions"] == 3 and f["with replaced"] == 2 and f["current-first"] == 0.5
    assert f["rank-1"] == 0.667 and f["found@5"] == 1.0
    assert (f["replaced shown"], f["replaced marked"], f["false marks"]) == (4, 0.5, 1)
    assert f["context outdated"] == "2 / 1" and (f["padding"], f["padded"]) == (2, 0.333)
    rows, langs = tables([a, b, c])
    assert [r["kind"] for r in rows] == ["present", "about", "other_script", "all"]
    assert langs == [
        {"split": "tuning", "lang": "zh", "questions": 1, "rank-1": 1.0, "found@5": 1.0, "current-first": 1.0}
    ]
    # nothing returned: no figure divides by zero
    assert figures([judge(user, present, [], "")])["replaced marked"] is None


def test_prompt_runs_end_to_end_on_two_labelled_users(tmp_path):
    """`bench.py prompt --users 2`: two users of the set stored through a real sidecar, asked every question."""
    import json

    out = subprocess.run(
        [sys.executable, BENCH, "prompt", "--split", "tuning", "--users", "2", "--json", str(tmp_path / "p.json")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(ROOT),
    )
    assert out.returncode == 0, out.stderr
    result = json.loads((tmp_path / "p.json").read_text())
    assert {q["user"] for q in result["questions"]} == {"en01", "en02"} and len(result["questions"]) == 9
    assert [r["kind"] for r in result["rows"]][-1] == "all" and "current-first" in out.stdout


def test_prompt_recall_set_holds_what_issue_66_asks_for():
    """tests/fixtures/prompt_recall/: split by user, at least 15 users a half, 20-60 messages each in time
    order, every label naming a message of its user (`load` checks), and users in each other script."""
    from benchkit.prompt import DATA, load

    halves = {split: load(DATA, split) for split in ("tuning", "heldout")}
    assert all(len(users) >= 15 for users in halves.values())
    assert not {u["user"] for u in halves["tuning"]} & {u["user"] for u in halves["heldout"]}
    everyone = halves["tuning"] + halves["heldout"]
    assert all(20 <= len(u["messages"]) <= 60 for u in everyone)
    for users in halves.values():
        assert {"zh", "ja", "ko", "ru", "ar"} <= {u["lang"] for u in users}
        assert {q["kind"] for u in users for q in u["questions"]} == {"present", "past", "about", "other_script"}
    small = {m["text"] for u in everyone for m in u["messages"] if m["key"].startswith("s") and m["key"][1:].isdigit()}
    assert {"lol", "haha nice", "ok", "gn", "nice one"} <= small


def test_secrets_sample_holds_what_issue_68_asks_for():
    """scripts/benchkit/data/secrets.jsonl: at least 100 lines with a secret, every kind, several languages and
    positions, in two halves; hard negatives beside them; and the scoring counts a secret left in place as missed."""
    from benchkit.secrets import DATA, found, recall

    from sidecar.text import SECRET_KINDS

    sample = [json.loads(line) for line in (DATA / "secrets.jsonl").read_text().splitlines()]
    secrets = [r for r in sample if r["kind"] is not None]
    assert len(secrets) >= 100 and {r["kind"] for r in secrets} == set(SECRET_KINDS)
    assert len({r["lang"] for r in secrets}) >= 15 and {r["half"] for r in sample} == {"tune", "heldout"}
    assert all(r["secret"] in r["text"] for r in secrets)
    starts = sum(r["text"].startswith(r["secret"]) for r in secrets)
    ends = sum(r["text"].rstrip(".").endswith(r["secret"]) for r in secrets)
    assert starts >= 5 and ends >= 20 and len(secrets) - starts - ends >= 50
    assert sum(r["kind"] is None for r in sample) >= 50
    row = {"kind": "iban", "secret": "GB33BUKB20201555555555", "half": "tune"}
    assert not found(row, "send to GB33BUKB20201555555555") and found(row, "send to [redacted: iban]")
    assert not found(row, "send to [redacted: card number]")  # the wrong kind is not a hit
    table = {r["kind"]: r for r in recall([{**row, "text": "IBAN GB33BUKB20201555555555"}])}
    assert table["iban"]["tune"] == "1/1" and table["iban"]["heldout"] == "0/0"
