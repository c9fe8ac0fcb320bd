"""scripts/soak.py: the long soak is run by hand (its numbers are in the README); this runs it short,
through a real sidecar, so the script the numbers come from keeps working, and pins its verdict."""

from __future__ import annotations

import subprocess
import sys

import orjson

from conftest import ROOT, load_script


soak = load_script("soak")


def _samples(steady: list[float], peaks: list[float]) -> list[dict]:
    return [{"rss_mib": s, "rss_max_mib": p} for s, p in zip(steady, peaks)]


def test_plateau_judges_the_steady_rss_and_reports_the_peaks():
    flat = soak._plateau(_samples([500, 510, 505, 508, 506, 509], [600, 700, 650, 900, 640, 950]), 0.10)
    assert flat["plateaued"] is True
    assert flat["last_peak_mib"] == 950 and flat["middle_peak_mib"] == 900
    growing = soak._plateau(_samples([400, 450, 500, 550, 600, 650], [400, 450, 500, 550, 600, 650]), 0.10)
    assert growing["plateaued"] is False
    assert soak._plateau(_samples([500] * 5, [500] * 5), 0.10)["plateaued"] is None  # too few to judge


def test_conversation_lengths_have_the_mean_asked_for():
    import random

    rng = random.Random(7)
    lengths = [soak._length(rng, 20.0) for _ in range(20_000)]
    assert min(lengths) >= 1
    assert 19.0 < sum(lengths) / len(lengths) < 21.0
    assert soak._length(rng, 0.5) == 1


def test_a_short_soak_runs_end_to_end(tmp_path):
    out = tmp_path / "soak.json"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "soak.py"), "--requests", "600", "--interval", "0.5",
                           "--users", "20", "--conversations", "4", "--exchanges", "5",
                           "--query-mix", "semantic=0.5,hybrid=0.5", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = orjson.loads(out.read_bytes())
    assert result["failure"] is None and result["exit_code"] == 0
    assert result["samples"][-1]["done"] == 600  # every answer arrived, in order, and was right
    assert all(0 < s["rss_min_mib"] <= s["rss_mib"] <= s["rss_max_mib"] for s in result["samples"])
    assert "RSS" in proc.stdout
