"""Soak: stream `store` and `query` requests through one sidecar for a long time, pipelined with a
bounded in-flight window, and record RSS (from /proc, sampled every second) and latency percentiles
per interval.

Traffic is modelled on a chat host: --conversations users talk at once; each exchange is a `query`
for the user (the memories for the prompt) followed by a `store` of their message; a conversation
lasts --exchanges exchanges on average (geometric), then a new user, drawn uniformly from --users,
takes its place. --exchanges 0 draws every request's user independently instead: no locality at
all, the worst case for the vector cache once the stored data outgrows it.

    python scripts/soak.py --requests 1000000 --out soak.json     # about 3 hours on 2 cores
    python scripts/soak.py --requests 2000 --interval 1            # a quick check that it works
    python scripts/soak.py --judge soak.json                       # the verdict for an earlier run

Every answer is checked (ok with an id for a store, results for a query, in order); the run stops
at the first wrong answer. Each sample in --out keeps the interval's lowest, median and highest
one-second RSS, and RSS by kind of mapping at the sample (`rss_by_kind_mib`: main heap, glibc's other
arenas, pyarrow's pool, large and small anonymous mappings, files). At the end it prints whether RSS
plateaued: the level RSS falls back to between compactions (each interval's lowest one-second RSS; their median over the last third of the
intervals) stays within --plateau-tolerance of the middle third's. Memory that is kept, leaked or
fragmented raises that level; a compaction's working memory, which is given back when it ends, does
not. The steady RSS (the interval medians, which rise as compactions take longer) and the peaks are
reported beside it. `--judge soak.json` prints the verdict for an earlier run. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from statistics import median
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("cat dog coffee tea hiking mountain router password pizza lunch meeting python rust music guitar "
         "weekend trip train beach rain snow book movie garden bike laptop phone birthday cake job office").split()


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def rss_by_kind_mib(pid: int) -> dict[str, float]:
    """Resident MiB by kind of mapping, from /proc/PID/smaps: the main heap, glibc's other arenas (heaps
    aligned to 64 MiB, the threads other than the main one: LanceDB's, the log flusher), pyarrow's mimalloc
    pool (its 1 GiB reservation), other anonymous mappings of 1 MiB and more (Python's object arenas, blocks of
    128 KiB and more such as the vector cache's), smaller anonymous ones, and mapped files."""
    maps: list[list] = []
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split(maxsplit=6)
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                start, end = (int(x, 16) for x in head[0].split("-"))
                maps.append([start, end, head[1], head[5].strip() if len(head) > 5 else "", 0])
            elif head[0] == "Rss:":
                maps[-1][4] = int(head[1])
    out = dict.fromkeys(("heap", "arenas", "pyarrow", "anon_large", "anon_small", "files", "other"), 0.0)
    heap_size = 64 << 20
    for i, (start, end, _perm, name, rss) in enumerate(maps):
        size = end - start
        following = maps[i + 1] if i + 1 < len(maps) else None
        if name == "[heap]":
            kind = "heap"
        elif name:
            kind = "other" if name.startswith("[") else "files"
        elif size == 1 << 30:
            kind = "pyarrow"
        elif start % heap_size == 0 and (size == heap_size or (  # an arena heap: read-write part, then PROT_NONE rest
                following and following[0] == end and following[2] == "---p" and following[1] - start == heap_size)):
            kind = "arenas"
        else:
            kind = "anon_large" if size >= 1 << 20 else "anon_small"
        out[kind] += rss / 1024
    return {k: round(v, 1) for k, v in out.items()}


def percentile(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(p / 100 * len(sorted_values)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=1_000_000, help="total requests (half store, half query)")
    ap.add_argument("--window", type=int, default=32, help="most requests in flight")
    ap.add_argument("--users", type=int, default=1_000)
    ap.add_argument("--conversations", type=int, default=16, help="users talking at the same time")
    ap.add_argument("--exchanges", type=float, default=20.0,
                    help="mean query+store exchanges per conversation; 0: every request's user drawn independently")
    ap.add_argument("--interval", type=float, default=10.0, help="seconds per sample")
    ap.add_argument("--data-dir", help="default: a fresh temporary directory")
    ap.add_argument("--out", default="soak.json")
    ap.add_argument("--plateau-tolerance", type=float, default=0.05,
                    help="how much the last third's level may exceed the middle third's (default 0.05)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--query-mix", default="default=1", type=_mix,
                    help="query modes and their shares, e.g. semantic=0.9,hybrid=0.1; 'default' sends no mode "
                         "(the sidecar's default, hybrid)")
    ap.add_argument("--judge", metavar="SOAK_JSON", help="print the plateau verdict for an earlier run's --out and exit")
    ap.add_argument("sidecar_args", nargs="*", help="extra sidecar flags (after --)")
    args = ap.parse_args(argv)
    if args.judge:
        verdict = _plateau(orjson.loads(Path(args.judge).read_bytes())["samples"], args.plateau_tolerance)
        print(verdict["message"])
        return 0

    tmp = None
    data_dir = args.data_dir
    if data_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="soak-")
        data_dir = os.path.join(tmp.name, "data")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_SIDECAR_")}
    proc = subprocess.Popen([sys.executable, "-m", "sidecar", "--data-dir", data_dir, *args.sidecar_args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=str(ROOT), env=env)
    assert proc.stdin and proc.stdout
    ready = orjson.loads(proc.stdout.readline())
    if ready.get("type") != "ready":
        print(f"sidecar did not start: {ready}", file=sys.stderr)
        return 1

    rng = random.Random(args.seed)
    modes, weights = list(args.query_mix), list(args.query_mix.values())
    slots = threading.Semaphore(args.window)
    sent_at: dict[int, tuple[float, str]] = {}
    lock = threading.Lock()
    lat: dict[str, list[float]] = {"store": [], "query": []}
    done = [0]
    failure: list[str] = []
    finished = threading.Event()

    def new_user() -> str:
        return f"user-{rng.randrange(args.users)}"

    talking = [[new_user(), 0] for _ in range(max(1, args.conversations))]  # [user, exchanges left]
    for conv in talking:
        conv[1] = _length(rng, args.exchanges)

    def writer() -> None:
        conv = talking[0]
        for i in range(args.requests):
            slots.acquire()
            if failure:
                return
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 20)))
            if args.exchanges <= 0:
                user = new_user()
            elif i % 2 == 0:  # a new exchange: the host asks for memories, then stores the message
                conv = rng.choice(talking)
                if conv[1] <= 0:
                    conv[0], conv[1] = new_user(), _length(rng, args.exchanges)
                conv[1] -= 1
                user = conv[0]
            else:
                user = conv[0]
            if i % 2 == 1:
                req = {"type": "store", "user_id": user, "content": f"{text} #{i}", "request_id": i}
                kind = "store"
            else:
                req = {"type": "query", "user_id": user, "text": text, "limit": 5, "request_id": i}
                mode = rng.choices(modes, weights)[0]
                if mode != "default":
                    req["mode"] = mode
                kind = "query"
            with lock:
                sent_at[i] = (time.perf_counter(), kind)
            proc.stdin.write(orjson.dumps(req) + b"\n")
            if i % 8 == 7 or i == args.requests - 1:
                proc.stdin.flush()
        proc.stdin.flush()

    def reader() -> None:
        expected = 0
        for raw in proc.stdout:
            r = orjson.loads(raw)
            now = time.perf_counter()
            rid = r.get("request_id")
            with lock:
                t0, kind = sent_at.pop(rid, (None, None))
            ok = (rid == expected and t0 is not None
                  and ((kind == "store" and r.get("type") == "ok" and r.get("id"))
                       or (kind == "query" and r.get("type") == "results")))
            if not ok:
                failure.append(f"request {expected}: unexpected answer {r}")
                slots.release()
                break
            with lock:
                lat[kind].append(now - t0)
                done[0] += 1
            expected += 1
            slots.release()
            if expected == args.requests:
                break
        finished.set()

    rss_seen: list[float] = []  # one-second samples since the last interval

    def sampler() -> None:
        while not finished.wait(1.0):
            try:
                value = rss_kib(proc.pid) / 1024
            except OSError:
                continue
            with lock:
                rss_seen.append(value)

    samples = []
    start = time.perf_counter()
    threads = [threading.Thread(target=f, daemon=True) for f in (writer, reader, sampler)]
    for t in threads:
        t.start()
    while not finished.wait(args.interval):
        samples.append(_sample(proc.pid, start, lock, lat, done, samples[-1] if samples else None, rss_seen))
        s = samples[-1]
        print(f"t={s['t']:7.0f}s done={s['done']:8d} rss median/max={s['rss_mib']:6.1f}/{s['rss_max_mib']:6.1f} MiB "
              f"rps={s['rps']:6.0f} store p50/p99={s['store_ms']['p50']:.1f}/{s['store_ms']['p99']:.1f} ms "
              f"query p50/p99={s['query_ms']['p50']:.1f}/{s['query_ms']['p99']:.1f} ms", flush=True)
        _write(args, samples, ready, failure, None)
    samples.append(_sample(proc.pid, start, lock, lat, done, samples[-1] if samples else None, rss_seen))
    proc.stdin.close()
    code = proc.wait(120)
    verdict = _plateau(samples, args.plateau_tolerance)
    _write(args, samples, ready, failure, verdict, exit_code=code)
    print(verdict["message"])
    if failure:
        print(failure[0], file=sys.stderr)
    if tmp is not None:
        tmp.cleanup()
    return 0 if not failure and code == 0 else 1


def _mix(text: str) -> dict[str, float]:
    out = {}
    for part in text.split(","):
        mode, _, share = part.partition("=")
        if mode.strip() not in ("default", "semantic", "keyword", "hybrid"):
            raise argparse.ArgumentTypeError(f"unknown query mode {mode!r}")
        try:
            out[mode.strip()] = float(share or 1)
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad share in {part!r}") from None
    if not out or sum(out.values()) <= 0:
        raise argparse.ArgumentTypeError("the shares must add up to more than 0")
    return out


def _length(rng: random.Random, mean: float) -> int:
    """Exchanges in one conversation: geometric with the given mean (at least one)."""
    if mean <= 1:
        return 1
    return 1 + int(rng.expovariate(1.0) * (mean - 1))


def _sample(pid, start, lock, lat, done, previous, rss_seen) -> dict:
    """One interval's numbers; `previous` is the last sample (None for the first)."""
    last_t, last_done = (previous["t"], previous["done"]) if previous else (0.0, 0)
    now = time.perf_counter()
    with lock:
        stores, queries = sorted(lat["store"]), sorted(lat["query"])
        lat["store"].clear()
        lat["query"].clear()
        n = done[0]
        seen = sorted(rss_seen)
        rss_seen.clear()
    interval = now - start - last_t
    if not seen:
        try:
            seen = [rss_kib(pid) / 1024]
        except OSError:
            seen = [0.0]
    try:
        by_kind = rss_by_kind_mib(pid)
    except OSError:
        by_kind = {}
    return {
        "t": round(now - start, 1), "done": n, "rss_min_mib": round(seen[0], 1),
        "rss_mib": round(seen[len(seen) // 2], 1), "rss_max_mib": round(seen[-1], 1),
        "rps": round((n - last_done) / interval, 1) if interval > 0 else 0.0,
        "store_ms": {f"p{p}": round(percentile(stores, p) * 1000, 2) for p in (50, 99, 100)},
        "query_ms": {f"p{p}": round(percentile(queries, p) * 1000, 2) for p in (50, 99, 100)},
        "rss_by_kind_mib": by_kind,
    }


def _plateau(samples: list[dict], tolerance: float) -> dict:
    """The level between compactions (median of the interval minimums) of the last third against the
    middle third; the steady RSS (interval medians) and the peaks beside it."""
    kept = [s for s in samples if s["rss_mib"]]
    if len(kept) < 6:
        return {"plateaued": None, "message": f"RSS plateau: too few samples ({len(kept)}) to judge"}
    third = len(kept) // 3
    middle, last = kept[third:2 * third], kept[2 * third:]

    def level(part: list[dict]) -> float:  # runs from before rss_min_mib was kept fall back to the medians
        return median([s.get("rss_min_mib", s["rss_mib"]) for s in part])

    level_middle, level_last = level(middle), level(last)
    steady_middle, steady_last = median([s["rss_mib"] for s in middle]), median([s["rss_mib"] for s in last])
    peak_middle = max(s.get("rss_max_mib", s["rss_mib"]) for s in middle)
    peak_last = max(s.get("rss_max_mib", s["rss_mib"]) for s in last)
    ok = level_last <= level_middle * (1 + tolerance)
    return {"plateaued": ok, "middle_level_mib": level_middle, "last_level_mib": level_last,
            "middle_steady_mib": steady_middle, "last_steady_mib": steady_last,
            "middle_peak_mib": peak_middle, "last_peak_mib": peak_last,
            "message": f"RSS {'plateaued' if ok else 'did NOT plateau'}: the level between compactions (median of "
                       f"the interval minimums) {level_middle:.1f} MiB in the middle third, {level_last:.1f} MiB in "
                       f"the last third (tolerance {tolerance:.0%}); steady (median of the interval medians) "
                       f"{steady_middle:.1f} and {steady_last:.1f} MiB; peaks {peak_middle:.1f} and "
                       f"{peak_last:.1f} MiB"}


def _write(args, samples, ready, failure, verdict, exit_code=None) -> None:
    out = {"requests": args.requests, "query_mix": args.query_mix, "window": args.window, "users": args.users,
           "conversations": args.conversations, "exchanges": args.exchanges, "interval_s": args.interval,
           "sidecar_args": args.sidecar_args, "startup_ms": ready.get("startup_ms"), "samples": samples,
           "failure": failure[0] if failure else None, "plateau": verdict, "exit_code": exit_code}
    Path(args.out).write_bytes(orjson.dumps(out, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    sys.exit(main())
