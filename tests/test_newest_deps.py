"""scripts/newest_deps.py: which locked packages have newer versions (the weekly workflow's command)."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest
from conftest import ROOT, load_script

newest_deps = load_script("newest_deps")

OLD = """
version = 1
[[package]]
name = "memory-sidecar"
source = { editable = "." }
[[package]]
name = "numpy"
version = "2.2.6"
source = { registry = "https://pypi.org/simple" }
[[package]]
name = "numpy"
version = "2.3.5"
source = { registry = "https://pypi.org/simple" }
[[package]]
name = "orjson"
version = "3.9.10"
source = { registry = "https://pypi.org/simple" }
[[package]]
name = "pydantic"
version = "2.12.0"
source = { registry = "https://pypi.org/simple" }
[[package]]
name = "old-only"
version = "1.0"
source = { registry = "https://pypi.org/simple" }
"""

NEW = """
version = 1
[[package]]
name = "memory-sidecar"
source = { editable = "." }
[[package]]
name = "numpy"
version = "2.2.6"
source = { registry = "https://pypi.org/simple" }
[[package]]
name = "numpy"
version = "2.4.0"
source = { registry = "https://pypi.org/simple" }
[[package]]
name = "orjson"
version = "3.10.1"
source = { registry = "https://pypi.org/simple" }
[[package]]
name = "pydantic"
version = "2.12.0"
source = { registry = "https://pypi.org/simple" }
[[package]]
name = "new-only"
version = "0.1"
source = { registry = "https://pypi.org/simple" }
"""


def test_the_diff_names_each_package_whose_versions_moved():
    """A version that changed, one of two Python-dependent versions that changed, a package added and one
    gone; an unchanged package and the project itself are not listed."""
    moves = newest_deps.moved(tomllib.loads(OLD), tomllib.loads(NEW))
    assert moves == [
        newest_deps.Move("new-only", (), ("0.1",)),
        newest_deps.Move("numpy", ("2.2.6", "2.3.5"), ("2.2.6", "2.4.0")),
        newest_deps.Move("old-only", ("1.0",), ()),
        newest_deps.Move("orjson", ("3.9.10",), ("3.10.1",)),
    ]
    assert newest_deps.moved(tomllib.loads(OLD), tomllib.loads(OLD)) == []
    lines = newest_deps.table(moves).splitlines()
    assert lines[0].split() == ["|", "package", "|", "locked", "|", "newest", "|"] and set(lines[1]) <= {"|", "-"}
    assert lines[5].split() == ["|", "orjson", "|", "3.9.10", "|", "3.10.1", "|"]
    assert "(new)" in lines[2] and "(gone)" in lines[4]
    assert "orjson 3.9.10 -> 3.10.1" in newest_deps.summary(moves)


def test_versions_sort_as_numbers():
    lock = {"package": [{"name": "a", "version": v, "source": {}} for v in ("1.10.0", "1.9.2", "1.9.10")]}
    assert newest_deps.locked_versions(lock) == {"a": ("1.9.2", "1.9.10", "1.10.0")}


def test_help_says_what_it_does():
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "newest_deps.py"), "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and "uv lock --upgrade" in out.stdout and "--test" in out.stdout, out


@pytest.mark.slow  # asks PyPI (network) for the newest versions: `pytest -m slow`
def test_a_real_run_prints_the_table_and_leaves_the_checkout_alone():
    lock = (ROOT / "uv.lock").read_bytes()
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "newest_deps.py")], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert (ROOT / "uv.lock").read_bytes() == lock
    locked = newest_deps.locked_versions(tomllib.loads(lock.decode()))
    if out.stdout.startswith("No package moved"):
        return
    rows = [line.split("|")[1:4] for line in out.stdout.splitlines() if line.startswith("| ")][1:]
    assert rows, out.stdout
    for name, old, _new in rows:  # each row's "locked" column is what uv.lock pins
        assert (", ".join(locked.get(name.strip(), ())) or "(new)") == old.strip(), (name, old, out.stdout)


def test_the_weekly_workflow_runs_it_with_the_tests():
    import yaml

    workflows = ROOT / ".github" / "workflows"
    newest = yaml.safe_load((workflows / "newest.yml").read_text(encoding="utf-8"))
    triggers = newest[True]  # YAML 1.1 reads the key `on` as True
    assert triggers["schedule"][0]["cron"] and "workflow_dispatch" in triggers
    assert newest["permissions"] == {"contents": "read"}
    [job] = newest["jobs"].values()
    assert any("python scripts/newest_deps.py --test" in s.get("run", "") for s in job["steps"])
    ci = yaml.safe_load((workflows / "ci.yml").read_text(encoding="utf-8"))
    ci_actions = {s["uses"] for s in ci["jobs"]["tests"]["steps"] if "uses" in s}
    assert {s["uses"] for s in job["steps"] if "uses" in s} <= ci_actions  # the same pinned actions as CI
