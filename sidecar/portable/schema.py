"""Write (or check) protocol/export.schema.json from the record models:
`python -m sidecar.portable.schema [--check]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from .records import json_schema

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "protocol" / "export.schema.json"


def render() -> bytes:
    return orjson.dumps(json_schema(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sidecar.portable.schema", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs from the models")
    parser.add_argument("--path", type=Path, default=DEFAULT_PATH)
    args = parser.parse_args(argv)
    data = render()
    if args.check:
        if not args.path.exists() or args.path.read_bytes() != data:
            print(f"{args.path} is stale: run `python -m sidecar.portable.schema`", file=sys.stderr)
            return 1
        return 0
    args.path.write_bytes(data)
    print(f"wrote {args.path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
