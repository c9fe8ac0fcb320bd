"""Command-line entry point: resolve the configuration, set up stderr logging, run the server (the
NDJSON one, with the `mcp` subcommand the MCP one, with `serve` the HTTP one, with `inspect` the read-only
web page), or the `export` / `import` subcommands. Importing this module turns Python's cyclic collector off (start-up's
imports, collector.py) until `main` hands over to a face or the NDJSON server says `ready`."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable

from . import process_start  # noqa: F401 - first: its import time is startup_ms's fallback start

# isort: split
from . import collector, native_memory
from .platform import ParentWatch

collector.pause()  # no cyclic collections over the imports and the store's opening (collector.py)
native_memory.configure()  # before numpy, onnxruntime and LanceDB are imported and start their threads

# Taken before anything slow happens: a parent that dies during the imports and start-up that
# follow is then still seen as gone (reading it later would already give the adoptive parent).
PARENT = ParentWatch()

from .config import Config, ConfigError, resolve  # noqa: E402 - imports numpy and LanceDB


def setup_logging(level: str) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.captureWarnings(True)


def main(argv: list[str] | None = None) -> int:
    # Everything the sidecar creates (data dir, meta.json, the lock, LanceDB's files) is the user's
    # only: 0700 directories, 0600 files. Memories are private conversation content.
    os.umask(0o077)
    args = sys.argv[1:] if argv is None else list(argv)
    face = FACES.get(args[0]) if args else None
    if face is not None:
        collector.resume()  # only the NDJSON server keeps it off until its `ready` (Server.run settles it)
        return face(args)
    config = _configured(argv, "ndjson")
    if config is None:
        collector.resume()  # an in-process caller (a test) goes on with the collector on
        return 2
    from .frozen import exit_now
    from .server import Server

    server = Server(config, parent=PARENT)
    code = server.run()
    exit_now(code, PARENT)  # the store is closed and every response written


def _configured(argv: list[str] | None, face: str, logging_too: bool = True) -> Config | None:
    """The face's configuration with stderr logging set up, or None after saying what is wrong."""
    try:
        config = resolve(argv, face=face)
    except ConfigError as exc:
        name = "memory-sidecar" if face == "ndjson" else f"memory-sidecar {face}"
        print(f"{name}: configuration error: {exc}", file=sys.stderr)
        return None
    if logging_too:
        setup_logging(config.log_level)
        logging.getLogger("sidecar").debug("configuration: %s", config.describe())
    return config


def _mcp(argv: list[str]) -> int:
    from .mcp_face import extra_missing, run

    missing = extra_missing()
    config = _configured(argv, "mcp", logging_too=not missing)
    if config is None:
        return 2
    if missing:
        print(f"memory-sidecar mcp: {missing}", file=sys.stderr)
        return 2
    from .frozen import exit_now

    code = run(config, PARENT)
    exit_now(code, PARENT)  # the store is closed and every response written
    return code


def _portable(args: list[str]) -> int:
    from .frozen import exit_now
    from .portable_face import run

    code = run(args[0], args[1:], setup_logging)
    sys.stdout.flush()
    # the store is closed and the answer written: skip the interpreter's teardown, where the native libraries'
    # threads aborted the process (exit -6) after about one `import` in six (docs/portability.md)
    exit_now(code, PARENT)
    return code


def _serve(argv: list[str]) -> int:
    from .http_face import extra_missing, run

    missing = extra_missing()
    config = _configured(argv, "serve", logging_too=not missing)
    if config is None:
        return 2
    if missing:
        print(f"memory-sidecar serve: {missing}", file=sys.stderr)
        return 2
    from .frozen import exit_now

    code = run(config)
    exit_now(code, PARENT)  # the store is closed and every answer sent


def _inspect(argv: list[str]) -> int:
    config = _configured(argv, "inspect")
    if config is None:
        return 2
    from .inspect_face import run

    return run(config)


# The subcommands, each given the whole argument list (its own name first); no subcommand: the NDJSON server.
FACES: dict[str, Callable[[list[str]], int]] = {
    "mcp": lambda args: _mcp(args[1:]),  # `memory-sidecar mcp ...`: the same memory as an MCP server
    "serve": lambda args: _serve(args[1:]),  # `memory-sidecar serve ...`: the same memory over HTTP (docs/http.md)
    "inspect": lambda args: _inspect(args[1:]),  # `memory-sidecar inspect ...`: a read-only web page over a data dir
    "export": _portable,  # `memory-sidecar export|import ...`: portability from the shell
    "import": _portable,
}
