#!/usr/bin/env python3
"""Turn build outputs into release assets, checksum them, verify them, and write the release notes.

The release workflow (.github/workflows/release.yml) runs these steps on each runner; a developer runs
the same ones locally:

    python scripts/release_assets.py exe dist/onefile/build-info.json    # the path to spawn (smoke test)
    python scripts/release_assets.py pack dist/onedir/build-info.json --out release/   # binary -> asset
    python scripts/release_assets.py add dist/*.whl dist/*.tar.gz --out release/      # files as they are
    python scripts/release_assets.py sums release/      # release/SHA256SUMS over release/assets/*
    python scripts/release_assets.py verify release/    # exit 1 naming each file that does not match
    python scripts/release_assets.py notes v0.2.0 collected/ > notes.md

An output folder holds `assets/` (the files to attach), `info/` (each binary's build-info.json) and
`SHA256SUMS` (`sha256sum -c` format: `<hex>  <name>`). `pack` takes the binary build's
`build-info.json` ({"executable", "mode", "target", "size_bytes", "ready_seconds"}): a onefile
executable is copied as it is (named `memory-sidecar-<target>[.exe]`, what Tauri's `externalBin`
wants); a onedir folder is archived whole, `.zip` for Windows targets and `.tar.gz` elsewhere (modes
and symlinks kept).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUMS = "SHA256SUMS"
CHUNK = 1 << 20


class ReleaseError(RuntimeError):
    """A step that cannot go on; the message names what to fix."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _executable(info: dict, info_path: Path) -> Path:
    exe = Path(str(info.get("executable", "")))
    for candidate in (exe, info_path.parent / exe) if not exe.is_absolute() else (exe,):
        if candidate.is_file():
            return candidate.resolve()
    raise ReleaseError(
        f"{info_path}: its executable {exe} does not exist; build the binary again "
        "(python scripts/build_binary.py --mode onefile|onedir)"
    )


def _read_info(info_path: Path) -> dict:
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReleaseError(f"cannot read {info_path} ({exc}); did scripts/build_binary.py finish?") from None
    if not isinstance(info, dict):
        raise ReleaseError(f"{info_path} is not a JSON object")
    return info


def pack(info_path: Path, out: Path) -> Path:
    """Put one binary build into `out/assets/` (and its build-info into `out/info/`); returns the asset."""
    info = _read_info(info_path)
    mode, target = info.get("mode"), info.get("target")
    if mode not in ("onefile", "onedir") or not isinstance(target, str) or not target:
        raise ReleaseError(
            f'{info_path}: expected "mode" onefile|onedir and a "target" triple, got {mode!r}, {target!r}'
        )
    exe = _executable(info, info_path)
    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    if mode == "onefile":
        asset = assets / exe.name
        shutil.copy2(exe, asset)
    else:
        folder = exe.parent
        stem = f"memory-sidecar-{target}-onedir"
        asset = assets / (stem + (".zip" if "windows" in target else ".tar.gz"))
        _archive(folder, asset)
    (out / "info").mkdir(parents=True, exist_ok=True)
    (out / "info" / f"{asset.name}.json").write_text(
        json.dumps({**info, "asset": asset.name}, indent=2) + "\n", encoding="utf-8"
    )
    return asset


def _archive(folder: Path, asset: Path) -> None:
    """The folder whole, under its own name, so it unpacks into one folder."""
    if asset.suffix == ".zip":
        with zipfile.ZipFile(asset, "w", zipfile.ZIP_DEFLATED) as z:
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    z.write(path, Path(folder.name) / path.relative_to(folder))
    else:
        with tarfile.open(asset, "w:gz") as t:
            t.add(folder, arcname=folder.name)


def add(files: list[Path], out: Path) -> list[Path]:
    """Copy files (the wheel, the sdist, the npm tarball) into `out/assets/` as they are."""
    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    copied = []
    for f in files:
        if not f.is_file():
            raise ReleaseError(f"{f} does not exist: the step that makes it failed or wrote elsewhere")
        copied.append(Path(shutil.copy2(f, assets / f.name)))
    return copied


def write_sums(out: Path) -> Path:
    """`out/SHA256SUMS` over every file in `out/assets/`, sorted by name."""
    files = sorted(p for p in (out / "assets").iterdir() if p.is_file()) if (out / "assets").is_dir() else []
    if not files:
        raise ReleaseError(f"{out / 'assets'} holds no file to checksum")
    sums = out / SUMS
    sums.write_text("".join(f"{sha256(p)}  {p.name}\n" for p in files), encoding="utf-8")
    return sums


def read_sums(path: Path) -> dict[str, str]:
    found = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = re.fullmatch(r"([0-9a-f]{64}) [ *](.+)", line.strip())
        if not m:
            raise ReleaseError(f"{path}:{n}: not a `<sha256>  <name>` line: {line!r}")
        found[m.group(2)] = m.group(1)
    return found


def verify(out: Path) -> list[str]:
    """Each problem with `out/assets/` against `out/SHA256SUMS`, as a sentence; [] when all match."""
    sums = out / SUMS
    if not sums.is_file():
        return [f"{sums} is missing: the job that built {out.name} did not run `release_assets.py sums`"]
    expected = read_sums(sums)
    assets = out / "assets"
    present = {p.name for p in assets.iterdir() if p.is_file()} if assets.is_dir() else set()
    problems = []
    for name, digest in sorted(expected.items()):
        if name not in present:
            problems.append(
                f"{assets / name} is listed in {sums} but missing: its upload or download failed; "
                "re-run the job that built it"
            )
        elif (actual := sha256(assets / name)) != digest:
            problems.append(
                f"{assets / name}: SHA-256 {actual} does not match {digest} in {sums}: the file changed "
                "after it was built (a broken transfer?); re-run the job that built it"
            )
    for name in sorted(present - set(expected)):
        problems.append(
            f"{assets / name} is not listed in {sums}: run `release_assets.py sums` after the last file is added"
        )
    return problems


def changelog_section(version: str, changelog: Path = ROOT / "CHANGELOG.md") -> str:
    text = changelog.read_text(encoding="utf-8")
    m = re.search(rf"^## \[{re.escape(version)}\][^\n]*\n(.*?)(?=^## \[|\Z)", text, re.M | re.S)
    if not m:
        raise ReleaseError(f"CHANGELOG.md has no `## [{version}]` section (scripts/check_version.py says so too)")
    return m.group(1).strip()


def notes(tag: str, collected: Path) -> str:
    """The draft release's notes: the changelog's section, each binary's size and spawn-to-ready time."""
    version = tag.removeprefix("refs/tags/").removeprefix("v")
    rows = []
    for info_path in sorted(collected.glob("*/info/*.json")):
        info = json.loads(info_path.read_text(encoding="utf-8"))
        size, ready = info.get("size_bytes"), info.get("ready_seconds")
        size = f"{size / 1e6:.0f} MB" if isinstance(size, (int, float)) else "?"
        ready = f"{ready:.2f} s" if isinstance(ready, (int, float)) else "?"
        rows.append(f"| `{info['asset']}` | {info.get('target')} | {info.get('mode')} | {size} | {ready} |")
    table = ["| binary | target | mode | size | spawn to `ready` |", "|---|---|---|---|---|", *rows] if rows else []
    return "\n".join(
        [
            changelog_section(version),
            "",
            "## Binaries",
            "",
            "Size and spawn-to-`ready` time as measured by the build on its runner (`python scripts/build_binary.py`).",
            "",
            *table,
            "",
            f"Every file's SHA-256 is in `{SUMS}` (`sha256sum -c {SUMS}`).",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("exe", help="print the executable a binary build's build-info.json names")
    s.add_argument("build_info", type=Path)
    s = sub.add_parser("pack", help="a binary build (its build-info.json) -> out/assets/")
    s.add_argument("build_info", type=Path)
    s.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("add", help="files copied as they are -> out/assets/")
    s.add_argument("files", type=Path, nargs="+")
    s.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("sums", help=f"write out/{SUMS} over out/assets/")
    s.add_argument("out", type=Path)
    s = sub.add_parser("verify", help=f"check out/assets/ against out/{SUMS} (each folder given)")
    s.add_argument("outs", type=Path, nargs="+")
    s = sub.add_parser("notes", help="print the release notes for a tag from the collected folders")
    s.add_argument("tag")
    s.add_argument("collected", type=Path)
    args = p.parse_args(argv)
    try:
        if args.command == "exe":
            print(_executable(_read_info(args.build_info), args.build_info))
        elif args.command == "pack":
            print(pack(args.build_info, args.out))
        elif args.command == "add":
            print("\n".join(map(str, add(args.files, args.out))))
        elif args.command == "sums":
            print(write_sums(args.out).read_text(encoding="utf-8"), end="")
        elif args.command == "verify":
            problems = [line for out in args.outs for line in verify(out)]
            for line in problems:
                print(f"release_assets: checksum mismatch: {line}", file=sys.stderr)
            if problems:
                return 1
            print(f"checksums match in {len(args.outs)} folder(s)")
        else:
            sys.stdout.write(notes(args.tag, args.collected))
    except ReleaseError as exc:
        print(f"release_assets: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
