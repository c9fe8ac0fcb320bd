"""`python scripts/bench.py soak` (scripts/benchkit/soak.py): the long soak is run by hand (its numbers are
in the README); this runs it short, through a real sidecar, so the script the numbers come from keeps working,
and pins its verdict."""

from __future__ import annotations

import subprocess
import sys

import orjson
from conftest import ROOT, linux_only

sys.path.insert(0, str(ROOT / "scripts"))
from benchkit import procfs, soak, workload

BENCH = str(ROOT / "scripts" / "bench.py")


def _samples(levels: list[float], steady: list[float], peaks: list[float]) -> list[dict]:
    return [{"rss_min_mib": lo, "rss_mib": s, "rss_max_mib": p} for lo, s, p in zip(levels, steady, peaks)]


def test_plateau_judges_the_level_between_compactions_and_reports_the_rest():
    flat = soak.plateau(
        _samples([500, 502, 501, 503, 502, 504], [510, 560, 540, 600, 590, 640], [600, 700, 650, 900, 640, 950]), 0.10
    )
    # compactions that take longer lift the medians (560 -> 640) but not the level RSS falls back to
    assert flat["plateaued"] is True
    assert flat["middle_level_mib"] == 502 and flat["last_level_mib"] == 503  # medians of the thirds
    assert flat["last_peak_mib"] == 950 and flat["middle_peak_mib"] == 900
    leaking = soak.plateau(
        _samples([400, 450, 500, 550, 600, 650], [410, 460, 510, 560, 610, 660], [420, 470, 520, 570, 620, 670]), 0.10
    )
    assert leaking["plateaued"] is False
    assert soak.plateau(_samples([500] * 5, [500] * 5, [500] * 5), 0.10)["plateaued"] is None  # too few to judge


def test_plateau_of_a_run_from_before_the_minimums_were_kept_uses_the_medians():
    old = [{"rss_mib": s, "rss_max_mib": s + 100} for s in (400, 450, 500, 550, 600, 650)]
    assert soak.plateau(old, 0.10)["plateaued"] is False


def test_deciles_compare_the_first_and_last_tenth_of_the_requests():
    # 1,000 requests, one sample per 100: the first 500 at 100/s, the last 500 at 50/s
    samples, t = [], 0.0
    for k in range(1, 11):
        t += 1.0 if k <= 5 else 2.0
        samples.append({"t": t, "done": 100 * k, "rss_mib": 400 + (20 if k > 7 else 0), "rss_max_mib": 520})
    d = soak.deciles(samples)
    assert d["tenth_rps"][0] == 100 and d["tenth_rps"][-1] == 50
    assert abs(d["throughput_loss"] - 0.5) < 1e-9
    assert d["rss_start_mib"] == 400 and d["rss_last_third_mib"] == 420
    assert abs(d["peak_over_steady"] - 520 / 420) < 1e-9
    assert "too few" in soak.deciles(samples[:5])["message"]


def test_last_half_is_flat_by_the_slope_of_the_level_per_10k_requests():
    # 40,000 requests, a sample per 1,000: the level rises 30 MiB in the first half, then 0.5 or 3 MiB per 10k
    def run(per_10k: float) -> list[dict]:
        return [
            {"done": 1000 * k, "rss_min_mib": 200 + min(k, 20) * 1.5 + max(0, k - 20) * per_10k / 10, "rss_mib": 300}
            for k in range(1, 41)
        ]

    flat, rising = soak.last_half(run(0.5), 1.0), soak.last_half(run(3.0), 1.0)
    assert flat["flat"] is True and abs(flat["slope_mib_per_10k"] - 0.5) < 0.01  # the first half's rise is not judged
    assert rising["flat"] is False and abs(rising["slope_mib_per_10k"] - 3.0) < 0.01
    assert flat["level_mib"]["100%"] > flat["level_mib"]["75%"] > flat["level_mib"]["50%"]
    assert soak.last_half(run(0.5)[:5], 1.0)["flat"] is None  # too few samples


def test_retention_dates_the_stores_in_epochs_and_cuts_between_them():
    kept = soak.Retention(4_000, 100_000)
    assert kept.epoch == 1_000
    dates = [kept.date(i) for i in range(0, 10_000, 7)]
    assert dates == sorted(dates) and dates[0] >= kept.base and max(dates) < kept.base + 28 * 86_400 + kept.gap
    assert all(kept.cleanup(i) is None for i in range(5_000) if i % 1000)  # only at an epoch's start
    assert kept.cleanup(4_000) is None  # the first four epochs are all kept
    request, cut = kept.cleanup(7_000)  # at the start of epoch 7: epoch 2 goes, 3 to 6 stay
    assert request["type"] == "cleanup" and cut == 2
    at = soak.time.time() - request["ttl_days"] * 86_400  # what the sidecar deletes: dated before `at`
    assert kept.date(2_999) < at < kept.date(3_000)
    assert at - kept.date(2_999) > 3600 and kept.date(3_000) - at > 3600  # far from both: a delayed cleanup cuts alike
    assert not soak.Retention(0, 100).on


def test_judge_prints_the_verdict_for_an_earlier_run(tmp_path):
    path = tmp_path / "soak.json"
    path.write_bytes(orjson.dumps({"samples": _samples([500, 502, 501, 503, 502, 504], [510] * 6, [600] * 6)}))
    proc = subprocess.run(
        [sys.executable, BENCH, "soak", "--judge", str(path)], capture_output=True, text=True, timeout=60, cwd=str(ROOT)
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("RSS plateaued: the level between compactions")


@linux_only("reads /proc/<pid>/smaps")
def test_rss_by_kind_accounts_for_the_whole_resident_set():
    import os

    pid = os.getpid()
    kinds = procfs.rss_by_kind_mib(pid)
    total = procfs.rss_kib(pid) / 1024
    assert set(kinds) == {"heap", "arenas", "pyarrow", "anon_large", "anon_small", "files", "other"}
    assert kinds["files"] > 0 and kinds["heap"] > 0  # the interpreter's own file and its heap
    assert abs(sum(kinds.values()) - total) <= 0.05 * total


def test_conversation_lengths_have_the_mean_asked_for():
    import random

    rng = random.Random(7)
    lengths = [workload.conversation_length(rng, 20.0) for _ in range(20_000)]
    assert min(lengths) >= 1
    assert 19.0 < sum(lengths) / len(lengths) < 21.0
    assert workload.conversation_length(rng, 0.5) == 1


@linux_only("the soak samples RSS by kind from /proc/<pid>/smaps")
def test_a_short_soak_runs_end_to_end(tmp_path):
    out = tmp_path / "soak.json"
    proc = subprocess.run(
        [
            sys.executable,
            BENCH,
            "soak",
            "--requests",
            "600",
            "--interval",
            "0.5",
            "--users",
            "20",
            "--conversations",
            "4",
            "--exchanges",
            "5",
            "--query-mix",
            "semantic=0.5,hybrid=0.5",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = orjson.loads(out.read_bytes())
    assert result["failure"] is None and result["exit_code"] == 0
    assert result["samples"][-1]["done"] == 600  # every answer arrived, in order, and was right
    assert all(0 < s["rss_min_mib"] <= s["rss_mib"] <= s["rss_max_mib"] for s in result["samples"])
    assert all(sum(s["rss_by_kind_mib"].values()) > 0 for s in result["samples"])
    assert "RSS" in proc.stdout


@linux_only("the soak samples RSS by kind from /proc/<pid>/smaps")
def test_a_hostile_soak_answers_every_shape_and_keeps_every_acknowledged_memory(tmp_path):
    """Issue 64's shapes mixed into traffic: each gets an expected answer in order, the sidecar keeps serving
    the ordinary requests around them, and every memory answered `ok` is in the export at the end."""
    out = tmp_path / "soak.json"
    proc = subprocess.run(
        [
            sys.executable,
            BENCH,
            "soak",
            "--requests",
            "400",
            "--hostile",
            "0.25",
            "--interval",
            "1",
            "--users",
            "10",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    result = orjson.loads(out.read_bytes())
    assert result["failure"] is None and result["exit_code"] == 0 and result["hostile"] == 0.25
    assert result["samples"][-1]["done"] == 400
    verified = [line for line in proc.stdout.splitlines() if line.startswith("verify: ")]
    acked, found = (int(w) for w in verified[0].split()[1:5:3])
    assert acked == found and acked > 100  # the ordinary stores and the hostile ones answered ok


@linux_only("the soak samples RSS by kind from /proc/<pid>/smaps")
def test_a_soak_with_retention_deletes_the_old_epochs_and_keeps_every_other_acknowledged_memory(tmp_path):
    """--retain: the cleanups delete exactly the epochs they cut (none of their memories in the export) and every
    other memory answered `ok` is in it."""
    out = tmp_path / "soak.json"
    proc = subprocess.run(
        [*(sys.executable, BENCH, "soak", "--requests", "300", "--retain", "120"), "--users", "10", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    result = orjson.loads(out.read_bytes())
    assert result["failure"] is None and result["retain"] == 120 and result["last_half"] is not None
    verified = next(line for line in proc.stdout.splitlines() if line.startswith("verify: ")).split()
    kept, found, deleted, back = int(verified[1]), int(verified[4]), int(verified[11]), int(verified[17])
    # epochs of 30 requests (15 stores); at request 270, epoch 9 starts and epoch 4 goes: epochs 0-4 deleted
    assert kept == found and deleted == 75 and back == 0


def test_every_hostile_shape_can_be_drawn_and_expects_an_answer():
    import random

    from benchkit import hostile

    rng = random.Random(3)
    names = {hostile.draw(rng, "u").name for _ in range(5000)}
    assert len(names) == len(hostile.SHAPES)
    assert all(shape("u").answers for _, shape in hostile.SHAPES)
