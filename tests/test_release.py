"""The release machinery: one version everywhere, the workflows valid and safe (the GitHub workflow schema and
zizmor, offline), and the Linux legs of the release workflow run here through the same commands the
workflow runs: the tag check, `python -m build` + `twine check`, the checksums and their verification, and
the release notes. The binary build and its smoke test are exercised by tests/test_frozen.py; the macOS and
Windows legs run on GitHub's runners only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, load_script

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
check_version = load_script("check_version")
release_assets = load_script("release_assets")


def _tool(name: str) -> str:
    """A console script installed beside this Python (the test extras), found on every OS."""
    found = shutil.which(name, path=sysconfig.get_path("scripts")) or shutil.which(name)
    if found is None:
        pytest.fail(f"`{name}` is not installed: pip install -e '.[test]'")
    return found


def _lint(paths: list[Path]) -> list[subprocess.CompletedProcess]:
    schema = subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    zizmor = subprocess.run(
        [_tool("zizmor"), "--offline", "--min-severity", "medium", "--no-progress", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    return [schema, zizmor]


# ---------------------------------------------------------------- versions


def test_one_version_everywhere_and_the_typescript_client_follows_it():
    """The TypeScript client is released with the sidecar, from the same tag: it carries the same version."""
    import sidecar

    assert check_version.package_version() == sidecar.__version__
    assert check_version.problems(None) == []
    assert check_version.problems(f"v{sidecar.__version__}") == []
    client = json.loads((ROOT / "clients" / "typescript" / "package.json").read_text(encoding="utf-8"))
    assert client["version"] == sidecar.__version__


def test_a_tag_or_a_client_version_that_differs_fails_naming_the_file(tmp_path):
    for rel in (
        "sidecar/__init__.py",
        "clients/typescript/package.json",
        "clients/typescript/package-lock.json",
        "CHANGELOG.md",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    version = check_version.package_version(tmp_path)
    [tag] = check_version.problems("v99.0.0", tmp_path)
    assert "does not match the package's version" in tag and "sidecar/__init__.py" in tag
    [name] = check_version.problems("release-1", tmp_path)
    assert "not a release tag" in name
    package = tmp_path / "clients/typescript/package.json"
    package.write_text(
        package.read_text(encoding="utf-8").replace(f'"version": "{version}"', '"version": "9.9.9"', 1),
        encoding="utf-8",
    )
    [client] = check_version.problems(f"v{version}", tmp_path)
    assert "clients/typescript/package.json" in client and "9.9.9" in client
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## [Unreleased]\n", encoding="utf-8")
    assert any("CHANGELOG.md has no" in p for p in check_version.problems(None, tmp_path))
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_version.py"), "v99.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "v99.0.0" in out.stderr and "sidecar/__init__.py" in out.stderr


# ---------------------------------------------------------------- the workflows


def test_workflows_pass_the_schema_and_zizmor():
    assert [p.name for p in WORKFLOWS] == ["ci.yml", "newest.yml", "release.yml"]
    for proc in _lint(WORKFLOWS):
        assert proc.returncode == 0, f"{proc.args[0]}:\n{proc.stdout}\n{proc.stderr}"


def test_the_linters_refuse_an_unsafe_workflow(tmp_path):
    """What the two linters are for: an action by tag, a tag name pasted into a script, a missing key."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on:\n  push:\n    tags: ['v*']\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - uses: actions/checkout@v4\n      - run: echo ${{ github.ref_name }}\n",
        encoding="utf-8",
    )
    schema, zizmor = _lint([bad])
    assert schema.returncode == 0, schema.stdout  # valid for GitHub, unsafe
    assert zizmor.returncode != 0 and "unpinned" in zizmor.stdout and "artipacked" in zizmor.stdout, zizmor.stdout
    bad.write_text("on: push\njobs:\n  a:\n    steps: []\n", encoding="utf-8")  # no runs-on
    assert _lint([bad])[0].returncode != 0


def test_ci_runs_the_readme_command_on_three_systems_and_two_pythons():
    ci = yaml.safe_load((ROOT / ".github/workflows/ci.yml").read_text(encoding="utf-8"))
    matrix = ci["jobs"]["tests"]["strategy"]["matrix"]
    assert {os_[:5] for os_ in matrix["os"]} == {"ubunt", "macos", "windo"}
    assert {"3.11", "3.13"} <= set(matrix["python"])
    runs = [s.get("run", "") for s in ci["jobs"]["tests"]["steps"]]
    assert any("uv sync --locked --extra test" in r for r in runs), runs  # the lock, as the README installs it
    assert "uv run --no-sync python -m pytest" in runs
    assert "python -m pytest" in (ROOT / "README.md").read_text(encoding="utf-8")
    node = [
        s["with"]["node-version"]
        for job in ci["jobs"].values()
        for s in job["steps"]
        if "setup-node" in s.get("uses", "")
    ]
    assert node and set(node) == {20}


def test_every_script_the_workflows_run_is_in_scripts():
    text = "\n".join(p.read_text(encoding="utf-8") for p in WORKFLOWS)
    named = {w.split("/", 1)[1] for w in text.split() if w.startswith("scripts/") and w.endswith(".py")}
    assert {"check_version.py", "release_assets.py", "build_binary.py", "smoke_binary.py"} <= named
    missing = sorted(n for n in named if not (ROOT / "scripts" / n).is_file())
    assert missing in ([], ["smoke_binary.py"]), f"the workflows run scripts that do not exist: {missing}"
    if missing:  # the interface agreed with the frozen-binary work (issue 59 part 4), which writes it
        pytest.skip("scripts/smoke_binary.py (the binary's smoke test) has not landed in this checkout yet")


# ---------------------------------------------------------------- the Linux leg, as the workflow runs it


def _steps(job: str) -> list[str]:
    """The `run:` scripts of a release job, in order (pip installs left out: the test extras have the tools)."""
    release = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8"))
    return [
        s["run"]
        for s in release["jobs"][job]["steps"]
        if "run" in s and not s["run"].startswith("python -m pip install")
    ]


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="the release workflow's Linux leg (its jobs run on "
    "ubuntu runners); on Windows `bash` may be WSL's, outside this Python",
)
def test_the_linux_release_leg_runs_here(tmp_path):
    """The version, python-package and draft-release jobs' steps (all but `gh release create`), verbatim, in a
    copy of the checkout: a wheel and an sdist that pass `twine check --strict`, checksums verified, notes
    written; then a file changed after it was checksummed fails the verification, naming it."""
    import sidecar

    tree = tmp_path / "checkout"
    shutil.copytree(
        ROOT,
        tree,
        ignore=shutil.ignore_patterns(
            ".venv",
            ".git",
            "node_modules",
            "dist",
            "build",
            "*.egg-info",
            "__pycache__",
            ".pytest_cache",
            ".hypothesis",
            "bench-results",
        ),
    )
    bindir = Path(sys.executable).parent  # `python` in the steps is this interpreter, as setup-python makes it there
    tag = f"v{sidecar.__version__}"
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "TAG": tag}
    for job in ("version", "python-package"):
        for script in _steps(job):
            proc = _bash(script, tree, env)
            assert proc.returncode == 0, f"{job}: {script}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    built = sorted(p.name for p in (tree / "out" / "assets").iterdir())
    assert built == [
        f"memory_sidecar-{sidecar.__version__}-py3-none-any.whl",
        f"memory_sidecar-{sidecar.__version__}.tar.gz",
    ]
    with zipfile.ZipFile(tree / "out" / "assets" / built[0]) as wheel:
        assert "sidecar/assets/all-MiniLM-L6-v2/model.onnx" in wheel.namelist()

    (tree / "collected").mkdir()
    shutil.move(tree / "out", tree / "collected" / "python")  # what download-artifact lays out
    verify, *publish = _steps("draft-release")[:-1]  # not `gh release create`
    proc = _bash(verify + "\n" + "\n".join(publish), tree, env)
    assert proc.returncode == 0, proc.stderr
    sums = (tree / "final" / "SHA256SUMS").read_text(encoding="utf-8")
    wheel = tree / "final" / "assets" / built[0]
    assert f"{hashlib.sha256(wheel.read_bytes()).hexdigest()}  {built[0]}" in sums
    notes = (tree / "notes.md").read_text(encoding="utf-8")
    assert "### Added" in notes and "SHA256SUMS" in notes

    sdist = tree / "collected" / "python" / "assets" / built[1]
    sdist.write_bytes(sdist.read_bytes() + b"\0")
    proc = _bash(verify, tree, env)
    assert proc.returncode == 1 and "checksum mismatch" in proc.stderr and built[1] in proc.stderr, proc.stderr


# ---------------------------------------------------------------- release_assets.py on a binary's build-info.json


def test_a_binary_build_is_packed_checksummed_and_described(tmp_path):
    """onefile: the executable as it is; onedir: the folder archived whole (tar.gz, zip for Windows), its
    modes kept; the notes table each binary's size and time to ready."""
    onedir = tmp_path / "dist" / "onedir" / "memory-sidecar-x86_64-unknown-linux-gnu"
    (onedir / "_internal").mkdir(parents=True)
    exe = onedir / "memory-sidecar-x86_64-unknown-linux-gnu"
    exe.write_bytes(b"\x7fELF binary")
    exe.chmod(0o755)
    (onedir / "_internal" / "lib.so").write_bytes(b"library")
    infos = {}
    for target, mode, path in (
        ("x86_64-unknown-linux-gnu", "onedir", exe),
        ("x86_64-pc-windows-msvc", "onedir", exe),
        ("x86_64-unknown-linux-gnu", "onefile", exe),
    ):
        info = tmp_path / f"{target}-{mode}.json"
        info.write_text(
            json.dumps(
                {
                    "executable": str(path),
                    "mode": mode,
                    "target": target,
                    "size_bytes": 123_000_000,
                    "ready_seconds": 0.84,
                }
            ),
            encoding="utf-8",
        )
        infos[target, mode] = info
    out = tmp_path / "collected" / "binary"
    tgz = release_assets.pack(infos["x86_64-unknown-linux-gnu", "onedir"], out)
    zipped = release_assets.pack(infos["x86_64-pc-windows-msvc", "onedir"], out)
    onefile = release_assets.pack(infos["x86_64-unknown-linux-gnu", "onefile"], out)
    assert tgz.name == "memory-sidecar-x86_64-unknown-linux-gnu-onedir.tar.gz"
    assert zipped.name == "memory-sidecar-x86_64-pc-windows-msvc-onedir.zip"
    assert onefile.name == exe.name and onefile.read_bytes() == exe.read_bytes()
    with tarfile.open(tgz) as t:
        member = t.getmember(f"{onedir.name}/{exe.name}")
        assert member.mode & 0o111 and t.getmember(f"{onedir.name}/_internal/lib.so").isfile()
    with zipfile.ZipFile(zipped) as z:
        assert f"{onedir.name}/_internal/lib.so" in z.namelist()

    release_assets.write_sums(out)
    assert release_assets.verify(out) == []
    notes = release_assets.notes("v" + check_version.package_version(), tmp_path / "collected")
    assert f"| `{tgz.name}` | x86_64-unknown-linux-gnu | onedir | 123 MB | 0.84 s |" in notes
    (out / "assets" / "stray.txt").write_text("x", encoding="utf-8")
    onefile.unlink()
    problems = release_assets.verify(out)
    assert any("stray.txt is not listed" in p for p in problems)
    assert any(onefile.name in p and "missing" in p for p in problems)
    with pytest.raises(release_assets.ReleaseError, match="does not exist"):
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({"executable": str(tmp_path / "nope"), "mode": "onefile", "target": "t"}))
        release_assets.pack(bad, out)


def test_the_default_run_leaves_out_the_slow_tests_and_ci_runs_them_after_it():
    """`python -m pytest` is the quick run (pyproject's addopts); .ci/run and CI run `-m slow` after it, so the
    builds, npm, the browser and the release build still run on every change (and exit code 5, nothing
    collected, would fail them)."""
    import tomllib

    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"][
        "addopts"
    ]
    assert "-m 'not slow'" in addopts, addopts
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci_run[-1] == ".venv/bin/python -m pytest -m slow" and ci_run[-2].endswith(".venv/bin/python -m pytest")
    ci = yaml.safe_load((ROOT / ".github/workflows/ci.yml").read_text(encoding="utf-8"))
    runs = [s.get("run", "") for s in ci["jobs"]["tests"]["steps"]]
    assert runs.index("uv run --no-sync python -m pytest") < runs.index("uv run --no-sync python -m pytest -m slow")
    for name in ("test_frozen.py", "test_typescript_client.py", "test_inspector.py", "test_release.py"):
        assert "pytest.mark.slow" in (ROOT / "tests" / name).read_text(encoding="utf-8"), name
