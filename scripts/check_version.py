#!/usr/bin/env python3
"""Check that a release tag names the version the sources carry, before anything is built.

    python scripts/check_version.py v0.2.0          # exit 0, or 1 with what to fix
    python scripts/check_version.py                 # no tag: the sources agree among themselves

The version lives in one place, `__version__` in sidecar/__init__.py (pyproject.toml reads it). The
TypeScript client is released with the sidecar and carries the same version (package.json and its
package-lock.json), and CHANGELOG.md has a section for it. The release workflow runs this first, with
the pushed tag; a developer runs it before tagging.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INIT = Path("sidecar/__init__.py")
PACKAGE_JSON = Path("clients/typescript/package.json")
PACKAGE_LOCK = Path("clients/typescript/package-lock.json")
CHANGELOG = Path("CHANGELOG.md")
# semantic versioning 2.0.0 (https://semver.org), pre-release allowed, no build metadata
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?")


def package_version(root: Path = ROOT) -> str:
    """`__version__` from sidecar/__init__.py, read without importing the package."""
    tree = ast.parse((root / INIT).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return node.value.value
    raise SystemExit(f'{INIT} has no `__version__ = "X.Y.Z"` line')


def problems(tag: str | None, root: Path = ROOT) -> list[str]:
    """Every disagreement, each a sentence naming the file to fix; [] when all agree."""
    version = package_version(root)
    found = []
    if not SEMVER.fullmatch(version):
        found.append(f"{INIT}: __version__ = {version!r} is not a semantic version (MAJOR.MINOR.PATCH)")
    if tag is not None:
        name = tag.removeprefix("refs/tags/")
        if not name.startswith("v") or not SEMVER.fullmatch(name[1:]):
            found.append(f"tag {name!r} is not a release tag: use v<MAJOR.MINOR.PATCH>, for example v{version}")
        elif name[1:] != version:
            found.append(
                f"tag {name!r} does not match the package's version {version} ({INIT}): set "
                f'__version__ = "{name[1:]}" there (and in {PACKAGE_JSON}) and tag again, or tag v{version}'
            )
    client = json.loads((root / PACKAGE_JSON).read_text(encoding="utf-8")).get("version")
    if client != version:
        found.append(
            f"{PACKAGE_JSON}: version {client!r} differs from the package's {version} ({INIT}); "
            f'set it to "{version}" (cd clients/typescript && npm version {version} --no-git-tag-version)'
        )
    lock = json.loads((root / PACKAGE_LOCK).read_text(encoding="utf-8"))
    locked = {lock.get("version"), lock.get("packages", {}).get("", {}).get("version")}
    if locked != {version}:
        found.append(
            f"{PACKAGE_LOCK}: version {sorted(map(str, locked))} differs from {version}; run npm install in "
            "clients/typescript (or `npm version` as above) to update it"
        )
    heading = re.compile(rf"^## \[{re.escape(version)}\]", re.M)
    if not heading.search((root / CHANGELOG).read_text(encoding="utf-8")):
        found.append(
            f"{CHANGELOG} has no `## [{version}] - YYYY-MM-DD` section: move the [Unreleased] entries under it"
        )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tag", nargs="?", help="the release tag, e.g. v0.2.0 (refs/tags/ prefix allowed)")
    args = parser.parse_args(argv)
    found = problems(args.tag)
    for line in found:
        print(f"check_version: {line}", file=sys.stderr)
    if not found:
        print(f"version {package_version()} is consistent" + (f" with tag {args.tag}" if args.tag else ""))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
