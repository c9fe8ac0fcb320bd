"""Shared pieces of the benchmarks (scripts/bench.py, bench_conversation.py, bench_facts.py).

Not an entry point: run `python scripts/bench.py`. Holds the seeded chat-message and question
generators, a sidecar child process spoken to over its pipes (with a per-response timeout),
percentiles, and `fill` (batch `store` of generated messages).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import subprocess
import sys
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


def log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


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
