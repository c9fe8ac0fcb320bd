"""Write (or check) protocol/export.schema.json from the record models:
`python -m sidecar.portable.schema [--check]`."""

from __future__ import annotations

from pathlib import Path

from ..wire.schema import render_schema, schema_file_tool
from .records import json_schema

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "protocol" / "export.schema.json"


def render() -> bytes:
    return render_schema(json_schema())


main = schema_file_tool("sidecar.portable.schema", __doc__, render, DEFAULT_PATH)

if __name__ == "__main__":
    raise SystemExit(main(None))
