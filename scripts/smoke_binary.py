#!/usr/bin/env python3
"""Smoke-test a built memory-sidecar binary: replay a golden transcript through it on an empty data dir.

    python scripts/smoke_binary.py dist/onefile/memory-sidecar-x86_64-unknown-linux-gnu
    python scripts/smoke_binary.py dist/onedir/memory-sidecar-<triple>/memory-sidecar-<triple> --timeout 60

Spawns EXECUTABLE with a temporary --data-dir, waits up to --timeout seconds for its `ready` line, then sends
each request of the transcript (default protocol/examples/original.jsonl) and checks each response the way
tests/test_golden.py does (scripts/binarykit/transcripts.py), and that the binary exits 0 after `shutdown`.
Exit status 0 when all of it holds; otherwise 1 with a message that says what went wrong and what to fix,
and the end of the binary's stderr. Works on Linux, macOS and Windows (standard library only).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from binarykit.transcripts import ROOT, LineProcess, NoAnswer, replay, steps

DEFAULT_TRANSCRIPT = ROOT / "protocol" / "examples" / "original.jsonl"
STDERR_TAIL = 3000


class SmokeFailure(Exception):
    """What went wrong, and what to fix."""


def _tail(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[-STDERR_TAIL:].strip()
    except OSError:
        text = ""
    return f"its stderr, last lines:\n{text}" if text else "its stderr was empty"


def check_executable(path: Path) -> None:
    if path.is_dir():
        inside = sorted(p.name for p in path.iterdir() if p.is_file() and p.name.startswith("memory-sidecar"))
        hint = f" ({path / inside[0]})" if inside else ""
        raise SmokeFailure(
            f"{path} is a folder: pass the executable inside it{hint}; a onedir build's folder is "
            f"what you ship, the file in it is what you spawn"
        )
    if not path.is_file():
        raise SmokeFailure(
            f"{path} does not exist: build it first (python scripts/build_binary.py), or pass the "
            f"path that build printed"
        )
    if os.name != "nt" and not os.access(path, os.X_OK):
        raise SmokeFailure(f"{path} is not executable: chmod +x it (an archive or an upload may have lost the bit)")


def smoke(
    executable: Path, transcript: Path = DEFAULT_TRANSCRIPT, timeout: float = 30.0, response_timeout: float = 60.0
) -> str:
    """Replay `transcript` through `executable`; a one-line summary, or SmokeFailure."""
    check_executable(executable)
    with tempfile.TemporaryDirectory(prefix="sidecar-smoke-", ignore_cleanup_errors=True) as tmp:
        err = Path(tmp) / "stderr.log"
        command = [str(executable), "--data-dir", str(Path(tmp) / "data"), "--ttl-days", "0"]
        t0 = time.monotonic()
        with open(err, "wb") as stderr:
            try:
                proc = LineProcess(command, stderr=stderr, cwd=tmp)
            except OSError as exc:
                raise SmokeFailure(f"could not start {executable}: {exc}") from None
            try:
                ready_at: list[float] = []

                def recv(seconds: float):
                    answer = proc.recv(seconds)
                    ready_at.append(time.monotonic() - t0)
                    return answer

                try:
                    replay(transcript, proc.send, recv, timeout=response_timeout, first_timeout=timeout)
                except NoAnswer as exc:
                    stage = "no `ready` line" if not ready_at else f"no answer after {len(ready_at)} responses"
                    raise SmokeFailure(f"{stage}: {exc}. The binary is stuck or crashed; {_tail(err)}") from None
                except (AssertionError, ValueError) as exc:
                    raise SmokeFailure(
                        f"a response differs from the transcript, {exc}. The binary does not answer "
                        f"as this checkout's sidecar does: rebuild it from this checkout; "
                        f"{_tail(err)}"
                    ) from None
                code = proc.close(timeout=response_timeout)
                if code != 0:
                    raise SmokeFailure(
                        f"the binary exited with {code} after the transcript (expected 0 after "
                        f"`shutdown`); {_tail(err)}"
                    )
            finally:
                proc.kill()
    return (
        f"smoke test passed: {transcript.name}, {len(steps(transcript))} responses as expected, `ready` "
        f"{ready_at[0]:.2f} s after the spawn, exit 0 ({executable})"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("executable", type=Path, help="the binary to spawn (for onedir, the file inside the folder)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for `ready` (default 30)")
    p.add_argument(
        "--response-timeout",
        type=float,
        default=60.0,
        help="seconds to wait for each response after `ready` (default 60)",
    )
    p.add_argument(
        "--transcript",
        type=Path,
        default=DEFAULT_TRANSCRIPT,
        help="golden transcript to replay (default protocol/examples/original.jsonl)",
    )
    args = p.parse_args(argv)
    try:
        print(smoke(args.executable.resolve(), args.transcript, args.timeout, args.response_timeout))
    except SmokeFailure as exc:
        print(f"smoke_binary: FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
