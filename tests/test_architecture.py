"""The package layout is the architecture: imports flow one way (runtime -> wire + domains -> storage,
embedding, llm), and a domain reaches another only through that package's public `__init__`. A face
other than NDJSON (mcp) stands beside the wire: it imports only `wire`, and only runtime starts it.
A read-only view of a data dir (inspector) reads the domains' tables through their interfaces and
storage, and only runtime starts it. Read from the source with `ast`, so a new import that breaks the
rules fails here."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "sidecar"
LOWER = {"wire", "storage", "embedding", "llm"}  # import no other part of the sidecar
DOMAINS = {"messages", "facts", "conversation", "graph", "portable"}
FACES = {"mcp"}  # protocols beside NDJSON: runtime hands them the dispatcher's request handler
# read-only views of a data dir beside a running sidecar (no dispatcher: that needs the writer's lock);
# runtime hands them the embedder's function
READERS = {"inspector"}
# (and wire's error bounds: every face quotes its input at most wire.errors.MAX_QUOTE characters)
READER_DEPS = DOMAINS | {"storage", "wire"}
# which domain may stand on which (through its package interface only)
DOMAIN_DEPS = {
    "messages": set(),
    "facts": {"messages"},
    "conversation": {"messages", "facts"},
    "graph": {"messages", "facts", "conversation"},
    "portable": {"messages", "facts", "graph"},
}
MAX_MODULE_LINES = 420
MAX_FUNCTION_LINES = 65


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "assets" not in p.parts)


def _resolve(path: Path, node: ast.ImportFrom) -> list[str]:
    """Absolute dotted names imported by `from ... import ...` in module `path`."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if node.level:
        base = parts[: len(parts) - node.level + (1 if path.name == "__init__.py" else 0)]
        if path.name != "__init__.py":
            base = parts[: len(parts) - node.level]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    if node.module is None:  # from . import x: x may be a submodule
        return [f"{module}.{a.name}" for a in node.names]
    return [module]


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            out += [(node.lineno, name) for name in _resolve(path, node)]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return [(line, name) for line, name in out if name == "sidecar" or name.startswith("sidecar.")]


def _package(path: Path) -> str:
    rel = path.relative_to(PACKAGE).parts
    return rel[0] if len(rel) > 1 else ""


def violations() -> list[str]:
    found = []
    for path in _modules():
        own = _package(path)
        for line, name in _imports(path):
            target = name.split(".")
            other = target[1] if len(target) > 1 else ""
            where = f"{path.relative_to(ROOT)}:{line} imports {name}"
            if other in ("", "__init__", "__version__") or other == own or other == "assets":
                continue
            if own == "":  # sidecar/__main__.py: the entry point
                if other != "runtime":
                    found.append(f"{where}: the entry point imports only runtime")
            elif other == "runtime":
                found.append(f"{where}: nothing imports runtime (it wires everything together)")
            elif own in LOWER:
                found.append(f"{where}: {own} imports no other part of the sidecar")
            elif other in FACES and own != "runtime":
                found.append(f"{where}: only runtime starts a face")
            elif other in READERS and own != "runtime":
                found.append(f"{where}: only runtime starts a reader")
            elif own in READERS and other not in READER_DEPS:
                found.append(f"{where}: reader {own} imports only storage, wire and the domains' interfaces")
            elif own in READERS and other in DOMAINS and len(target) > 2:
                found.append(f"{where}: use the {other} package's interface (sidecar.{other}), not its modules")
            elif own in FACES and other != "wire":
                found.append(f"{where}: face {own} imports only wire (runtime hands it the request handler)")
            elif own in DOMAINS and other in DOMAINS:
                if other not in DOMAIN_DEPS[own]:
                    found.append(f"{where}: domain {own} may not depend on domain {other}")
                elif len(target) > 2:
                    found.append(f"{where}: use the {other} package's interface (sidecar.{other}), not its modules")
    return found


def test_imports_flow_one_way():
    assert violations() == []


def test_rules_catch_a_bad_import(tmp_path, monkeypatch):
    # the checker itself: a messages module importing facts, and facts reaching into messages' internals
    bad = PACKAGE / "messages" / "_probe_bad_import.py"
    bad.write_text("from ..facts.service import FactService\nfrom ..runtime import config\n")
    face = PACKAGE / "mcp" / "_probe_bad_import.py"
    face.write_text("from ..messages import MemoryService\n")
    reader = PACKAGE / "inspector" / "_probe_bad_import.py"
    reader.write_text("from ..messages.store import MessageStore\nfrom ..llm import client\n")
    try:
        found = violations()
    finally:
        bad.unlink()
        face.unlink()
        reader.unlink()
    assert any("face mcp imports only wire" in v for v in found)
    assert any("inspector/_probe_bad_import.py:1" in v and "interface" in v for v in found)
    assert any("reader inspector imports only storage, wire" in v for v in found)
    assert any("domain messages may not depend on domain facts" in v for v in found)
    assert any("nothing imports runtime" in v for v in found)


def test_modules_and_functions_are_small():
    too_big = []
    for path in _modules():
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            too_big.append(f"{path.relative_to(ROOT)}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    too_big.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {n} lines")
    assert too_big == []


def test_every_domain_folder_is_a_package():
    for name in LOWER | DOMAINS | FACES | READERS | {"runtime"}:
        assert (PACKAGE / name / "__init__.py").is_file(), name
