"""Replays protocol/examples/*.jsonl against the real process.

The transcript format and its matcher live in scripts/binarykit/transcripts.py, shared with
scripts/smoke_binary.py (which replays one through a built binary on each release runner).
"""

from __future__ import annotations

import pytest
from helpers import EXAMPLES, match, replay


def test_there_are_transcripts():
    assert len(EXAMPLES) >= 3


def test_matcher_names_the_first_difference():
    captured: dict[str, str] = {}
    match(
        {"type": "ok", "id": "<uuid as a>", "n": "<int>"},
        {"type": "ok", "id": "6f1c2a9e-0000-4000-8000-000000000000", "n": 3, "more": 1},
        captured,
    )
    assert captured == {"a": "6f1c2a9e-0000-4000-8000-000000000000"}
    for expected, actual, says in [
        ({"n": "<int>"}, {"n": True}, "$.n: True is not an int"),
        ({"id": "<uuid>"}, {"id": "nope"}, "$.id: 'nope' is not a uuid"),
        ({"ids": ["{{a}}"]}, {"ids": ["x"]}, "$.ids[0]: expected"),
        ({"type": "ok"}, {}, "missing key 'type'"),
    ]:
        with pytest.raises(AssertionError, match=says.replace("[", r"\[").replace("$", r"\$")):
            match(expected, actual, captured)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_transcript(spawn, path, tmp_path):
    # relative paths (export, import) are relative to the sidecar's working directory: a fresh one
    (tmp_path / "cwd").mkdir()
    replay(spawn("--ttl-days", "0", wait_ready=False, cwd=tmp_path / "cwd"), path)
