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
LOWER = {"wire", "storage", "embedding", "llm", "text"}  # import no other part of the sidecar
DOMAINS = {"messages", "facts", "conversation", "graph", "portable"}
FACES = {"mcp", "http"}  # protocols beside NDJSON: runtime hands them the dispatcher's request handler
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
# a guard against a file or a function nobody can read, not a ruler that decides where code is cut
MAX_MODULE_LINES = 1200
MAX_FUNCTION_LINES = 200


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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            return True
    return False


def import_graph() -> tuple[dict[str, set[str]], list[str]]:
    """Module -> the sidecar modules it imports (at any depth of its code, imports inside functions too; not
    those under `if TYPE_CHECKING:`), and every private name (`_x`) a module imports from another module."""
    modules = {_module_name(p): p for p in _modules()}
    edges: dict[str, set[str]] = {}
    private: list[str] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        out: set[str] = set()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or _type_checking_only(node, parents):
                continue
            if isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
                continue
            source = _resolve(path, node)[0] if node.module else _resolve(path, node)[0].rsplit(".", 1)[0]
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if full in modules:  # a submodule
                    out.add(full)
                    continue
                out.add(source)
                if alias.name.startswith("_") and not alias.name.startswith("__") and source != name:
                    private.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {alias.name} from {source}")
        edges[name] = {m for m in out if m in modules and m != name}
    return edges, private


def circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.add(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def test_no_import_circles():
    edges, _ = import_graph()
    assert circles(edges) == []


def test_no_private_names_imported_across_modules():
    _, private = import_graph()
    assert private == []


def test_the_cohesion_checks_catch_a_circle_and_a_private_import():
    probe_a, probe_b = PACKAGE / "text" / "_probe_a.py", PACKAGE / "text" / "_probe_b.py"
    probe_a.write_text("def f():\n    from ._probe_b import _hidden\n")  # inside a function: still an edge
    probe_b.write_text("from . import _probe_a\n_hidden = 1\n")
    try:
        edges, private = import_graph()
    finally:
        probe_a.unlink()
        probe_b.unlink()
    assert {"sidecar.text._probe_a", "sidecar.text._probe_b"} in circles(edges)
    assert any("_probe_a.py:2 imports _hidden from sidecar.text._probe_b" in p for p in private)


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


# ---------------------------------------------------------------- portable by construction

# What differs between Linux, macOS and Windows lives in runtime/platform.py (the parent watch, the stop
# signals); glibc's memory tuning (Linux only, a no-op elsewhere) in runtime/native_memory.py.
PLATFORM_MODULE = PACKAGE / "runtime" / "platform.py"
PLATFORM_ONLY = {  # module -> names only the platform module may use
    "os": {
        "getppid",
        "kill",
        "killpg",
        "fork",
        "forkpty",
        "mkfifo",
        "setsid",
        "setpgrp",
        "getpgid",
        "wait",
        "waitpid",
        "name",
    },
    "signal": None,  # any of it: signals, handlers, CTRL_* events
    "sys": {"platform"},
    "platform": {"system", "libc_ver", "mac_ver", "win32_ver"},
    "ctypes": {"windll", "WinDLL", "wintypes"},
}
POSIX_OR_WINDOWS_MODULES = {"fcntl", "msvcrt", "resource", "termios", "pwd", "grp", "winreg", "_winapi"}
ALLOWED_ELSEWHERE = {PACKAGE / "runtime" / "native_memory.py": {"/proc", "platform.system", "platform.libc_ver"}}


def platform_calls(path: Path) -> list[str]:
    """`module.name` uses, imports of OS-only modules and /proc paths in one module, as `line: what`."""
    tree = ast.parse(path.read_text())
    aliases = {}  # local name -> module, for `import signal as s`
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name] = a.name
                if a.name.split(".")[0] in POSIX_OR_WINDOWS_MODULES:
                    found.append((node.lineno, f"import {a.name}"))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            root = node.module.split(".")[0]
            if root in POSIX_OR_WINDOWS_MODULES:
                found.append((node.lineno, f"from {node.module} import"))
            elif root in PLATFORM_ONLY:
                names = PLATFORM_ONLY[root]
                found += [(node.lineno, f"{root}.{a.name}") for a in node.names if names is None or a.name in names]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = aliases.get(node.value.id, node.value.id)
            if module in PLATFORM_ONLY and (PLATFORM_ONLY[module] is None or node.attr in PLATFORM_ONLY[module]):
                found.append((node.lineno, f"{module}.{node.attr}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("/proc"):
            found.append((node.lineno, "/proc"))
    allowed = ALLOWED_ELSEWHERE.get(path, set())
    return [f"{path.relative_to(ROOT)}:{line}: {what}" for line, what in sorted(set(found)) if what not in allowed]


def text_mode_opens(path: Path) -> list[str]:
    """`os.open` calls whose flags leave out O_BINARY: on Windows such an fd is in text mode, and every
    \n byte written through it becomes \r\n (a write-ahead log's vectors, corrupted)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "open"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "os"
            and "O_BINARY" not in ast.dump(node)
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: os.open without O_BINARY")
    return found


def test_files_opened_by_descriptor_are_binary_on_windows():
    assert [hit for path in _modules() for hit in text_mode_opens(path)] == []
    probe = PACKAGE / "messages" / "_probe_open.py"
    probe.write_text(
        "import os\nfd = os.open('x', os.O_WRONLY | os.O_CREAT)\n"
        "ok = os.open('y', os.O_RDONLY | getattr(os, 'O_BINARY', 0))\n"
    )
    try:
        assert text_mode_opens(probe) == ["sidecar/messages/_probe_open.py:2: os.open without O_BINARY"]
    finally:
        probe.unlink()


def test_platform_specific_calls_live_in_the_platform_module():
    found = [hit for path in _modules() if path != PLATFORM_MODULE for hit in platform_calls(path)]
    assert found == [], "use sidecar/runtime/platform.py (or extend it, with the other systems' path):\n" + "\n".join(
        found
    )


def test_the_platform_check_catches_each_kind(tmp_path):
    probe = PACKAGE / "messages" / "_probe_platform.py"
    probe.write_text(
        "import os, signal as s, sys\nimport fcntl\nfrom signal import SIGKILL\n"
        "a = os.getppid()\ns.signal(s.SIGTERM, None)\nb = sys.platform\nc = open('/proc/self/stat')\n"
    )
    try:
        found = platform_calls(probe)
    finally:
        probe.unlink()
    kinds = {hit.split(": ", 1)[1] for hit in found}
    assert {
        "os.getppid",
        "signal.signal",
        "signal.SIGTERM",
        "signal.SIGKILL",
        "sys.platform",
        "/proc",
        "import fcntl",
    } <= kinds, kinds
