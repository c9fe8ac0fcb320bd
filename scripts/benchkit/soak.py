"""Soak: stream `store` and `query` requests through one sidecar for a long time, pipelined with a
bounded in-flight window, and record RSS (from /proc, sampled every second) and latency percentiles
per interval.

Traffic is modelled on a chat host: --conversations users talk at once; each exchange is a `query`
for the user (the memories for the prompt) followed by a `store` of their message; a conversation
lasts --exchanges exchanges on average (geometric), then a new user, drawn uniformly from --users,
takes its place. --exchanges 0 draws every request's user independently instead: no locality at
all, the worst case for the vector cache once the stored data outgrows it.

    python scripts/bench.py soak --requests 1000000 --out soak.json     # about 3 hours on 2 cores
    python scripts/bench.py soak --requests 2000 --interval 1            # a quick check that it works
    python scripts/bench.py soak --judge soak.json                       # the verdict for an earlier run
    python scripts/bench.py soak --requests 2000 -- --compact-every-writes 50   # extra sidecar flags
    python scripts/bench.py soak --requests 100000 --hostile 0.05 --interval 30  # hostile shapes mixed in

--hostile SHARE replaces that share of the requests with the shapes of scripts/benchkit/hostile.py (lines that
are not JSON, text that hung or stalled the sidecar before, batches over the limits); each must get one of its
expected answers, in order. With --hostile (or --verify), the run ends with an `export` of the data dir and
checks that every memory whose store was answered `ok` is in it.

Every answer is checked (ok with an id for a store, results for a query, in order); the run stops
at the first wrong answer. Each sample in --out keeps the interval's lowest, median and highest
one-second RSS, and RSS by kind of mapping at the sample (`rss_by_kind_mib`: main heap, glibc's other
arenas, pyarrow's pool, large and small anonymous mappings, files). At the end it prints whether RSS
plateaued: the level RSS falls back to between compactions (each interval's lowest one-second RSS;
their median over the last third of the intervals) stays within --plateau-tolerance of the middle
third's. Memory that is kept, leaked or fragmented raises that level; a compaction's working memory,
which is given back when it ends, does not. The steady RSS (the interval medians, which rise as
compactions take longer) and the peaks are reported beside it. `--judge soak.json` prints the verdict
for an earlier run. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from itertools import pairwise
from pathlib import Path
from statistics import median
from typing import Any

from . import ROOT, pyheap
from . import hostile as hostile_shapes
from .client import BenchError, Sidecar
from .output import write_json
from .procfs import rss_by_kind_mib, rss_kib
from .timing import pct
from .workload import conversation_length, words_text

SUMMARY = "long pipelined run: RSS and latency over time, plateau"


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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=int, default=1_000_000, help="total requests (half store, half query)")
    parser.add_argument("--window", type=int, default=32, help="most requests in flight")
    parser.add_argument("--users", type=int, default=1_000, help="users conversations are drawn from")
    parser.add_argument("--conversations", type=int, default=16, help="users talking at the same time")
    parser.add_argument(
        "--exchanges",
        type=float,
        default=20.0,
        help="mean query+store exchanges per conversation; 0: every request's user drawn independently",
    )
    parser.add_argument("--interval", type=float, default=10.0, help="seconds per sample")
    parser.add_argument("--data-dir", help="the sidecar's data dir (default: a fresh temporary directory)")
    parser.add_argument("--out", default="soak.json", help="the samples and the verdict, rewritten every interval")
    parser.add_argument(
        "--plateau-tolerance",
        type=float,
        default=0.05,
        help="how much the last third's level may exceed the middle third's",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the traffic")
    parser.add_argument(
        "--query-mix",
        default="default=1",
        type=_mix,
        help="query modes and their shares, e.g. semantic=0.9,hybrid=0.1; 'default' sends no mode "
        "(the sidecar's default, hybrid)",
    )
    parser.add_argument(
        "--judge", metavar="SOAK_JSON", help="print the plateau verdict for an earlier run's --out and exit"
    )
    parser.add_argument(
        "--hostile",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of requests replaced by hostile shapes (scripts/benchkit/hostile.py), 0 to 1; implies --verify",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="at the end, export the data dir and check every acknowledged memory is in it",
    )
    parser.add_argument(
        "--retain",
        type=int,
        default=0,
        metavar="REQUESTS",
        help="keep the store to about the memories of the last REQUESTS requests, as a bot with a retention "
        "policy does: stores are dated in epochs of REQUESTS/4 requests, a day apart at most, and at the start of "
        "each epoch from the fifth on a `cleanup` deletes the oldest epoch still stored; the export at the end must "
        "hold every acknowledged memory of the epochs kept and none of the ones deleted; 0: the store only grows",
    )
    parser.add_argument(
        "--flat-slope",
        type=float,
        default=1.0,
        metavar="MIB",
        help="RSS is flat in the last half when the level between compactions (interval minimums) rises by at most "
        "this many MiB per 10,000 requests (least-squares slope over the samples of the last half of the requests)",
    )
    parser.add_argument(
        "--pyheap",
        action="store_true",
        help="each sample also holds Python's heap inside the sidecar (pyheap.py: object arenas, bytes in live "
        "objects, glibc's malloc totals, the most numerous types of the objects made since `ready`, LanceDB's "
        "cache bytes); from source only",
    )
    parser.add_argument(
        "--tracemalloc",
        type=int,
        default=0,
        metavar="FRAMES",
        help="with --pyheap: trace Python's allocations in the sidecar (FRAMES frames each; slows it) and print, at "
        "the end, the allocation sites whose live bytes grew most over the last half (Python's share of any rise)",
    )
    parser.add_argument("sidecar_args", nargs="*", help="extra sidecar flags (after --)")


def run(args: argparse.Namespace) -> int:
    if args.judge:
        samples = json.loads(Path(args.judge).read_bytes())["samples"]
        print(plateau(samples, args.plateau_tolerance)["message"])
        print(last_half(samples, args.flat_slope)["message"])
        print(deciles(samples)["message"])
        return 0

    tmp = None
    data_dir = args.data_dir
    if data_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="soak-")
        data_dir = os.path.join(tmp.name, "data")
    if args.pyheap:
        pyheap.enable(tempfile.mkdtemp(prefix="soak-pyheap-"), types=True, tracemalloc_frames=args.tracemalloc)
    with Sidecar(data_dir, args.sidecar_args, expiry_off=False, cwd=ROOT, clean_env=True) as sc:
        try:
            _, ready = sc.wait_ready()
        except BenchError as e:
            print(f"sidecar did not start: {e}", file=sys.stderr)
            return 1
        acked: list[str] = []
        kept = Retention(args.retain, args.requests)
        samples, failure = stream(args, sc, ready, acked, kept)
        if not failure and (args.verify or args.hostile > 0 or args.retain > 0):
            failure += verify(sc, acked, data_dir, kept)
        code = sc.finish(120)
    verdict = plateau(samples, args.plateau_tolerance)
    flat = last_half(samples, args.flat_slope)
    _write(args, samples, ready, failure, verdict, exit_code=code, flat=flat)
    print(verdict["message"])
    print(flat["message"])
    print(deciles(samples)["message"])
    dumps = [
        (s["done"], s["pyheap"]["tracemalloc_snapshot"])
        for s in samples
        if "tracemalloc_snapshot" in s.get("pyheap", {})
    ]
    if len(dumps) >= 2:  # the sample nearest half way against the last
        middle = min(dumps, key=lambda d: abs(d[0] - args.requests / 2))
        print(f"Python's live bytes by allocation site, growth from {middle[0]} to {dumps[-1][0]} requests:")
        for line in pyheap.growth(middle[1], dumps[-1][1]):
            print("  " + line)
    if failure:
        print(failure[0], file=sys.stderr)
    if tmp is not None:
        tmp.cleanup()
    return 0 if not failure and code == 0 else 1


class Retention:
    """--retain: the dates of the stores, by epochs of `retain // 4` requests (even: an epoch starts with a query's
    slot, which its `cleanup` takes), GAP seconds apart, each epoch's stores within the first half of its GAP; a
    `cleanup` cuts in the middle of the empty half before an epoch, so the time a request waits in the pipe moves
    no memory across the cut. Every date is within the last 28 days (the sidecar's default expiry is 30)."""

    def __init__(self, retain: int, requests: int):
        self.on = retain > 0
        self.epoch = max(2, (retain // 4) // 2 * 2)
        epochs = requests // self.epoch + 2
        self.gap = min(86_400.0, 28 * 86_400.0 / epochs)
        self.base = time.time() - epochs * self.gap
        self.of: dict[str, int] = {}  # acknowledged memory id -> epoch of its store (dated ones only)
        self.cut = -1  # epochs up to this one were deleted by a cleanup answered ok

    def date(self, i: int) -> float:
        e, k = divmod(i, self.epoch)
        return self.base + e * self.gap + k * (self.gap / 2 / self.epoch)

    def cleanup(self, i: int) -> tuple[dict[str, Any], int] | None:
        """At the start of each epoch from the fifth: the request that deletes the oldest epoch kept, and that epoch."""
        e, k = divmod(i, self.epoch)
        if not self.on or k or e < 5:
            return None
        cut = e - 5
        at = self.base + (cut + 1) * self.gap - self.gap / 4  # after epoch `cut`'s stores, before the next's
        return {"type": "cleanup", "ttl_days": (time.time() - at) / 86_400.0}, cut


def verify(sc: Sidecar, acked: list[str], data_dir: str, kept: Retention | None = None) -> list[str]:
    """Every acknowledged memory is in an export of the data dir, but those a --retain cleanup deleted, which
    are not: [] or one failure line."""
    out = Path(tempfile.mkdtemp(prefix="soak-verify-")) / "all.jsonl"
    sc.timeout = max(sc.timeout, 600.0)
    answer = sc.request({"type": "export", "out": str(out), "vectors": False}, "exported")
    found = set()
    with open(out, "rb") as f:
        for line in f:
            record = json.loads(line)
            if record.get("kind") == "message":
                found.add(record.get("id"))
    cut = kept.cut if kept is not None else -1
    deleted = {i for i in acked if kept is not None and kept.of.get(i, cut + 1) <= cut}
    acked = [i for i in acked if i not in deleted]
    missing = [i for i in acked if i not in found]
    back = [i for i in deleted if i in found]
    print(
        f"verify: {len(acked)} acknowledged memories, {len(acked) - len(missing)} in the export "
        f"({answer.get('messages')} messages exported)"
        + (
            f"; {len(deleted)} deleted by the retention cleanups, {len(back)} of them in the export"
            if kept and kept.on
            else ""
        ),
        flush=True,
    )
    out.unlink()
    failures = [f"{len(missing)} acknowledged memories missing from the export, e.g. {missing[:3]}"] if missing else []
    return failures + ([f"{len(back)} memories a cleanup deleted are in the export, e.g. {back[:3]}"] if back else [])


def stream(
    args: argparse.Namespace, sc: Sidecar, ready: dict, acked: list[str] | None = None, kept: Retention | None = None
) -> tuple[list[dict], list[str]]:
    """The traffic, a writer and a reader thread with at most --window requests in flight, and a sample
    every --interval seconds (rewritten to --out) until every answer is in or one is wrong. The ids of the
    memories whose store was answered `ok` are appended to `acked` (and their epochs noted in `kept`)."""
    acked = [] if acked is None else acked
    kept = Retention(0, args.requests) if kept is None else kept
    cuts: dict[int, int] = {}  # request number of a retention cleanup -> the epoch it deletes
    rng = random.Random(args.seed)
    hostile_rng = random.Random(args.seed + 1)
    expected_hostile: dict[int, hostile_shapes.Hostile] = {}
    modes, weights = list(args.query_mix), list(args.query_mix.values())
    slots = threading.Semaphore(args.window)
    sent_at: dict[int | None, tuple[float, str]] = {}
    lock = threading.Lock()
    lat: dict[str, list[float]] = {"store": [], "query": []}
    done = [0]
    failure: list[str] = []
    finished = threading.Event()

    def new_user() -> str:
        return f"user-{rng.randrange(args.users)}"

    talking: list[list[Any]] = [[new_user(), 0] for _ in range(max(1, args.conversations))]  # [user, exchanges left]
    for conv in talking:
        conv[1] = conversation_length(rng, args.exchanges)

    def writer() -> None:
        conv = talking[0]
        try:
            for i in range(args.requests):
                slots.acquire()
                if failure:
                    return
                text = words_text(rng)
                if args.exchanges <= 0:
                    user = new_user()
                elif i % 2 == 0:  # a new exchange: the host asks for memories, then stores the message
                    conv = rng.choice(talking)
                    if conv[1] <= 0:
                        conv[0], conv[1] = new_user(), conversation_length(rng, args.exchanges)
                    conv[1] -= 1
                    user = conv[0]
                else:
                    user = conv[0]
                req: dict[str, Any] | None
                if i % 2 == 1:
                    req = {"type": "store", "user_id": user, "content": f"{text} #{i}", "request_id": i}
                    kind = "store"
                else:
                    req = {"type": "query", "user_id": user, "text": text, "limit": 5, "request_id": i}
                    mode = rng.choices(modes, weights)[0]
                    if mode != "default":
                        req["mode"] = mode
                    kind = "query"
                if kept.on and i % 2 == 1:
                    req["timestamp"] = kept.date(i)
                cleanup = kept.cleanup(i)
                if cleanup is not None:
                    req, kind = {**cleanup[0], "request_id": i}, "cleanup"
                    with lock:
                        cuts[i] = cleanup[1]
                elif args.hostile > 0 and hostile_rng.random() < args.hostile:
                    shape = hostile_shapes.draw(hostile_rng, user)
                    kind = "hostile"
                    with lock:
                        expected_hostile[i] = shape
                    if isinstance(shape.request, bytes):
                        req = None
                        sc.queue_raw(shape.request)
                    else:
                        req = {**shape.request, "request_id": i}
                with lock:
                    sent_at[i] = (time.perf_counter(), kind)
                if req is not None:
                    sc.queue(req)
                if i % 8 == 7 or i == args.requests - 1:
                    sc.flush()
            sc.flush()
        except BenchError as e:  # the reader sees the same end of the pipe and stops the run
            failure.append(str(e))

    def reader() -> None:
        expected = 0
        try:
            while expected < args.requests:
                r = sc.read()
                now = time.perf_counter()
                rid = r.get("request_id")
                with lock:
                    t0, kind = sent_at.pop(expected, (None, None))
                    shape = expected_hostile.pop(expected, None)
                if shape is not None:  # raw lines cannot be echoed a request_id
                    ok = (rid == expected or (isinstance(shape.request, bytes) and rid is None)) and r.get(
                        "type"
                    ) in shape.answers
                    if ok and shape.stores and r.get("type") == "ok":
                        acked.append(r["id"])
                else:
                    ok = (
                        rid == expected
                        and t0 is not None
                        and (
                            (kind == "store" and r.get("type") == "ok" and r.get("id"))
                            or (kind == "query" and r.get("type") == "results")
                        )
                    )
                    if ok and kind == "store":
                        acked.append(r["id"])
                        if kept.on:
                            kept.of[r["id"]] = expected // kept.epoch
                    elif kind == "cleanup":
                        ok = rid == expected and r.get("type") == "ok"
                        if ok:
                            with lock:
                                kept.cut = max(kept.cut, cuts.pop(expected))
                if not ok:
                    what = f" ({shape.name})" if shape is not None else ""
                    failure.append(f"request {expected}{what}: unexpected answer {str(r)[:500]}")
                    slots.release()
                    break
                assert t0 is not None and kind is not None  # (ok)
                with lock:
                    if kind in lat:
                        lat[kind].append(now - t0)
                    done[0] += 1
                expected += 1
                slots.release()
        except BenchError as e:
            failure.append(f"request {expected}: {e}")
            slots.release()
        finished.set()

    rss_seen: list[float] = []  # one-second samples since the last interval

    def sampler() -> None:
        while not finished.wait(1.0):
            try:
                value = rss_kib(sc.pid) / 1024
            except OSError:
                continue
            with lock:
                rss_seen.append(value)

    samples: list[dict[str, Any]] = []
    start = time.perf_counter()
    threads = [threading.Thread(target=f, daemon=True) for f in (writer, reader, sampler)]
    for t in threads:
        t.start()
    while not finished.wait(args.interval):
        samples.append(_sample(sc.pid, start, lock, lat, done, samples[-1] if samples else None, rss_seen))
        s = samples[-1]
        print(
            f"t={s['t']:7.0f}s done={s['done']:8d} rss median/max={s['rss_mib']:6.1f}/{s['rss_max_mib']:6.1f} MiB "
            f"rps={s['rps']:6.0f} store p50/p99={s['store_ms']['p50']:.1f}/{s['store_ms']['p99']:.1f} ms "
            f"query p50/p99={s['query_ms']['p50']:.1f}/{s['query_ms']['p99']:.1f} ms",
            flush=True,
        )
        _write(args, samples, ready, failure, None)
    samples.append(_sample(sc.pid, start, lock, lat, done, samples[-1] if samples else None, rss_seen))
    return samples, failure


def _sample(pid, start, lock, lat, done, previous, rss_seen) -> dict:
    """One interval's numbers; `previous` is the last sample (None for the first)."""
    last_t, last_done = (previous["t"], previous["done"]) if previous else (0.0, 0)
    now = time.perf_counter()
    with lock:
        stores, queries = list(lat["store"]), list(lat["query"])
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
        "t": round(now - start, 1),
        "done": n,
        "rss_min_mib": round(seen[0], 1),
        "rss_mib": round(seen[len(seen) // 2], 1),
        "rss_max_mib": round(seen[-1], 1),
        "rps": round((n - last_done) / interval, 1) if interval > 0 else 0.0,
        "store_ms": _percentiles(stores),
        "query_ms": _percentiles(queries),
        "rss_by_kind_mib": by_kind,
        **({"pyheap": heap} if (heap := pyheap.read(pid)) is not None else {}),
    }


def _percentiles(values_s: list[float]) -> dict[str, float]:
    """p50, p99 and p100 in ms, by rank (0 without values), to 0.01 ms."""
    p = pct(values_s, "rank")
    return {"p50": round(p["p50_ms"], 2), "p99": round(p["p99_ms"], 2), "p100": round(p["max_ms"], 2)}


def plateau(samples: list[dict], tolerance: float) -> dict:
    """The level between compactions (median of the interval minimums) of the last third against the
    middle third; the steady RSS (interval medians) and the peaks beside it."""
    kept = [s for s in samples if s["rss_mib"]]
    if len(kept) < 6:
        return {"plateaued": None, "message": f"RSS plateau: too few samples ({len(kept)}) to judge"}
    third = len(kept) // 3
    middle, last = kept[third : 2 * third], kept[2 * third :]

    def level(part: list[dict]) -> float:  # runs from before rss_min_mib was kept fall back to the medians
        return median([s.get("rss_min_mib", s["rss_mib"]) for s in part])

    level_middle, level_last = level(middle), level(last)
    steady_middle, steady_last = median([s["rss_mib"] for s in middle]), median([s["rss_mib"] for s in last])
    peak_middle = max(s.get("rss_max_mib", s["rss_mib"]) for s in middle)
    peak_last = max(s.get("rss_max_mib", s["rss_mib"]) for s in last)
    ok = level_last <= level_middle * (1 + tolerance)
    return {
        "plateaued": ok,
        "middle_level_mib": level_middle,
        "last_level_mib": level_last,
        "middle_steady_mib": steady_middle,
        "last_steady_mib": steady_last,
        "middle_peak_mib": peak_middle,
        "last_peak_mib": peak_last,
        "message": f"RSS {'plateaued' if ok else 'did NOT plateau'}: the level between compactions (median of "
        f"the interval minimums) {level_middle:.1f} MiB in the middle third, {level_last:.1f} MiB in "
        f"the last third (tolerance {tolerance:.0%}); steady (median of the interval medians) "
        f"{steady_middle:.1f} and {steady_last:.1f} MiB; peaks {peak_middle:.1f} and "
        f"{peak_last:.1f} MiB",
    }


def last_half(samples: list[dict], max_slope: float) -> dict:
    """Whether RSS is flat in the last half of the requests: the least-squares slope of the level between
    compactions (each interval's lowest one-second RSS) against the requests answered, over the samples of the
    last half, in MiB per 10,000 requests, at most `max_slope`; beside it the level (median of the interval
    minimums) of the samples around the half (45-55% of the requests), three quarters (70-80%) and the end (the
    last 10%)."""
    kept = [s for s in samples if s.get("done")]
    total = kept[-1]["done"] if kept else 0
    half = [s for s in kept if s["done"] >= total / 2]
    if len(half) < 4:
        return {"flat": None, "message": f"RSS in the last half: too few samples ({len(half)}) to judge"}
    xs, ys = [s["done"] / 10_000 for s in half], [s.get("rss_min_mib", s["rss_mib"]) for s in half]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / (sum((x - mx) ** 2 for x in xs) or 1.0)

    def level(lo: float, hi: float) -> float | None:
        part = [s.get("rss_min_mib", s["rss_mib"]) for s in kept if lo * total <= s["done"] <= hi * total]
        return round(median(part), 1) if part else None

    at = {"50%": level(0.45, 0.55), "75%": level(0.70, 0.80), "100%": level(0.90, 1.0)}
    ok = slope <= max_slope
    return {
        "flat": ok,
        "slope_mib_per_10k": round(slope, 2),
        "max_slope_mib_per_10k": max_slope,
        "level_mib": at,
        "message": f"RSS {'flat' if ok else 'NOT flat'} in the last half: the level between compactions rose "
        f"{slope:+.2f} MiB per 10,000 requests (least squares over {len(half)} samples; at most {max_slope:g}); "
        f"level at 50% / 75% / 100% of the requests {' / '.join(f'{v}' for v in at.values())} MiB",
    }


def deciles(samples: list[dict]) -> dict:
    """The speed issue's soak figures: throughput of each tenth of the requests (from the sample times,
    interpolated where a tenth ends between samples), the first tenth's against the last's; steady RSS
    (median of the interval medians) in the first tenth against the last third; the highest one-second
    RSS against the last third's steady RSS (compaction peaks)."""
    kept = [s for s in samples if s.get("done")]
    if len(kept) < 10:
        return {"message": f"soak deciles: too few samples ({len(kept)}) to judge"}
    total = kept[-1]["done"]
    points = [(0.0, 0)] + [(s["t"], s["done"]) for s in kept]

    def time_at(n: float) -> float:  # when the n-th answer came in, linearly between samples
        for (t0, d0), (t1, d1) in pairwise(points):
            if d1 >= n:
                return t0 + (t1 - t0) * ((n - d0) / (d1 - d0) if d1 > d0 else 1.0)
        return points[-1][0]

    edges = [time_at(total * k / 10) for k in range(11)]
    rps = [total / 10 / (b - a) if b > a else 0.0 for a, b in pairwise(edges)]
    first = [s["rss_mib"] for s in kept if s["done"] <= total / 10] or [kept[0]["rss_mib"]]
    last = [s["rss_mib"] for s in kept[2 * len(kept) // 3 :]]
    start_mib, last_mib = median(first), median(last)
    peak = max(s.get("rss_max_mib", s["rss_mib"]) for s in kept)
    loss = 1 - rps[-1] / rps[0] if rps[0] else 0.0
    return {
        "requests": total,
        "tenth_rps": [round(r, 1) for r in rps],
        "throughput_loss": loss,
        "rss_start_mib": start_mib,
        "rss_last_third_mib": last_mib,
        "rss_growth": last_mib / start_mib - 1,
        "peak_mib": peak,
        "peak_over_steady": peak / last_mib,
        "message": f"soak deciles ({total} requests): requests/s by tenth "
        f"{' '.join(f'{r:.0f}' for r in rps)}; first to last tenth {loss:+.0%} lost (target <= "
        f"10%); steady RSS {start_mib:.0f} MiB in the first tenth, {last_mib:.0f} MiB in the last "
        f"third ({last_mib / start_mib - 1:+.0%}, target within 10%); highest one-second RSS "
        f"{peak:.0f} MiB = {peak / last_mib:.2f}x the last third's steady RSS (target <= 1.3x)",
    }


def _write(args, samples, ready, failure, verdict, exit_code=None, flat=None) -> None:
    write_json(
        args.out,
        {
            "requests": args.requests,
            "query_mix": args.query_mix,
            "window": args.window,
            "users": args.users,
            "conversations": args.conversations,
            "exchanges": args.exchanges,
            "interval_s": args.interval,
            "sidecar_args": args.sidecar_args,
            "hostile": args.hostile,
            "startup_ms": ready.get("startup_ms"),
            "samples": samples,
            "failure": failure[0] if failure else None,
            "plateau": verdict,
            "last_half": flat,
            "retain": args.retain,
            "exit_code": exit_code,
        },
    )
