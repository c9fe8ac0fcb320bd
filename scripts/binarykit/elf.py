"""The few facts about an ELF shared library that the bundle's slimming needs (Linux builds only), and `strip`
with the dynamic loader's alignment rule checked afterwards.

Why the check: `strip` on a library that auditwheel patched with patchelf (numpy's bundled OpenBLAS and
gfortran) can leave a PT_LOAD segment whose file offset and address disagree modulo the page size; glibc then
refuses it ("ELF load command address/offset not page-aligned") and the binary fails at start-up. A stripped
copy that breaks the rule is thrown away and the library bundled as it was.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

ELF_MAGIC = b"\x7fELF"


def is_elf(path: str | Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == ELF_MAGIC
    except OSError:
        return False


def soname(path: str | Path) -> str | None:
    """The library's DT_SONAME (the name the loader looks it up by), or None."""
    with open(path, "rb") as f:
        for section in ELFFile(f).iter_sections():
            if isinstance(section, DynamicSection):
                for tag in section.iter_tags():
                    if tag.entry.d_tag == "DT_SONAME":
                        return tag.soname  # type: ignore[attr-defined]  # pyelftools sets it on DT_SONAME tags
    return None


def needed(path: str | Path) -> list[str]:
    """The library's DT_NEEDED entries (the libraries the loader loads with it)."""
    with open(path, "rb") as f:
        for section in ELFFile(f).iter_sections():
            if isinstance(section, DynamicSection):
                return [tag.needed for tag in section.iter_tags() if tag.entry.d_tag == "DT_NEEDED"]  # type: ignore[attr-defined]
    return []


def loadable(path: str | Path) -> bool:
    """Every PT_LOAD segment's address and file offset agree modulo its alignment (glibc's rule, with the
    segment's own alignment, which is at least the page size)."""
    with open(path, "rb") as f:
        for seg in ELFFile(f).iter_segments():
            if (
                seg["p_type"] == "PT_LOAD"
                and seg["p_align"] > 1
                and (seg["p_vaddr"] - seg["p_offset"]) % seg["p_align"]
            ):
                return False
    return True


def has_symbols(path: str | Path) -> bool:
    """Whether `strip` would remove anything: a symbol table or debug sections."""
    with open(path, "rb") as f:
        return any(s.name == ".symtab" or s.name.startswith(".debug") for s in ELFFile(f).iter_sections())


def stripped_copy(src: str | Path, dest: Path, strip: str = "strip") -> Path | None:
    """`strip` a copy of `src` at `dest`; the copy, or None when there is nothing to strip, `strip` failed,
    or the stripped file would not load (see the module docstring)."""
    try:
        if not has_symbols(src):
            return None
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
        subprocess.run([strip, str(dest)], check=True, capture_output=True, timeout=300)
        if loadable(dest):
            return dest
    except (ELFError, OSError, subprocess.SubprocessError):
        pass
    dest.unlink(missing_ok=True)
    return None


def _dynamic_symbols(path: str | Path, defined: bool) -> set[str]:
    from elftools.elf.sections import SymbolTableSection

    with open(path, "rb") as f:
        for section in ELFFile(f).iter_sections():
            if isinstance(section, SymbolTableSection) and section.name == ".dynsym":
                return {s.name for s in section.iter_symbols() if s.name and (s["st_shndx"] != "SHN_UNDEF") == defined}
    return set()


def uses_symbols_of(path: str | Path, library: str | Path) -> bool:
    """Whether `path` needs any symbol that `library` defines (an overlinked DT_NEEDED entry says no)."""
    return bool(_dynamic_symbols(path, defined=False) & _dynamic_symbols(library, defined=True))


def remove_needed(path: Path, name: str, patchelf: str) -> None:
    """Drop the DT_NEEDED entry `name` from the file at `path` (a copy of the build's own), in place."""
    subprocess.run([patchelf, "--remove-needed", name, str(path)], check=True, capture_output=True, timeout=300)
    if not loadable(path):
        raise RuntimeError(f"patchelf --remove-needed {name} left {path} unloadable")
