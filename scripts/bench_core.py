#!/usr/bin/env python3
"""Core benchmark of memory-sidecar, measured over the real stdin/stdout pipe.

What it measures, in order:

1. spawn to ready: start `python -m sidecar --data-dir <empty temp dir> --ttl-days 0` N times and
   time Popen -> the `{"type":"ready"}` line (median, min), plus the sidecar's own `startup_ms`;
   each run is then shut down with a `shutdown` request and must exit 0.
2. ingest: one fresh sidecar is filled with --rows generated chat messages over --users users,
   in batch `store` requests of --batch messages; the rate is messages / wall time of the batches.
3. latency: a `{"type":"cleanup","ttl_days":36500}` request is sent (documented to compact the
   table), then --requests sequential single `store` round trips and --requests sequential
   `query` round trips (limit 5, random user, random short question), one request in flight at a
   time; median, p95 and p99 in ms.
4. peak RSS: VmHWM from /proc/<pid>/status just before shutdown (Linux only).
5. disk bytes per memory: from the `stats` response right after the cleanup request.

Also recorded (JSON): the number of LanceDB data files and versions before and after the cleanup
request, so one can see whether the table was actually compacted when latency was measured.

Uses only the standard library plus numpy. Prints a markdown table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import select
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

try:
    import orjson

    def _dumps(obj: Any) -> bytes:
        return orjson.dumps(obj)

    _loads = orjson.loads
except ImportError:  # pragma: no cover - orjson is a dependency of the sidecar itself
    def _dumps(obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode()

    _loads = json.loads


class BenchError(RuntimeError):
    pass


# --------------------------------------------------------------------------- message generation

NAMES = ["Sam", "Alex", "Jordan", "Priya", "Mateo", "Lena", "Kofi", "Yuki", "Omar", "Chloe", "Ivan", "Maya"]
RELATIONS = ["sister", "brother", "mom", "dad", "roommate", "boss", "best friend", "cousin", "partner", "neighbor"]
PETS = ["cat", "dog", "rabbit", "parrot", "hamster", "goldfish", "puppy", "kitten"]
PET_NAMES = ["Biscuit", "Luna", "Milo", "Pepper", "Ziggy", "Nala", "Oscar", "Mochi", "Rex", "Willow"]
PLACES = ["Lisbon", "Tokyo", "the lake house", "Berlin", "my grandparents' farm", "Montreal", "the coast",
          "Mexico City", "the mountains", "Edinburgh", "Seoul", "the new climbing gym", "the farmers market"]
FOODS = ["ramen", "tacos", "sourdough", "pad thai", "sushi", "lasagna", "curry", "pho", "falafel", "pancakes",
         "dumplings", "paella", "banana bread"]
HOBBIES = ["bouldering", "guitar", "chess", "running", "photography", "knitting", "gardening", "painting",
           "woodworking", "baking", "yoga", "cycling", "pottery", "birdwatching"]
THINGS = ["laptop", "bike", "phone", "car", "espresso machine", "headphones", "keyboard", "camera", "apartment",
          "standing desk", "couch"]
MEDIA = ["that new sci-fi series", "the Dune books", "a podcast about ancient Rome", "the latest Zelda game",
         "a documentary on octopuses", "a mystery novel", "the jazz album my dad recommended", "an anime about cooking"]
ADJS = ["amazing", "terrible", "way too expensive", "surprisingly good", "kind of boring", "really relaxing",
        "super stressful", "better than expected", "a total mess", "honestly perfect", "pretty weird"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "tomorrow", "next week",
        "this weekend", "tonight"]
JOBS = ["a nurse", "a software developer", "a teacher", "a chef", "an accountant", "a graphic designer",
        "an electrician", "a barista", "a data analyst", "an architect"]
FEELINGS = ["tired", "excited", "nervous", "happy", "stressed", "bored", "anxious", "relieved", "hopeful"]
TOPICS = ["my job interview", "the move", "my exam", "the marathon", "the wedding", "my dentist appointment",
          "the project deadline", "my driving test", "the concert", "my sister's birthday party"]

USER_MAIN = [
    "I just got back from {place} and honestly the food was {adj}",
    "my {pet} {pet_name} knocked a glass off the table again this morning",
    "I've been getting really into {hobby} lately, I try to practice every evening after work",
    "can you remind me that I have {topic} on {day}",
    "my {relation} {name} is visiting {day} and I have no idea what to cook",
    "I work as {job} and the shifts this month have been {adj}",
    "I'm allergic to peanuts so I always have to check the labels twice",
    "thinking about buying a new {thing} because mine is {adj}",
    "I made {food} for dinner yesterday and it came out {adj}",
    "I'm feeling pretty {feeling} about {topic}",
    "I started watching {media} and I can't stop",
    "we're planning a trip to {place} in the spring with my {relation}",
    "my favorite food is {food}, I could eat it every single day",
    "I finally fixed my {thing} after two weeks of it being broken",
    "I've been learning Spanish on my lunch breaks for about three months now",
    "I don't drink coffee anymore, switched to green tea a while ago",
    "my {relation} just got a {pet} and named it {pet_name}",
    "I need to stop staying up so late, I feel {feeling} all the time",
    "do you know any good places for {food} near downtown",
    "I ran my first 10k last weekend and my legs are still sore",
]
USER_TAILS = [
    "not sure if I'd do it again though", "my {relation} thought it was {adj}", "anyway that's my week so far",
    "I'll tell you more about it later", "it's been on my mind a lot", "which is kind of funny if you think about it",
    "I should probably write that down somewhere", "and {name} keeps asking me about it", "lol",
    "does that make sense", "I really want to get better at it", "it cost way more than I planned",
    "we'll see how it goes {day}", "I'm {feeling} just thinking about it",
]
BOT_MAIN = [
    "that sounds {adj}, how did your {relation} like it",
    "got it, I'll remember that you have {topic} on {day}",
    "nice, how long have you been doing {hobby} now",
    "{pet_name} sounds like a handful, is {pet_name} your first {pet}",
    "good luck with {topic}, you've prepared a lot for it",
    "being {job} means a tough schedule, make sure you get some rest",
    "if you liked {media} you might enjoy something similar next",
]
BOT_TAILS = ["let me know how it goes", "I'm happy to help you plan it", "tell me more whenever you want",
             "that's a great idea", "I'll keep that in mind for next time"]
QUESTIONS = [
    "what pets does this user have", "where did I travel recently", "what is my job", "what food do I like",
    "do I have any allergies", "what are my hobbies", "when is my appointment", "who is visiting me",
    "what am I watching lately", "what did I cook yesterday", "how am I feeling", "what did I buy",
    "what is my {relation}'s name", "do I like coffee", "what language am I learning", "did I go running",
    "what's my {pet} called", "any plans for {day}",
]


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        place=rng.choice(PLACES), adj=rng.choice(ADJS), pet=rng.choice(PETS), pet_name=rng.choice(PET_NAMES),
        hobby=rng.choice(HOBBIES), topic=rng.choice(TOPICS), day=rng.choice(DAYS), relation=rng.choice(RELATIONS),
        name=rng.choice(NAMES), job=rng.choice(JOBS), thing=rng.choice(THINGS), food=rng.choice(FOODS),
        feeling=rng.choice(FEELINGS), media=rng.choice(MEDIA),
    )


def make_message(rng: random.Random, bot: bool, min_words: int = 10, max_words: int = 25) -> str:
    """One chat message of min_words..max_words words: a main clause plus tails until long enough."""
    mains, tails = (BOT_MAIN, BOT_TAILS) if bot else (USER_MAIN, USER_TAILS)
    target = rng.randint(min_words, max_words)
    text = _fill(rng.choice(mains), rng)
    tries = 0
    while len(text.split()) < target:
        tail = _fill(rng.choice(tails), rng)
        if len(text.split()) + len(tail.split()) > max_words and tries < 20:
            tries += 1
            continue  # pick a shorter tail rather than cut one in half
        text += rng.choice([", ", ". "]) + tail
    text = " ".join(text.split()[:max_words]).rstrip(",.")
    if rng.random() < 0.6:
        text = text[0].upper() + text[1:]
    if rng.random() < 0.5:
        text += rng.choice([".", "!"])
    return text


def make_question(rng: random.Random) -> str:
    return _fill(rng.choice(QUESTIONS), rng)


def user_id(n: int) -> str:
    return f"user-{n:03d}"


# --------------------------------------------------------------------------- the sidecar process


class Sidecar:
    """One sidecar child: NDJSON over its pipes, with a per-response timeout."""

    def __init__(self, python: str, data_dir: Path, log_path: Path, timeout: float, extra_args: list[str]):
        self.cmd = [python, "-m", "sidecar", "--data-dir", str(data_dir), "--ttl-days", "0", *extra_args]
        self.log_path = log_path
        self.timeout = timeout
        self._log = open(log_path, "ab")
        self._buf = bytearray()
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                     bufsize=0, close_fds=True)
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _fail(self, what: str) -> BenchError:
        rc = self.proc.poll()
        tail = ""
        try:
            self._log.flush()
            tail = self.log_path.read_bytes()[-4000:].decode(errors="replace")
        except OSError:
            pass
        state = f"exited with code {rc}" if rc is not None else "still running"
        return BenchError(f"{what} (sidecar pid {self.pid} {state}); last stderr:\n{tail}")

    def send(self, obj: dict[str, Any]) -> None:
        self.send_raw(_dumps(obj) + b"\n")

    def send_raw(self, line: bytes) -> None:
        view = memoryview(line)
        try:
            while view:
                n = os.write(self._in, view)
                view = view[n:]
        except BrokenPipeError:
            raise self._fail("sidecar stdin closed while writing a request") from None

    def read(self) -> dict[str, Any]:
        """The next response line, parsed. Raises BenchError on EOF, timeout or bad JSON."""
        deadline = time.monotonic() + self.timeout
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[:nl + 1]
                try:
                    obj = _loads(line)
                except ValueError:
                    raise self._fail(f"sidecar wrote a line that is not JSON: {line[:300]!r}") from None
                if not isinstance(obj, dict):
                    raise self._fail(f"sidecar wrote a non-object line: {line[:300]!r}")
                return obj
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._fail(f"no response within {self.timeout:g} s")
            ready, _, _ = select.select([self._out], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._out, 1 << 20)
            if not chunk:
                raise self._fail("sidecar closed stdout (EOF) while a response was expected")
            self._buf += chunk

    def request(self, obj: dict[str, Any], expect: str) -> dict[str, Any]:
        self.send(obj)
        resp = self.read()
        if resp.get("type") != expect:
            raise self._fail(f"request type {obj.get('type')!r}: expected a {expect!r} response, got "
                             f"{json.dumps(resp)[:1000]}")
        return resp

    def wait_ready(self) -> tuple[float, dict[str, Any]]:
        """Seconds from Popen to the ready line, and the ready line."""
        ready = self.read()
        t = time.perf_counter() - self.t_spawn
        if ready.get("type") != "ready":
            raise self._fail(f"expected the ready line, got {json.dumps(ready)[:1000]}")
        return t, ready

    def vm_status(self) -> dict[str, int]:
        """VmHWM and VmRSS in kB from /proc/<pid>/status (empty off Linux)."""
        out: dict[str, int] = {}
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    key, _, rest = line.partition(":")
                    if key in ("VmHWM", "VmRSS"):
                        out[key] = int(rest.split()[0])
        except OSError:
            pass
        return out

    def shutdown(self) -> int:
        self.request({"type": "shutdown"}, "ok")
        try:
            rc = self.proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise self._fail(f"sidecar did not exit within {self.timeout:g} s of the shutdown response") from None
        self.close()
        if rc != 0:
            raise self._fail(f"sidecar exited with code {rc} after shutdown (expected 0)")
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.close()

    def close(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self._log.close()


# --------------------------------------------------------------------------- helpers


def pct(values_s: list[float]) -> dict[str, float]:
    a = np.asarray(values_s, dtype=np.float64) * 1000.0
    return {
        "n": int(a.size),
        "p50_ms": float(np.percentile(a, 50)),
        "p95_ms": float(np.percentile(a, 95)),
        "p99_ms": float(np.percentile(a, 99)),
        "mean_ms": float(a.mean()),
        "min_ms": float(a.min()),
        "max_ms": float(a.max()),
    }


def lance_files(data_dir: Path) -> dict[str, int]:
    """How many data files (fragments) and versions the messages table has on disk."""
    table = data_dir / "lancedb" / "messages.lance"

    def count(sub: str, suffix: str) -> int:
        d = table / sub
        return sum(1 for p in d.iterdir() if p.name.endswith(suffix)) if d.is_dir() else 0

    return {"data_files": count("data", ".lance"), "versions": count("_versions", ".manifest")}


def log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- phases


def bench_ready(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    walls, startup = [], []
    for i in range(args.ready_runs):
        data_dir = tmp / f"ready-{i}"
        sc = Sidecar(args.python, data_dir, tmp / f"ready-{i}.stderr.log", args.timeout, args.sidecar_arg)
        try:
            wall, ready = sc.wait_ready()
            if ready.get("memories") != 0:
                raise sc._fail(f"fresh data dir but ready says memories={ready.get('memories')}")
            sc.shutdown()
        except BaseException:
            sc.kill()
            raise
        walls.append(wall)
        startup.append(int(ready["startup_ms"]))
        log(f"  ready run {i + 1}/{args.ready_runs}: {wall * 1000:.0f} ms (startup_ms {ready['startup_ms']})",
            args.quiet)
        shutil.rmtree(data_dir, ignore_errors=True)
    return {
        "runs": args.ready_runs,
        "wall_ms": [w * 1000 for w in walls],
        "median_ms": statistics.median(walls) * 1000,
        "min_ms": min(walls) * 1000,
        "startup_ms": startup,
        "startup_ms_median": statistics.median(startup),
    }


def fill(sc: Sidecar, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    now = time.time()
    span = 20 * 86_400  # timestamps spread over the last 20 days
    batch_times: list[float] = []
    words = 0
    done = 0
    t_all = time.perf_counter()
    while done < args.rows:
        n = min(args.batch, args.rows - done)
        msgs = []
        for _ in range(n):
            bot = rng.random() < 0.15
            content = make_message(rng, bot)
            words += len(content.split())
            msgs.append({"user_id": user_id(rng.randrange(args.users)), "content": content, "is_bot": bot,
                         "timestamp": round(now - rng.random() * span, 3)})
        line = _dumps({"type": "store", "messages": msgs}) + b"\n"
        t0 = time.perf_counter()
        sc.send_raw(line)
        resp = sc.read()
        batch_times.append(time.perf_counter() - t0)
        if resp.get("type") != "ok" or not isinstance(resp.get("ids"), list) or len(resp["ids"]) != n:
            raise sc._fail(f"batch store of {n}: unexpected response {json.dumps(resp)[:1000]}")
        done += n
        log(f"  stored {done}/{args.rows} ({n / batch_times[-1]:.0f} msg/s this batch)", args.quiet)
    total = time.perf_counter() - t_all
    return {
        "rows": args.rows,
        "users": args.users,
        "batch": args.batch,
        "batches": len(batch_times),
        "seconds": total,
        "msgs_per_s": args.rows / total,
        "batch_latency": pct(batch_times),
        "avg_words": words / args.rows,
    }


def bench_store(sc: Sidecar, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    times = []
    for _ in range(args.requests):
        bot = rng.random() < 0.15
        req = {"type": "store", "user_id": user_id(rng.randrange(args.users)), "content": make_message(rng, bot),
               "is_bot": bot, "timestamp": round(time.time(), 3)}
        line = _dumps(req) + b"\n"
        t0 = time.perf_counter()
        sc.send_raw(line)
        resp = sc.read()
        times.append(time.perf_counter() - t0)
        if resp.get("type") != "ok" or not isinstance(resp.get("id"), str):
            raise sc._fail(f"single store: unexpected response {json.dumps(resp)[:1000]}")
    return pct(times)


def bench_query(sc: Sidecar, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    times = []
    anomalies: list[str] = []
    empty = 0
    for _ in range(args.requests):
        uid = user_id(rng.randrange(args.users))
        req = {"type": "query", "user_id": uid, "text": make_question(rng), "limit": 5}
        line = _dumps(req) + b"\n"
        t0 = time.perf_counter()
        sc.send_raw(line)
        resp = sc.read()
        times.append(time.perf_counter() - t0)
        if resp.get("type") != "results" or not isinstance(resp.get("messages"), list):
            raise sc._fail(f"query: unexpected response {json.dumps(resp)[:1000]}")
        msgs = resp["messages"]
        if not msgs:
            empty += 1
        if len(msgs) > 5:
            anomalies.append(f"query for {uid} returned {len(msgs)} results with limit 5")
        wrong = [m.get("user_id") for m in msgs if m.get("user_id") != uid]
        if wrong:
            anomalies.append(f"query for {uid} returned memories of other users: {wrong[:3]}")
        sims = [m.get("similarity") for m in msgs]
        if any(not isinstance(s, (int, float)) for s in sims) or sims != sorted(sims, reverse=True):
            anomalies.append(f"query for {uid}: similarities not numeric/descending: {sims}")
    out = pct(times)
    out["empty_results"] = empty
    out["anomalies"] = anomalies[:20]
    out["anomaly_count"] = len(anomalies)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="bench-core-"))
    results: dict[str, Any] = {
        "command": shlex.join([sys.executable, *sys.argv]),
        "sidecar_command": None,
        "params": {k: v for k, v in vars(args).items() if k != "json"},
        "host": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "warnings": [],
    }
    try:
        log(f"phase 1: spawn to ready x{args.ready_runs}", args.quiet)
        results["ready"] = bench_ready(args, tmp)

        data_dir = tmp / "main"
        sc = Sidecar(args.python, data_dir, tmp / "main.stderr.log", args.timeout, args.sidecar_arg)
        results["sidecar_command"] = shlex.join(sc.cmd)
        try:
            wall, ready = sc.wait_ready()
            results["main_ready"] = {"wall_ms": wall * 1000, "startup_ms": ready["startup_ms"],
                                     "version": ready.get("version"), "model": ready.get("model")}

            log(f"phase 2: ingest {args.rows} messages over {args.users} users, batches of {args.batch}", args.quiet)
            results["ingest"] = fill(sc, args, rng)

            stats_before = sc.request({"type": "stats"}, "stats")
            files_before = lance_files(data_dir)
            log(f"phase 3: cleanup (ttl_days 36500); table files before: {files_before}", args.quiet)
            t0 = time.perf_counter()
            cleanup = sc.request({"type": "cleanup", "ttl_days": 36500}, "ok")
            cleanup_s = time.perf_counter() - t0
            files_after = lance_files(data_dir)
            stats_after = sc.request({"type": "stats"}, "stats")
            if stats_after["memories"] != args.rows:
                results["warnings"].append(f"stats says {stats_after['memories']} memories after filling "
                                           f"{args.rows} (cleanup deleted {cleanup.get('deleted')})")
            compacted = files_after["data_files"] < files_before["data_files"] or (
                files_after["versions"] < files_before["versions"])
            if not compacted and files_before["data_files"] > 1:
                results["warnings"].append(
                    f"the cleanup request did not compact the table: {files_before['data_files']} data files / "
                    f"{files_before['versions']} versions before, {files_after['data_files']} / "
                    f"{files_after['versions']} after (response {json.dumps(cleanup)}); latency below was measured "
                    "on an uncompacted table")
            results["cleanup"] = {
                "response": cleanup, "ms": cleanup_s * 1000, "files_before": files_before,
                "files_after": files_after, "compacted": compacted,
                "disk_bytes_before": stats_before["disk_bytes"], "disk_bytes_after": stats_after["disk_bytes"],
            }
            results["disk"] = {
                "memories": stats_after["memories"], "users": stats_after["users"],
                "disk_bytes": stats_after["disk_bytes"],
                "bytes_per_memory": stats_after["disk_bytes"] / max(1, stats_after["memories"]),
            }
            results["versions"] = stats_after.get("versions")
            results["model"] = stats_after.get("model")

            log(f"phase 3: {args.requests} sequential single stores", args.quiet)
            results["store"] = bench_store(sc, args, rng)
            log(f"phase 3: {args.requests} sequential queries (limit 5)", args.quiet)
            results["query"] = bench_query(sc, args, rng)
            if results["query"]["anomaly_count"]:
                results["warnings"].append(f"{results['query']['anomaly_count']} wrong query responses, e.g. "
                                           f"{results['query']['anomalies'][:3]}")
            if results["query"]["empty_results"]:
                results["warnings"].append(f"{results['query']['empty_results']} queries returned no results although "
                                           "every user has memories")

            end_stats = sc.request({"type": "stats"}, "stats")
            results["end"] = {"memories": end_stats["memories"], "disk_bytes": end_stats["disk_bytes"],
                              "files": lance_files(data_dir)}
            expected = args.rows + args.requests
            if end_stats["memories"] != expected:
                results["warnings"].append(f"stats says {end_stats['memories']} memories at the end, expected "
                                           f"{expected}")
            vm = sc.vm_status()
            results["rss"] = {"vm_hwm_kb": vm.get("VmHWM"), "vm_rss_kb": vm.get("VmRSS"),
                              "peak_mib": vm["VmHWM"] / 1024 if "VmHWM" in vm else None}
            results["exit_code"] = sc.shutdown()
        except BaseException:
            sc.kill()
            raise
    finally:
        if args.keep_data:
            print(f"kept data and logs in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    results["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return results


def table(r: dict[str, Any]) -> str:
    rd, ing, cl, st, q, d = r["ready"], r["ingest"], r["cleanup"], r["store"], r["query"], r["disk"]
    n = rd["runs"]
    peak = r["rss"]["peak_mib"]
    rows = [
        (f"spawn to ready (median of {n})", f"{rd['median_ms']:.0f} ms"),
        (f"spawn to ready (min of {n})", f"{rd['min_ms']:.0f} ms"),
        (f"sidecar startup_ms (median of {n})", f"{rd['startup_ms_median']:.0f} ms"),
        (f"ingest ({ing['rows']} msgs, {ing['users']} users, batches of {ing['batch']})",
         f"{ing['msgs_per_s']:.0f} msg/s ({ing['seconds']:.1f} s total)"),
        ("cleanup request (ttl_days 36500)",
         f"{cl['ms']:.0f} ms, deleted {cl['response'].get('deleted')}, data files "
         f"{cl['files_before']['data_files']} -> {cl['files_after']['data_files']}"
         f"{'' if cl['compacted'] else ' (not compacted)'}"),
        (f"store p50/p95/p99 ({st['n']} sequential)", f"{st['p50_ms']:.1f} / {st['p95_ms']:.1f} / {st['p99_ms']:.1f} ms"),
        (f"query p50/p95/p99 ({q['n']} sequential, limit 5)",
         f"{q['p50_ms']:.1f} / {q['p95_ms']:.1f} / {q['p99_ms']:.1f} ms"),
        ("peak RSS (VmHWM, before shutdown)", "n/a (no /proc)" if peak is None else f"{peak:.0f} MiB"),
        ("disk bytes per memory (after cleanup)",
         f"{d['bytes_per_memory']:.0f} B ({d['disk_bytes'] / 2**20:.1f} MiB / {d['memories']} memories)"),
    ]
    w0 = max(len(a) for a, _ in rows)
    w1 = max(len(b) for _, b in rows)
    lines = [f"| {'metric'.ljust(w0)} | {'value'.ljust(w1)} |", f"|{'-' * (w0 + 2)}|{'-' * (w1 + 2)}|"]
    lines += [f"| {a.ljust(w0)} | {b.ljust(w1)} |" for a, b in rows]
    return "\n".join(lines)


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    pass


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__,
        epilog="Output: the exact command line and a markdown table on stdout, progress on stderr, all numbers "
               "as JSON in --json. Example: python scripts/bench_core.py --rows 2000 --requests 50 --ready-runs 2",
        formatter_class=_HelpFormatter,
    )
    p.add_argument("--ready-runs", type=int, default=5, help="how many spawn-to-ready measurements")
    p.add_argument("--rows", type=int, default=10_000, help="memories to ingest before the latency runs")
    p.add_argument("--users", type=int, default=100, help="users the memories are spread over")
    p.add_argument("--batch", type=int, default=500, help="messages per batch store request (at most 1000)")
    p.add_argument("--requests", type=int, default=300, help="sequential single store requests, and as many queries")
    p.add_argument("--seed", type=int, default=1234, help="seed of the message generator")
    p.add_argument("--json", default="bench-results/core.json", help="where to write the JSON results (relative "
                   "to the current directory)")
    p.add_argument("--python", default=sys.executable, help="interpreter that runs `-m sidecar`")
    p.add_argument("--sidecar-arg", action="append", default=None, metavar="ARG",
                   help="extra argument for the sidecar command line (repeatable), e.g. --sidecar-arg=--offline; "
                   "default: none")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for any one response")
    p.add_argument("--keep-data", action="store_true", help="keep the temp data dirs and sidecar stderr logs")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = p.parse_args(argv)
    args.sidecar_arg = args.sidecar_arg or []
    for name in ("ready_runs", "rows", "users", "batch", "requests"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.batch > 1000:
        p.error("--batch must be at most 1000 (the sidecar's default --max-batch)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(f"$ {shlex.join([sys.executable, *sys.argv])}", flush=True)
    try:
        results = run(args)
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    print(f"sidecar: {results['sidecar_command']}  (data dir: temp, removed afterwards)")
    print(f"host: {results['host']['platform']}, {results['host']['cpus']} CPUs, Python {results['host']['python']}; "
          f"sidecar {results['main_ready']['version']}, versions {results.get('versions')}")
    print()
    print(table(results))
    for w in results["warnings"]:
        print(f"\nWARNING: {w}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nJSON written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
