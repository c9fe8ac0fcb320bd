"""What the subcommands print and write: the table printer (rows of dicts as an aligned markdown
table), progress lines on stderr, and JSON result files."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO


def log(msg: str, quiet: bool = False) -> None:
    """A progress line on stderr (stdout holds the results)."""
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def format_table(rows: Iterable[dict[str, Any]], floatfmt: str = ".1f") -> str:
    """Rows of dicts as an aligned markdown table: the columns are the keys in order of first appearance,
    floats are written with `floatfmt`, a missing value or None is an empty cell, and a column that holds
    only numbers is right-aligned."""
    rows = list(rows)
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]

    def cell(v: Any) -> str:
        return "" if v is None else format(v, floatfmt) if isinstance(v, float) else str(v)

    cells = [[cell(row.get(c)) for c in columns] for row in rows]
    right = [all(_is_number(row[c]) for row in rows if row.get(c) is not None) for c in columns]
    widths = [max(3, len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]

    def line(values: list[str]) -> str:
        return "| " + " | ".join(v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right)) + " |"

    rule = "|" + "|".join("-" * (w + 1) + ":" if r else "-" * (w + 2) for w, r in zip(widths, right)) + "|"
    return "\n".join([line(columns), rule, *(line(r) for r in cells)])


def print_table(
    rows: Iterable[dict[str, Any]], title: str | None = None, floatfmt: str = ".1f", file: TextIO | None = None
) -> None:
    """`format_table(rows)` on stdout (or `file`), after `title` and a blank line when one is given."""
    out = file or sys.stdout
    if title:
        print(f"{title}\n", file=out)
    print(format_table(rows, floatfmt), file=out, flush=True)


def latency_row(label: str, p: dict[str, float], key: str = "request") -> dict[str, Any]:
    """One table row of a `timing.pct` summary: the label, n and p50/p95/p99 in ms."""
    return {key: label, "n": p["n"], "p50 ms": p["p50_ms"], "p95 ms": p["p95_ms"], "p99 ms": p["p99_ms"]}


def write_json(path: str | Path, obj: Any) -> None:
    """`obj` as indented JSON (anything else as its str), the parent folders created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, default=str))
