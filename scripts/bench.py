#!/usr/bin/env python3
"""memory-sidecar benchmarks, one command: python scripts/bench.py SUBCOMMAND [options]

`python scripts/bench.py SUBCOMMAND --help` says what a subcommand measures, its flags and their
defaults. Each subcommand is a module of scripts/benchkit/; they share one pipe client (the sidecar as
a child process), one percentile helper and one table printer. Results go to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]  # this tree's `sidecar` package, then benchkit

from sidecar.runtime import native_memory  # noqa: E402

# The sidecar's own malloc and BLAS settings for everything measured in this process (the model floors, the
# stores `ab` builds), before numpy and the subcommands load: a floor measured under glibc's defaults hid a
# 0.6x slowdown of the sidecar's embedding (docs/performance.md#the-onnx-arena-2026-11-25).
native_memory.configure()

from benchkit.client import BenchError  # noqa: E402

SUBCOMMANDS = (
    "core",
    "facts",
    "conversation",
    "query-modes",
    "locomo",
    "memory",
    "maintenance",
    "soak",
    "ab",
    "fact-thresholds",
    "graph-build",
    "graph-lag",
    "graph",
    "graph-quality",
    "validity",
    "portable",
    "realuse",
    "object-store",
    "long-memories",
    "compaction",
    "multilingual",
    "hostile-files",
    "prompt",
    "http",
    "secrets",
    "footprint",
)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The description as written, and an option's default after its help (unless it says its own, or
    there is none to say: None, False, empty)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text, default = action.help or "", action.default
        if "default:" in text or default is None or default is False or default in ("", [], argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="bench.py", description=__doc__, formatter_class=HelpFormatter)
    subs = top.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND", title="subcommands")
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"benchkit.{name.replace('-', '_')}")
        sub = subs.add_parser(name, help=module.SUMMARY, description=module.__doc__, formatter_class=HelpFormatter)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except BenchError as e:
        print(f"bench.py {args.subcommand}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
