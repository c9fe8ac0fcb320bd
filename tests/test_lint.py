"""The linter, the formatter and the type checker, as the README's test command runs them: `ruff check .`,
`ruff format --check .` (config: [tool.ruff] in pyproject.toml) and `mypy` (config: [tool.mypy]: sidecar/ and
scripts/), each from this environment (the test extra pins them), each clean. A finding fails with the tool's
own report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _run(tool: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    exe = BIN / tool
    if not exe.exists() and not exe.with_suffix(".exe").exists():
        pytest.fail(f"{exe} is missing: install the test extra (uv sync --locked --extra test --inexact)")
    return subprocess.run([str(exe), *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.parametrize("command", [("ruff", "check", "."), ("ruff", "format", "--check", ".")])
def test_ruff_finds_nothing(command):
    r = _run(*command)
    assert r.returncode == 0, f"`{' '.join(command)}` found:\n{r.stdout}{r.stderr}"


def test_mypy_finds_nothing():
    r = _run("mypy", timeout=1200)  # about 2 minutes on 2 cores with no .mypy_cache yet, seconds with one
    assert r.returncode == 0, f"mypy found:\n{r.stdout}{r.stderr}"
