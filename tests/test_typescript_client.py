"""The TypeScript client in clients/typescript, driven from pytest so `.ci/run` covers it.

`npm ci` (skipped only when node_modules was installed from this very lockfile, by a stamp), then
the generated protocol types are checked against protocol/schema.json, `tsc --noEmit` checks the
sources, tests and the examples shown in docs/hosts.md, and `npm test` runs the client's tests,
end to end against this checkout's real sidecar (`SIDECAR_PYTHON=sys.executable`). Node and npm
are required: without them these tests fail, they do not skip.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from helpers import OUTPUT_TAIL, npm_run

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "clients" / "typescript"
EXAMPLES = PACKAGE / "examples"
HOSTS = ROOT / "docs" / "hosts.md"


@pytest.mark.slow  # npm ci and the client's toolchain: `pytest -m slow`
def test_generated_types_match_the_schema(npm: str):
    npm_run([npm, "run", "--silent", "check:generated"], timeout=120)


@pytest.mark.slow
def test_typescript_typechecks_including_the_docs_examples(npm: str):
    npm_run([npm, "run", "--silent", "typecheck"], timeout=180)


@pytest.mark.slow
@pytest.mark.skipif(
    sys.platform == "win32",
    reason="`npm test` hands node the glob dist/test/*.test.js, which cmd.exe "
    "does not expand and Node 20's --test does not either (Node 21 does); the client's tests run on "
    "Linux and macOS, and in CI's Node 20 job",
)
def test_npm_test_against_the_real_sidecar(npm: str):
    proc = npm_run([npm, "test"], timeout=300, env={"SIDECAR_PYTHON": sys.executable})
    summary = dict(re.findall(r"^(?:#|\u2139) (tests|pass|fail) (\d+)\s*$", proc.stdout, re.M))  # tap or spec reporter
    assert int(summary.get("tests", 0)) >= 40 and summary.get("fail") == "0", (
        f"unexpected summary {summary}:\n{proc.stdout[-OUTPUT_TAIL:]}"
    )


# ---------------------------------------------------------------- docs/hosts.md shows the checked examples

EXAMPLE_HEADER = re.compile(r"^// (clients/typescript/examples/[\w.-]+\.ts)$")


def ts_blocks(text: str) -> list[str]:
    """The bodies of the ```ts fenced blocks of a markdown text."""
    return [m.group(1) for m in re.finditer(r"^```ts\n(.*?)^```$", text, re.M | re.S)]


def test_hosts_md_shows_the_examples_that_tsc_checks():
    blocks = {}
    for body in ts_blocks(HOSTS.read_text(encoding="utf-8")):
        first = body.split("\n", 1)[0]
        m = EXAMPLE_HEADER.match(first)
        assert m, (
            f"a ```ts block in docs/hosts.md must start with `// clients/typescript/examples/<name>.ts` (the "
            f"file it shows, which tsc checks); this one starts with {first!r}"
        )
        blocks[m.group(1)] = body
    files = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.ts"))}
    assert files, f"no examples in {EXAMPLES}"
    assert sorted(blocks) == sorted(files), f"docs/hosts.md shows {sorted(blocks)}, the examples are {sorted(files)}"
    for name, body in blocks.items():
        assert body == files[name], f"the block in docs/hosts.md differs from {name}: copy the file into the block"


def test_ts_blocks_extraction():
    text = "x\n```ts\n// a\nb\n```\n```js\nno\n```\n```ts\nc\n```\n"
    assert ts_blocks(text) == ["// a\nb\n", "c\n"]
