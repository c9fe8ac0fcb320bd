#!/usr/bin/env python3
"""Which locked dependencies have newer versions, and does the test suite pass on them?

    python scripts/newest_deps.py            # the table of packages that moved (about 30 s, needs PyPI)
    python scripts/newest_deps.py --test     # ... then the default test suite on that set (+ about 8 min)

uv.lock pins every package the tests, CI and the release use. This command re-resolves, in a temporary
copy of the project's metadata (pyproject.toml, uv.lock, and the README and sidecar/__init__.py it reads
its metadata from), with `uv lock --upgrade`: the newest versions pyproject.toml's ranges allow. It prints
the packages whose version moved (name, locked, newest). With --test it installs that set (the `test`
extra, as the README's command installs it) into a temporary virtual environment, installs this checkout
into it (editable, no dependencies), and runs the default test suite (`python -m pytest`, the `slow`
tests left out) with it; the exit status is pytest's, and a failure names the packages that moved.
Nothing in the checkout changes: to take the new versions, `uv lock --upgrade` (or
`uv lock --upgrade-package NAME` for one) in the checkout, then the tests (docs/contributors.md).

.github/workflows/newest.yml runs `--test` every week.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
# what `uv lock` reads: the project's metadata is built (setuptools), which needs the README and the version
METADATA_FILES = ("pyproject.toml", "uv.lock", "README.md", "sidecar/__init__.py")
UV_PIN = "uv==0.13.10"  # the README's


class Move(NamedTuple):
    """A package whose locked versions changed; `locked` is empty for a new package, `newest` for one gone."""

    name: str
    locked: tuple[str, ...]
    newest: tuple[str, ...]


def _version_key(version: str) -> tuple:
    """A sort key that puts 1.10 after 1.9 (numbers as numbers), enough to order a table."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.+!-]", version))


def locked_versions(lock: dict) -> dict[str, tuple[str, ...]]:
    """Package name -> its versions in a parsed uv.lock (several when they differ by Python version), the
    project itself left out (it is the checkout, not a dependency)."""
    versions: dict[str, set[str]] = {}
    for package in lock.get("package", []):
        source = package.get("source", {})
        if "editable" in source or "virtual" in source or "version" not in package:
            continue
        versions.setdefault(package["name"], set()).add(package["version"])
    return {name: tuple(sorted(v, key=_version_key)) for name, v in versions.items()}


def moved(old_lock: dict, new_lock: dict) -> list[Move]:
    """The packages whose versions differ between two parsed uv.lock files, by name."""
    old, new = locked_versions(old_lock), locked_versions(new_lock)
    return [
        Move(name, old.get(name, ()), new.get(name, ()))
        for name in sorted(old.keys() | new.keys())
        if old.get(name) != new.get(name)
    ]


def table(moves: list[Move]) -> str:
    """A Markdown table of the moves (it reads as plain text too)."""
    rows = [("package", "locked", "newest")] + [
        (m.name, ", ".join(m.locked) or "(new)", ", ".join(m.newest) or "(gone)") for m in moves
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def summary(moves: list[Move]) -> str:
    """One line naming the moves: `numpy 2.3.5 -> 2.4.0, pydantic 2.12.0 -> 2.13.1`."""
    return ", ".join(f"{m.name} {'/'.join(m.locked) or '(new)'} -> {'/'.join(m.newest) or '(gone)'}" for m in moves)


def find_uv() -> str:
    beside = Path(sys.executable).parent / ("uv.exe" if os.name == "nt" else "uv")
    found = str(beside) if beside.is_file() else shutil.which("uv")
    if found is None:
        raise SystemExit(f"`uv` is not installed: `python -m pip install {UV_PIN}` (the README's command does)")
    return found


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    full_env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}  # uv: the venv given, not the caller's
    done = subprocess.run(cmd, cwd=cwd, env={**full_env, **(env or {})})
    if done.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` failed with exit code {done.returncode}")


def upgraded_copy(work: Path, uv: str) -> Path:
    """The project's metadata copied to work/project, its lock upgraded there; that folder."""
    project = work / "project"
    for rel in METADATA_FILES:
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, project / rel)
    run([uv, "lock", "--upgrade", "--python", sys.executable], cwd=project)
    return project


def run_tests(project: Path, work: Path, uv: str, pytest_args: list[str]) -> int:
    """Install the upgraded lock's test set and this checkout into a new venv; pytest's exit code there."""
    venv = work / "venv"
    env = {"UV_PROJECT_ENVIRONMENT": str(venv)}
    run(
        [uv, "sync", "--frozen", "--extra", "test", "--no-install-project", "--python", sys.executable],
        cwd=project,
        env=env,
    )
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    run([uv, "pip", "install", "--python", str(python), "--no-deps", "-e", str(ROOT)], cwd=ROOT)
    cmd = [str(python), "-m", "pytest", *pytest_args]
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, cwd=ROOT).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python scripts/newest_deps.py",
        description="Re-resolve uv.lock with `uv lock --upgrade` in a temporary copy (the checkout is not "
        "changed) and print the packages that moved: name, locked version, newest version. Needs PyPI.",
        epilog="Exit status: 0 when the table printed (and, with --test, the tests passed); pytest's status when "
        "they failed, naming the packages that moved. To take the new versions: `uv lock --upgrade` in the "
        "checkout (or `uv lock --upgrade-package NAME` for one), then the test suite.",
    )
    parser.add_argument(
        "--test",
        action="store_true",
        help="also install the newest set (the `test` extra) and this checkout into a temporary venv and run "
        "the default test suite with it (about 8 minutes on 2 cores)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary folder (the upgraded uv.lock, the venv); print its path"
    )
    parser.add_argument(
        "pytest_args", nargs="*", metavar="PYTEST_ARG", help="with --test: arguments for pytest, after `--`"
    )
    args = parser.parse_args(argv)
    if args.pytest_args and not args.test:
        parser.error("pytest arguments are for --test")

    uv = find_uv()
    work = Path(tempfile.mkdtemp(prefix="newest-deps-"))
    try:
        project = upgraded_copy(work, uv)
        old = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
        new = tomllib.loads((project / "uv.lock").read_text(encoding="utf-8"))
        moves = moved(old, new)
        if not moves:
            print("No package moved: uv.lock already has the newest versions pyproject.toml allows.")
            return 0
        print(f"{len(moves)} package(s) have newer versions than uv.lock pins:\n")
        print(table(moves), flush=True)
        if not args.test:
            return 0
        code = run_tests(project, work, uv, args.pytest_args)
        if code != 0:
            print(
                f"\nThe tests failed (pytest exit code {code}) with the newest versions. Packages that moved: "
                f"{summary(moves)}",
                file=sys.stderr,
            )
            return code
        print(f"\nThe tests pass with the newest versions ({summary(moves)}).")
        return 0
    finally:
        if args.keep:
            print(f"kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
