#!/usr/bin/env python3
"""Build the frozen memory-sidecar with PyInstaller and name it the way Tauri's `externalBin` wants.

    python scripts/build_binary.py                      # onefile: dist/onefile/memory-sidecar-<triple>[.exe]
    python scripts/build_binary.py --mode onedir        # folder: dist/onedir/memory-sidecar-<triple>/
    python scripts/build_binary.py --measure-ready 5    # then: median spawn-to-ready over 5 runs
    python scripts/build_binary.py --model intfloat/multilingual-e5-small   # bundle another model (hub cache)

The target triple comes from `rustc -vV` (its `host:` line) when rustc is on PATH, else from the
platform (`--target` overrides both). The build runs `pyinstaller.spec` from the repository root
with the Python running this script, which must have the sidecar and PyInstaller installed
(`pip install -e '.[test]'`). Prints the PyInstaller command, the build time and the size.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "pyinstaller.spec"
BASENAME = "memory-sidecar"

# (system, machine) -> Rust target triple, for machines without rustc.
_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64", "i686": "i686",
         "x86": "i686", "i386": "i686", "armv7l": "armv7"}


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
        raise SystemExit(f"{model} is not in the huggingface-hub cache: run `memory-sidecar --model {model}` once "
                         "(it downloads it), or pass --model-dir") from None


def build(mode: str, triple: str, dist: Path, work: Path, slim: bool = True, quiet: bool = False,
          model: str | None = None, model_dir: Path | None = None) -> dict:
    """Run PyInstaller; return {"executable", "artifact", "bytes", "seconds", "command"}."""
    name = f"{BASENAME}-{triple}"
    cmd = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--distpath", str(dist),
           "--workpath", str(work), str(SPEC), "--", "--mode", mode, "--name", name]
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
        raise RuntimeError(f"pyinstaller failed (exit {proc.returncode}):\n{proc.stderr if quiet else ''}")
    if mode == "onefile":
        artifact = dist / exe_name(triple)
        executable = artifact
    else:
        artifact = dist / name
        executable = artifact / exe_name(triple)
    if not executable.is_file():
        raise RuntimeError(f"pyinstaller finished but {executable} is missing")
    return {"executable": str(executable), "artifact": str(artifact), "bytes": tree_bytes(artifact),
            "seconds": round(seconds, 1), "command": cmd}


def spawn_to_ready(command: list[str], runs: int, timeout: float = 180.0) -> list[float]:
    """Seconds from Popen to the `ready` line, each run on a fresh data dir, shut down cleanly."""
    times = []
    for i in range(runs):
        with tempfile.TemporaryDirectory(prefix="sidecar-ready-") as tmp:
            t0 = time.monotonic()
            proc = subprocess.Popen([*command, "--data-dir", str(Path(tmp) / "data")], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            line = proc.stdout.readline()
            elapsed = time.monotonic() - t0
            ready = json.loads(line) if line else {}
            if ready.get("type") != "ready":
                proc.kill()
                raise RuntimeError(f"run {i + 1}: expected ready, got {line[:500]!r}")
            proc.stdin.write(b'{"type":"shutdown"}\n')
            proc.stdin.close()
            proc.stdout.read()
            code = proc.wait(timeout)
            if code != 0:
                raise RuntimeError(f"run {i + 1}: exit code {code} after shutdown")
            times.append(elapsed)
            print(f"  run {i + 1}/{runs}: {elapsed * 1000:.0f} ms to ready (startup_ms {ready.get('startup_ms')})",
                  file=sys.stderr)
    return times


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=("onefile", "onedir"), default="onefile",
                   help="onefile (default; what Tauri's externalBin takes) or onedir (folder with _internal/)")
    p.add_argument("--target", help="Rust target triple for the name (default: rustc -vV, else the platform)")
    p.add_argument("--dist", type=Path, help="output directory (default: dist/<mode>/)")
    p.add_argument("--work", type=Path, default=ROOT / "build" / "pyinstaller", help="PyInstaller work directory")
    p.add_argument("--no-slim", action="store_true", help="no excludes (to measure what they save)")
    p.add_argument("--measure-ready", type=int, default=0, metavar="N",
                   help="after building, spawn the binary N times on empty data dirs; print the median to ready")
    p.add_argument("--compare-python", action="store_true",
                   help="with --measure-ready: also time `python -m sidecar` the same way, for comparison")
    p.add_argument("--measure-only", type=Path, metavar="EXECUTABLE",
                   help="skip the build; time this already built executable (with --measure-ready)")
    p.add_argument("--print-triple", action="store_true", help="print the target triple and exit")
    p.add_argument("--model", help="bundle this sentence-transformers model (a HuggingFace repo id, taken from the "
                   "huggingface-hub cache or --model-dir) instead of all-MiniLM-L6-v2; the binary uses it by default")
    p.add_argument("--model-dir", type=Path, help="the folder of the model to bundle (model.onnx or onnx/model.onnx, "
                   "tokenizer.json, configs)")
    args = p.parse_args(argv)

    triple, source = target_triple(args.target)
    if args.print_triple:
        print(triple)
        return 0
    print(f"target triple: {triple} (from {source})", file=sys.stderr)
    if args.measure_only:
        result = {"executable": str(args.measure_only.resolve()), "command": []}
    else:
        dist = args.dist or ROOT / "dist" / args.mode
        result = build(args.mode, triple, dist, args.work / args.mode, slim=not args.no_slim, model=args.model,
                       model_dir=args.model_dir)
        print(f"built {args.mode} in {result['seconds']:.1f} s: {result['artifact']} "
              f"({result['bytes'] / 2**20:.1f} MiB)", file=sys.stderr)
    runs = [("ready", [result["executable"]])]
    if args.compare_python:
        runs.append(("python_ready", [sys.executable, "-m", "sidecar"]))
    for key, command in runs if args.measure_ready else []:
        print(f"timing {' '.join(command)}:", file=sys.stderr)
        times = spawn_to_ready(command, args.measure_ready)
        result[f"{key}_seconds"] = [round(t, 3) for t in times]
        result[f"{key}_median_ms"] = round(statistics.median(times) * 1000)
        print(f"spawn to ready, median of {len(times)}: {result[f'{key}_median_ms']} ms "
              f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})", file=sys.stderr)
    result["mode"], result["triple"], result["triple_source"] = args.mode, triple, source
    result["command"] = " ".join(result["command"])
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
