"""Start-up and memory shortcuts: the deferred package __init__ (sidecar/storage/lazy_import.py, used by
lancedb_import.py and the keyword stemmer), the glibc malloc settings and the release of clean code pages
(sidecar/runtime/native_memory.py)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import bare_env, glibc_only, linux_only


def _run(code: str, path: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=str(Path(__file__).parent.parent),
        env=bare_env(PYTHONPATH=str(path)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_deferred_package_runs_init_on_first_attribute_and_submodules_import_without_it(tmp_path):
    pkg = tmp_path / "heavy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("print('init ran')\nfrom heavy.part import VALUE\nEXPORTED = VALUE * 2\n")
    (pkg / "part.py").write_text("VALUE = 21\n")
    out = _run(
        """
        import sys
        from sidecar.storage.lazy_import import defer_package_init
        assert defer_package_init("heavy")
        from heavy.part import VALUE
        print("part", VALUE)
        import heavy
        print("exported", heavy.EXPORTED)
        assert not defer_package_init("heavy")  # already imported: left alone
        try:
            heavy.MISSING
        except AttributeError as exc:
            print("missing", exc)
    """,
        tmp_path,
    )
    lines = out.splitlines()
    assert lines[0] == "part 21"  # the submodule imported without the package __init__
    assert lines[1:3] == ["init ran", "exported 42"]  # first attribute read ran __init__ in full
    assert lines[3].startswith("missing") and "MISSING" in lines[3]


def test_lancedb_imports_without_the_rest_client_and_still_has_it(tmp_path):
    out = _run(
        """
        import sys
        from sidecar.storage.lancedb_import import import_lancedb
        lancedb = import_lancedb()
        db = lancedb.connect({!r})
        db.create_table("t", data=[{{"x": 1}}])
        print(db.open_table("t").count_rows())
        for n in range(11):  # more than LanceDB's default page of table names (10)
            db.create_table(f"more{{n:02d}}", data=[{{"x": n}}])
        print("lance_namespace_urllib3_client.api_client" in sys.modules)
        from sidecar.storage import table_names
        listed = table_names(db)  # what the sidecar lists tables with: every one
        print(len(listed), "t" in listed, "more10" in listed)
        print("LanceNamespace" in sys.modules["lance_namespace"].__dict__)  # its __init__ has not run
        print(db.list_namespaces().namespaces)  # a LanceDB call that builds one of those models
        print(listed == set(db.list_tables().tables))
        import lance_namespace_urllib3_client as c
        print(c.ApiClient.__name__)
    """.format(str(tmp_path / "db")),
        tmp_path,
    )
    assert out.split() == ["1", "False", "12", "True", "True", "False", "[]", "True", "ApiClient"]


def _packages(tmp_path: Path, user_body: str) -> None:
    """`heavy`: a package whose __init__ announces itself and exports a class; `user`: imports it."""
    (tmp_path / "heavy").mkdir()
    (tmp_path / "heavy" / "__init__.py").write_text(
        "print('init ran')\nclass Thing:\n    def __init__(self, n):\n        self.n = n\n"
    )
    (tmp_path / "heavy" / "errors.py").write_text("class HeavyError(Exception):\n    pass\n")
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "__init__.py").write_text(
        "from heavy import Thing\nfrom heavy.errors import HeavyError\n" + textwrap.dedent(user_body)
    )


def test_stood_in_names_become_the_real_objects_at_first_use(tmp_path):
    _packages(
        tmp_path,
        """
        def make(n):
            return Thing(n)
    """,
    )
    out = _run(
        """
        import sys
        from sidecar.storage.lazy_import import import_with_stand_ins
        user = import_with_stand_ins("user", ("heavy",))
        print("imported", "Thing" in sys.modules["heavy"].__dict__)
        thing = user.make(7)
        print("made", thing.n, isinstance(thing, user.Thing), type(thing).__module__)
        import heavy
        print("real", heavy.Thing is type(thing), user.HeavyError.__module__)
    """,
        tmp_path,
    )
    assert out.splitlines() == ["imported False", "init ran", "made 7 True heavy", "real True heavy.errors"]


def test_threads_reading_a_deferred_package_at_once_all_get_the_attribute_and_init_runs_once(tmp_path):
    (tmp_path / "slow").mkdir()
    (tmp_path / "slow" / "__init__.py").write_text(
        "import time\nprint('init ran', flush=True)\ntime.sleep(0.3)\nVALUE = 42\n"
    )
    out = _run(
        """
        import threading
        from sidecar.storage.lazy_import import defer_package_init
        assert defer_package_init("slow")
        import slow
        got, errors = [], []
        def read():
            try:
                got.append(slow.VALUE)
            except Exception as exc:
                errors.append(repr(exc))
        threads = [threading.Thread(target=read) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(got, errors)
    """,
        tmp_path,
    )
    assert out.splitlines() == ["init ran", "[42, 42, 42, 42] []"]


def test_a_package_that_needs_the_real_name_at_import_is_imported_again_in_full(tmp_path):
    _packages(
        tmp_path,
        """
        class Special(Thing):  # a base class must be the real one: the stand-in fails here
            pass
    """,
    )
    out = _run(
        """
        from sidecar.storage.lazy_import import import_with_stand_ins
        user = import_with_stand_ins("user", ("heavy",))
        import heavy
        print(user.Special(3).n, issubclass(user.Special, heavy.Thing))
    """,
        tmp_path,
    )
    assert out.splitlines() == ["init ran", "3 True"]


def test_lancedb_imports_with_marking_overrides_and_leaves_the_real_package_importable(tmp_path):
    out = _run(
        """
        import sys
        from sidecar.storage.lancedb_import import import_lancedb
        lancedb = import_lancedb()
        print("overrides" in sys.modules)  # the stand-in is gone again
        print(lancedb.db.LanceDBConnection.open_table.__override__)  # marked, as typing.override does
        import overrides
        print(hasattr(overrides, "final"), overrides.override.__module__)  # the real package
    """,
        tmp_path,
    )
    if sys.version_info >= (3, 12):
        assert out.split()[:2] == ["False", "True"]
    else:
        assert out.split() == ["False", "True", "True", "overrides.overrides"]


def test_keyword_search_imports_the_stemmers_it_uses_alone_and_stems_as_snowball_does(tmp_path):
    """messages/keywords.py defers snowballstemmer's __init__ (it imports all 30-odd languages) and sidecar/text
    imports a language's stemmer when a memory first needs it; the package still works in full for anyone who
    reads it later, and stems exactly as `stemmer("english")`."""
    out = _run(
        """
        import sys
        from sidecar.messages import keywords
        print("at import", sorted(m for m in sys.modules if m.startswith("snowballstemmer.")))
        keywords.terms("we went hiking in the mountains with my sister")
        print("languages", sorted(m for m in sys.modules if m.startswith("snowballstemmer.")))
        import snowballstemmer
        from sidecar.text.languages import stemmer
        words = ["running", "generously", "ponies", "happiness", "during", "being", "relational", "caresses"]
        print("same", snowballstemmer.stemmer("english").stemWords(words) == [stemmer("en")(w) for w in words])
        print("others", "snowballstemmer.french_stemmer" in sys.modules)
    """,
        tmp_path,
    )
    assert "at import []" in out
    assert (
        "languages ['snowballstemmer.among', 'snowballstemmer.basestemmer', 'snowballstemmer.english_stemmer']" in out
    )
    assert "same True" in out and "others True" in out


@glibc_only("caps glibc's malloc arenas (a no-op elsewhere)")
def test_malloc_arena_cap_leaves_an_explicit_environment_setting_alone(tmp_path):
    code = "from sidecar.runtime import native_memory; print(native_memory.configure())"
    assert _run(code, tmp_path).strip() == "True"  # glibc (the CI machine): capped
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=str(Path(__file__).parent.parent),
        env={"MALLOC_ARENA_MAX": "4"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == "False", out.stderr


@linux_only("counts the process's threads in /proc/self/task")
def test_numpy_runs_one_blas_thread_unless_the_environment_says_otherwise():
    """The entry module sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS (native_memory): OpenBLAS
    starts one OS thread fewer than with an explicit 2, which is left alone."""
    code = (
        "import os, sidecar.runtime.cli, numpy; "
        "print(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')))"
    )

    def run(env: dict[str, str]) -> list[str]:
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=str(Path(__file__).parent.parent),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    ours, explicit = run({}), run({"OPENBLAS_NUM_THREADS": "2"})
    assert ours[0] == "1" and explicit[0] == "2"
    assert int(ours[1]) == int(explicit[1]) - 1  # OpenBLAS's extra worker thread is not started


@glibc_only("pyarrow is pointed at the C heap only where glibc's malloc_trim returns its pages")
def test_pyarrow_allocates_from_the_c_heap_unless_the_environment_says_otherwise():
    """On glibc the entry module points pyarrow at the system allocator, whose freed pages the periodic
    malloc_trim returns (mimalloc's pool kept tens of MiB); an explicit choice is left alone."""
    code = "import sidecar.runtime.cli, pyarrow; print(pyarrow.default_memory_pool().backend_name)"

    def run(env: dict[str, str]) -> str:
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=str(Path(__file__).parent.parent),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert run({}) == "system"
    assert run({"ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}) == "mimalloc"


@glibc_only("glibc's mmap threshold and mallinfo2")
def test_large_blocks_stay_mmapped_after_a_larger_one_was_freed(tmp_path):
    """glibc's default raises its mmap threshold to the size of each mmapped block freed, so later large
    temporaries land in the heap and fragment it; configure() fixes the threshold. The control run,
    without configure(), shows the default behaviour the test guards against."""
    code = """
        import ctypes
        from sidecar.runtime import native_memory
        %s
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc.restype = ctypes.c_void_p
        libc.free.argtypes = [ctypes.c_void_p]
        libc.free(libc.malloc(4 << 20))  # a 4 MiB temporary, mmapped and freed
        before = native_memory.heap_bytes()["mmapped"]
        block = libc.malloc(256 << 10)
        print(native_memory.heap_bytes()["mmapped"] - before)
    """
    configured = int(_run(code % "native_memory.configure()", tmp_path))
    default = int(_run(code % "native_memory._libc = ctypes.CDLL('libc.so.6')", tmp_path))
    assert configured >= 256 << 10  # its own mapping, returned to the system on free
    assert default == 0  # from the heap


@glibc_only("releases code pages read from /proc/self/smaps with glibc's madvise")
def test_released_code_pages_leave_private_changes_alone_and_the_libraries_working(tmp_path):
    """Unmapping the clean pages of shared libraries' read-only mappings lowers the resident set, keeps
    what a mapping changed privately (as relocated library data is) and leaves every library callable."""
    data = tmp_path / "libdata.so"
    data.write_bytes(b"\0" * 8192)
    out = _run(
        """
        import ctypes, mmap, os
        from sidecar.runtime import native_memory
        native_memory.configure()
        import numpy, pyarrow, pyarrow.compute as pc, onnxruntime, tokenizers
        from sidecar.storage.lancedb_import import import_lancedb
        lancedb = import_lancedb()

        def rss_kib():
            return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS"))

        f = open({!r}, "rb+")
        private = mmap.mmap(f.fileno(), 8192, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        private[:5] = b"moved"  # a private change to a library's mapping, as the loader's relocations are
        address = ctypes.addressof(ctypes.c_char.from_buffer(private))
        libc = ctypes.CDLL("libc.so.6")
        assert libc.mprotect(ctypes.c_void_p(address), ctypes.c_size_t(8192), mmap.PROT_READ) == 0
        before = rss_kib()
        released = native_memory.release_code_pages()
        after = rss_kib()
        # a freshly installed library's page-cache pages stay dirty for a while and are left alone:
        # the system's own libraries alone release a few MiB
        print(released > 2_000, before - after > released // 2)
        print(ctypes.string_at(address, 5).decode())  # still the private change, not the file's zeros
        db = lancedb.connect({!r})
        db.create_table("t", data=[{{"x": 1}}, {{"x": 2}}])
        print(int(numpy.arange(10).sum()), pc.sum(pyarrow.array([1, 2, 3])).as_py(),
              db.open_table("t").count_rows(), len(onnxruntime.get_available_providers()) > 0)
    """.format(str(data), str(tmp_path / "db")),
        tmp_path,
    )
    assert out.split() == ["True", "True", "moved", "45", "6", "2", "True"]


_SMAPS = """\
7f0000000000-7f0000004000 r-xp 00000000 08:01 11 /usr/lib/libclean.so.6
Rss:                  16 kB
Shared_Dirty:          0 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me
7f0000004000-7f0000006000 r--p 00004000 08:01 11 /usr/lib/libclean.so.6
Rss:                   4 kB
Shared_Dirty:          0 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  4 kB
7f0000006000-7f0000008000 r--p 00006000 08:01 11 /usr/lib/libclean.so.6
Rss:                   8 kB
Shared_Dirty:          0 kB
Private_Dirty:         8 kB
Anonymous:             8 kB
Swap:                  0 kB
7f0000008000-7f000000a000 rw-p 00008000 08:01 11 /usr/lib/libclean.so.6
Rss:                   8 kB
Shared_Dirty:          0 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  0 kB
7f000000a000-7f000000c000 r--p 00000000 08:01 12 /usr/share/data.bin
Rss:                   8 kB
Shared_Dirty:          0 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  0 kB
7f000000c000-7f000000e000 r--s 00000000 00:05 13 /dev/some-device.so
Rss:                   8 kB
Shared_Dirty:          0 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  0 kB
7f000000e000-7f0000010000 r--p 00000000 00:00 0
Rss:                   8 kB
Private_Dirty:         0 kB
7f0000010000-7f0000012000 r-xp 00000000 08:01 14 /opt/x/_native.abi3.so (deleted)
Rss:                   0 kB
Shared_Dirty:          0 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  0 kB
7f0000012000-7f0000014000 r-xp 00000000 08:01 15 /opt/x/libarrow.so.2600
Rss:                   8 kB
Shared_Dirty:          0 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
Swap:                  0 kB
"""


def test_only_clean_resident_read_only_library_mappings_are_chosen():
    """A swapped-out copied page (Swap), a relocated one (Anonymous), a writable mapping, a data file, a
    device, an anonymous mapping and one with nothing resident are all left alone; the last record counts."""
    from sidecar.runtime.native_memory import clean_library_mappings

    chosen = list(clean_library_mappings(_SMAPS.splitlines(keepends=True)))
    assert chosen == [(0x7F0000000000, 0x7F0000004000, 16), (0x7F0000012000, 0x7F0000014000, 8)]


def test_lancedb_scans_queue_at_most_the_sidecars_buffer_unless_the_host_sets_one(tmp_path):
    """Lance's scan buffer (2 GiB by default) is 32 MiB in the sidecar, a value the environment gives is
    kept, and a compaction of rows larger than the buffer still completes (lancedb_import.py)."""
    code = """
        import os
        from datetime import timedelta
        from sidecar.storage.lancedb_import import import_lancedb
        lancedb = import_lancedb()
        print(os.environ["LANCE_DEFAULT_IO_BUFFER_SIZE"])
        db = lancedb.connect(%r)
        text = "".join(chr(33 + (i * 7919) %% 90) for i in range(1_500_000))  # 1.5 MB, not compressible to nothing
        table = db.create_table("t", data=[{"id": 0, "content": text}])
        for n in range(1, 6):
            table.add([{"id": n, "content": text[n:]}])
        table.optimize(cleanup_older_than=timedelta(0))
        print(table.count_rows(), len(table.to_arrow().column("content")[5].as_py()))
    """
    out = _run(code % str(tmp_path / "db"), tmp_path)
    assert out.split() == [str(32 << 20), "6", str(1_500_000 - 5)]
    preset = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code % str(tmp_path / "db2"))],
        cwd=str(Path(__file__).parent.parent),
        capture_output=True,
        text=True,
        timeout=120,
        env=bare_env(PYTHONPATH=str(tmp_path), LANCE_DEFAULT_IO_BUFFER_SIZE=str(1 << 20)),
    )
    assert preset.returncode == 0, preset.stderr
    assert preset.stdout.split() == [str(1 << 20), "6", str(1_500_000 - 5)]


def test_the_collector_is_off_through_start_up_and_back_on_once_ready_with_start_ups_objects_frozen(tmp_path):
    """runtime/collector.py: no cyclic collections over the imports and the store's opening; after `ready`
    the collector runs again (else cyclic garbage made while serving would never be freed) and what
    start-up made is in the permanent generation. The other faces turn it back on at once."""
    out, data = tmp_path / "out.txt", tmp_path / "data"
    code = textwrap.dedent(f"""
        import gc, os
        from sidecar.runtime import cli
        paused = not gc.isenabled()
        from sidecar.runtime.config import resolve
        from sidecar.runtime.server import Server
        code = Server(resolve(["--data-dir", {str(data)!r}]), parent=cli.PARENT).run()
        open({str(out)!r}, "w").write(f"{{paused}} {{code}} {{gc.isenabled()}} {{gc.get_freeze_count()}}")
    """)
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=str(Path(__file__).parent.parent),
        input=b'{"type":"shutdown"}\n',
        capture_output=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert b'"type":"ready"' in run.stdout
    paused, exit_code, enabled, frozen = out.read_text().split()
    assert (paused, exit_code, enabled) == ("True", "0", "True")
    assert int(frozen) > 50_000  # start-up's objects (about 120,000 on 2026-11-27)
    face = _run(
        """
        import gc
        from sidecar.runtime import cli
        paused = not gc.isenabled()
        try:
            cli.main(["export", "--help"])
        except SystemExit:
            pass
        print("face", paused, gc.isenabled())
        gc.disable()
        print("refused", cli.main(["--cache-mb", "-1"]), gc.isenabled())  # a configuration error, in process
    """,
        tmp_path,
    )
    assert "face True True" in face and "refused 2 True" in face


def test_export_and_import_load_their_code_at_their_first_use(spawn, tmp_path):
    """The changelog's promise (runtime/app.py, PortableOnDemand): a sidecar that never exports or imports never
    imports the portable package; the first export does, and works. Read from the real process's
    `-X importtime` lines on stderr."""
    sc = spawn(command=[sys.executable, "-X", "importtime", "-m", "sidecar"])
    sc.store("u", "I keep bees in Lyon")
    assert sc.request({"type": "ping"})["type"] == "pong"
    imported = re.compile(r"\|\s+sidecar\.portable$", re.M)
    assert not imported.search(sc.stderr())
    out = tmp_path / "backup.jsonl"
    assert sc.request({"type": "export", "out": str(out)})["messages"] == 1
    assert imported.search(sc.stderr()) and out.is_file()
    assert sc.shutdown() == 0
