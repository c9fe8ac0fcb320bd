"""Write (or check) protocol/schema.json from the pydantic models: `python -m sidecar.wire.schema [--check]`.
`schema_file_tool` is the same command for any other generated schema (protocol/export.schema.json)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from . import json_schema

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "protocol" / "schema.json"


def render_schema(schema: dict[str, Any]) -> bytes:
    return orjson.dumps(schema, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def render() -> bytes:
    return render_schema(json_schema())


def schema_file_tool(
    module: str, doc: str, render_fn: Callable[[], bytes], default_path: Path
) -> Callable[[list[str] | None], int]:
    """`python -m <module> [--check] [--path P]`: write the rendered schema, or exit 1 when the file is stale."""

    def main(argv: list[str] | None = None) -> int:
        parser = argparse.ArgumentParser(prog=f"python -m {module}", description=doc)
        parser.add_argument("--check", action="store_true", help="exit 1 when the file differs from the models")
        parser.add_argument("--path", type=Path, default=default_path)
        args = parser.parse_args(argv)
        data = render_fn()
        if args.check:
            if not args.path.exists() or args.path.read_bytes() != data:
                print(f"{args.path} is stale: run `python -m {module}`", file=sys.stderr)
                return 1
            return 0
        args.path.write_bytes(data)
        print(f"wrote {args.path}", file=sys.stderr)
        return 0

    return main


main = schema_file_tool("sidecar.wire.schema", __doc__, render, DEFAULT_PATH)

if __name__ == "__main__":
    raise SystemExit(main(None))
