"""`memory-sidecar mcp`: the runtime's half of the MCP face. The stdout guard, the composition root,
background maintenance and the one graceful exit are the NDJSON server's; the protocol is sidecar/mcp."""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from importlib import metadata
from pathlib import Path

from .. import __version__
from ..wire import InstructionsResponse, MemoryInstructionsRequest
from ..wire.transport import protect_stdout
from . import native_memory
from .config import Config
from .maintenance import maintain
from .platform import ParentWatch, on_stop_signals

log = logging.getLogger("sidecar.server")


def install_hint(frozen: bool = False) -> str:
    """The pip command that installs the package with its `mcp` extra. memory-sidecar is on no package index
    yet: from the checkout this package runs from (when it is one), a clone, or the release's wheel."""
    root = Path(__file__).resolve().parents[2]
    checkout = None if frozen or not (root / "pyproject.toml").is_file() else root
    source = f"pip install '{checkout}[mcp]'" if checkout else "pip install '.[mcp]' in a clone of the repository"
    wheel = f"memory_sidecar-{__version__}-py3-none-any.whl"
    return f"{source}, or with the release's wheel: pip install '{wheel}[mcp]' (memory-sidecar is not on PyPI yet)"


def extra_missing() -> str | None:
    """Why the MCP face cannot run here (with the command that fixes it), or None."""
    from .frozen import bundle_dir

    if bundle_dir() is not None:
        return (
            "the frozen binary has no MCP support (kept lean); use the Python package instead: "
            f"{install_hint(frozen=True)}"
        )
    for module in ("mcp", "jsonschema"):
        if importlib.util.find_spec(module) is None:
            return f"the optional MCP extra is not installed (no `{module}` module); install it with: {install_hint()}"
    version = metadata.version("mcp")
    if not version.startswith("2."):
        return f"the MCP face needs the mcp SDK 2.x (mcp>=2.3,<3), found mcp {version}; run: {install_hint()}"
    return None


def run(config: Config, parent: ParentWatch) -> int:
    """Build the app, serve MCP until stdin ends (or a stop signal, or the parent dies), then close
    the store. Returns the exit code: 0, or 1 when start-up failed."""
    proto_out = protect_stdout()  # from here on only the MCP server writes to the real stdout
    proto_in = os.dup(0)
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        log.info("received signal %d, shutting down", signum)
        stop.set()

    on_stop_signals(on_signal)
    t0 = time.monotonic()
    try:
        from .app import build

        app = build(config)
        native_memory.release_code_pages()  # what loading mapped and serving does not use
    except Exception as exc:
        log.error("start-up failed: %s", exc if not isinstance(exc, ImportError) else f"missing dependency: {exc}")
        return 1
    log.info(
        "MCP server ready in %d ms (data dir %s, default user %r)",
        (time.monotonic() - t0) * 1000,
        config.data_dir,
        config.user,
    )
    maintenance = threading.Thread(
        target=maintain, args=(config, app.service, app.graph, stop), name="maintenance", daemon=True
    )
    maintenance.start()
    try:
        from ..mcp import Settings, serve

        instructions = app.dispatcher.handle(MemoryInstructionsRequest(type="memory_instructions"))
        assert isinstance(instructions, InstructionsResponse)
        categories = instructions.categories
        settings = Settings(user=config.user, categories=tuple(categories), max_limit=config.max_limit)
        serve(app.dispatcher.handle, settings, proto_in, proto_out, lambda: stop.is_set() or parent.gone())
        return 0
    finally:
        stop.set()
        maintenance.join(timeout=1.0)  # a compaction cut short is harmless: commits are atomic
        app.close()
