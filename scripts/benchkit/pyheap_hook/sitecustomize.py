"""Loaded by a sidecar the benchmarks start with this folder first on PYTHONPATH (benchkit/pyheap.py): on SIGUSR2
it writes the state of Python's object allocator and of glibc's malloc to $BENCH_PYHEAP_DIR/PID.json. Never stdout.
With $BENCH_TRACEMALLOC=N it traces Python's allocations from start-up (N frames each) and each signal also dumps a
tracemalloc snapshot to PID.K.tracemalloc (K counts up): what Python holds, by where it was allocated, apart from
what native code (LanceDB, onnxruntime) holds, which tracemalloc does not see."""

import os
import signal

if os.environ.get("BENCH_PYHEAP_DIR"):
    if os.environ.get("BENCH_TRACEMALLOC"):
        import tracemalloc

        tracemalloc.start(int(os.environ["BENCH_TRACEMALLOC"]))
    _dumps = [0]

    def _debugmallocstats() -> str:
        import sys

        r, w = os.pipe()  # CPython prints these to fd 2: caught through a pipe (a few KB, within its buffer)
        saved = os.dup(2)
        os.dup2(w, 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(w)
        chunks = []
        while chunk := os.read(r, 65536):
            chunks.append(chunk)
        os.close(r)
        return b"".join(chunks).decode(errors="replace")

    _found: list = []

    def _lance_session():
        """The sidecar's LanceDB connection's Session, found once by walking what the threads' frames reach (the
        connection was made before `ready`, and the sidecar freezes what start-up made: gc.get_objects() does not
        list it)."""
        if _found:
            return _found[0]
        import gc
        import sys
        import types

        seen: set[int] = set()
        todo: list[object] = list(sys._current_frames().values())
        while todo and len(seen) < 500_000:
            o = todo.pop()
            if id(o) in seen:
                continue
            seen.add(id(o))
            session = getattr(o, "_session", None) if type(o).__name__ == "LanceDBConnection" else None
            if session is not None:
                _found.append(session)
                return session
            if isinstance(o, types.FrameType):
                todo.append(o.f_locals)
                if o.f_back is not None:
                    todo.append(o.f_back)
            else:
                todo.extend(gc.get_referents(o))
        return None

    def _write(_signum, _frame) -> None:
        import ctypes
        import gc
        import json

        out: dict[str, object] = {}
        for line in _debugmallocstats().splitlines():
            key, sep, value = line.partition("=")
            name = key.strip().lstrip("# ")
            if sep and name in (
                "arenas allocated current",
                "arenas highwater mark",
                "arenas reclaimed",
                "bytes in allocated blocks",
                "bytes in available blocks",
            ):
                out[name.replace(" ", "_")] = int(value.strip().replace(",", ""))

        class Mallinfo2(ctypes.Structure):
            _fields_ = [
                (n, ctypes.c_size_t)
                for n in (
                    "arena",
                    "ordblks",
                    "smblks",
                    "hblks",
                    "hblkhd",
                    "usmblks",
                    "fsmblks",
                    "uordblks",
                    "fordblks",
                    "keepcost",
                )
            ]

        try:
            libc = ctypes.CDLL("libc.so.6")
            libc.mallinfo2.restype = Mallinfo2
            info = libc.mallinfo2()
            out["malloc"] = {f: getattr(info, f) for f in ("arena", "hblkhd", "uordblks", "fordblks")}
        except (OSError, AttributeError):  # not glibc
            pass
        objects = gc.get_objects()
        out["gc_objects"] = len(objects)
        if os.environ.get("BENCH_PYHEAP_TYPES"):
            import collections

            counts = collections.Counter(type(o).__qualname__ for o in objects)
            out["types"] = dict(counts.most_common(15))
        del objects
        session = _lance_session()
        if session is not None:  # LanceDB's own caches: properties in lancedb 0.41
            try:
                out["lance_cache"] = {"bytes": session.size_bytes, "items": session.approx_num_items}
            except Exception:  # another lancedb version
                pass
        if os.environ.get("BENCH_TRACEMALLOC"):
            import tracemalloc

            out["traced_bytes"] = tracemalloc.get_traced_memory()[0]
            _dumps[0] += 1
            dump = os.path.join(os.environ["BENCH_PYHEAP_DIR"], f"{os.getpid()}.{_dumps[0]}.tracemalloc")
            tracemalloc.take_snapshot().dump(dump)
            out["tracemalloc_snapshot"] = dump
        path = os.path.join(os.environ["BENCH_PYHEAP_DIR"], f"{os.getpid()}.json")
        with open(path + ".part", "w") as f:
            json.dump(out, f)
        os.replace(path + ".part", path)

    signal.signal(signal.SIGUSR2, _write)
    open(os.path.join(os.environ["BENCH_PYHEAP_DIR"], f"{os.getpid()}.ready"), "w").close()  # read() may signal
