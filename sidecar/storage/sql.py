"""Filters built from user strings: every value goes through these, never spliced raw into a `where`."""

from __future__ import annotations

import math
from collections.abc import Sequence


def sql_str(value: str) -> str:
    """A SQL string literal for a LanceDB filter: the value matches only itself.

    LanceDB filters are DataFusion SQL, where a quote inside a literal is doubled and a backslash
    is an ordinary character. NUL cannot appear in a literal, so it is refused upstream.
    """
    if "\x00" in value:
        raise ValueError("NUL character in a filter value")
    return "'" + value.replace("'", "''") + "'"


def sql_num(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError("non-finite number in a filter")
    return repr(float(value))


def sql_in(column: str, values: Sequence[str]) -> str:
    """`column IN ('a', 'b')` for a non-empty list (or tuple) of strings."""
    return f"{column} IN ({', '.join(sql_str(v) for v in values)})"
