"""`memory-sidecar export` and `memory-sidecar import`: the portability commands from the shell, against a
data dir no sidecar holds (its lock makes a second opener fail with a clear message). Progress on stderr;
the outcome, the same object the protocol command answers, as one JSON line on stdout."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..wire import ExportedResponse, ImportedResponse, encode, validate_request
from ..wire.errors import SidecarError
from ..wire.portable import DEFAULT_MAX_EXPANSION, DEFAULT_MAX_INVALID
from .config import OPTIONS, ConfigError, add_options, from_args

if TYPE_CHECKING:
    from .app import App

log = logging.getLogger("sidecar.portable")

COMMON = (
    "The options after the command's own are memory-sidecar's (the data dir, the model, graph memory). Never "
    "run it against a data dir a live sidecar holds: the lock refuses it. Exit code 0: done; 1: refused or "
    "failed (the message says why); 2: bad arguments."
)


def parser(command: str) -> argparse.ArgumentParser:
    if command == "export":
        p = argparse.ArgumentParser(
            prog="memory-sidecar export",
            epilog=COMMON,
            description=(
                "Write one user's memory, or everyone's, to a portable JSON Lines file (gzip when FILE ends in .gz): "
                "messages, facts with their history, display names, graph memory; vectors marked with the model digest."
            ),
        )
        p.add_argument(
            "--out",
            required=True,
            metavar="FILE",
            help=(
                "The file to write: a new regular file outside the data dir (a relative path is relative to the "
                "current directory), written under a temporary name and renamed at the end; never through a "
                "symbolic link."
            ),
        )
        p.add_argument("--overwrite", action="store_true", help="Replace FILE if it exists (default: refused).")
        p.add_argument("--user", metavar="ID", help="Export only this user (default: every user).")
        p.add_argument(
            "--no-vectors", action="store_true", help="Leave the vectors out (a smaller file; the import re-embeds)."
        )
        return add_options(p, OPTIONS)
    p = argparse.ArgumentParser(
        prog="memory-sidecar import",
        epilog=COMMON,
        description=(
            "Read an export file, or plain JSON Lines of {user_id, content, timestamp, ...} records, "
            "into the data dir. "
            "Vectors are reused when the file's model digest is this sidecar's; otherwise everything is re-embedded."
        ),
    )
    p.add_argument(
        "file",
        metavar="FILE",
        help="The export file (or plain JSON Lines; .gz: gzip): a regular file "
        "outside the data dir (a device, FIFO, socket or directory is refused).",
    )
    p.add_argument(
        "--on-conflict",
        choices=("skip", "overwrite", "fail"),
        default="skip",
        help="An id already stored: keep it (skip, the default), overwrite it, or fail before writing.",
    )
    p.add_argument(
        "--restore-forgotten",
        action="store_true",
        help="Import what a tombstone covers (a forgotten user, a deleted memory) and clear those tombstones "
        "(default: skipped and counted as forgotten).",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="A bad record fails the whole import before anything is written (default: reported and skipped).",
    )
    p.add_argument(
        "--max-invalid",
        type=int,
        default=DEFAULT_MAX_INVALID,
        metavar="N",
        help=(
            f"Stop (exit 1) after N bad records; what was imported before stays (default {DEFAULT_MAX_INVALID}; "
            "0: no limit)."
        ),
    )
    p.add_argument(
        "--max-expansion",
        type=int,
        default=DEFAULT_MAX_EXPANSION,
        metavar="X",
        help=(
            f"Stop (exit 1) when a gzip file expands past X times its size (default {DEFAULT_MAX_EXPANSION}, at "
            "least 1 MiB; real exports expand 1 to 10 times; 0: no limit)."
        ),
    )
    return add_options(p, OPTIONS)


class Progress:
    """One stderr line at most every 2 s: what has been done so far, and the rate."""

    def __init__(self, command: str):
        self.command = command
        self.t0 = self.last = time.monotonic()

    def __call__(self, what: str, n: int) -> None:
        now = time.monotonic()
        if now - self.last >= 2.0:
            self.last = now
            print(
                f"memory-sidecar {self.command}: {n} {what} ({n / (now - self.t0):.0f}/s)", file=sys.stderr, flush=True
            )


def run(command: str, argv: list[str], setup_logging: Callable[[str], None]) -> int:
    args = parser(command).parse_args(argv)
    try:
        config = from_args(args)
    except ConfigError as exc:
        print(f"memory-sidecar {command}: configuration error: {exc}", file=sys.stderr)
        return 2
    setup_logging(config.log_level)
    # absolute against this shell's directory, but not resolved: a link at FILE is seen for what it is
    if command == "export":
        fields: dict[str, Any] = {
            "type": "export",
            "out": os.path.abspath(args.out),
            "user_id": args.user,
            "vectors": not args.no_vectors,
            "overwrite": args.overwrite,
        }
    else:
        fields = {
            "type": "import",
            "path": os.path.abspath(args.file),
            "on_conflict": args.on_conflict,
            "strict": args.strict,
            "max_invalid": args.max_invalid,
            "max_expansion": args.max_expansion,
            "restore_forgotten": args.restore_forgotten,
        }
    try:
        request = validate_request(fields)
    except SidecarError as exc:
        print(f"memory-sidecar {command}: {exc.message}", file=sys.stderr)
        return 2
    from .app import build

    try:
        app = build(config)
    except Exception as exc:
        print(f"memory-sidecar {command}: cannot open the data dir: {exc}", file=sys.stderr)
        return 1
    try:
        return _run(app, command, request)
    finally:
        app.close()


def _run(app: App, command: str, request: Any) -> int:
    progress = Progress(command)
    assert app.portable is not None  # (build() always makes it)
    response: ExportedResponse | ImportedResponse
    try:
        if command == "export":
            response = app.portable.export(request, progress)
        else:
            imported = app.portable.import_(request, progress)
            _settle_graph(app, imported.graph_source == "rebuilt")
            response = imported
    except SidecarError as exc:
        print(f"memory-sidecar {command}: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    if isinstance(response, ImportedResponse):
        for line in response.errors:
            print(f"memory-sidecar import: line {line.line}: {line.message}", file=sys.stderr)
        for note in response.notes:
            print(f"memory-sidecar import: note: {note}", file=sys.stderr)
    sys.stdout.buffer.write(encode(response))
    sys.stdout.flush()
    return 0


def _settle_graph(app: App, rebuilt: bool) -> None:
    """Wait for the graph builder to take in the imported messages (and consolidate a rebuilt graph), so the
    data dir is complete when the command ends."""
    graph = app.graph
    if graph is None:
        return
    t0 = time.monotonic()
    while not graph.builder.wait_idle(2.0):
        print(
            f"memory-sidecar import: building the graph, {graph.builder.pending} messages to go "
            f"({time.monotonic() - t0:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
    if rebuilt:
        graph.consolidate_all()
