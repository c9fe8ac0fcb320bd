"""The documentation's request examples match the wire contract, its links resolve, and its pages stay short.

Request examples are collected from README.md and docs/*.md by position, never by guessing from the
`type` (`facts`, `context`, `history`, ... are both requests and responses). A JSON object is a
request example when it is:

1. a single-quoted shell word starting with `{` in a fenced ```sh / ```bash / ```shell block (the
   `printf '%s\\n' '{...}' ... | memory-sidecar` sessions; `'"'"'` is the usual embedded quote);
2. the first inline code span starting with `{` in the `request` column of a markdown table whose
   header row has a cell that is exactly `request` (the README's command table);
3. a line `> {...}` (indentation allowed) inside any fenced code block (the request/answer transcripts of the
   docs, where `>` marks a request and `<` its answer).

Anything else (response lines, Python/JavaScript/Rust host code, prose) is not collected. Every
collected text must parse as a JSON object whose `type` names a request in `protocol/schema.json`
(its `request` union, a discriminator on `type`), and the object must validate against that
request's definition: required fields present, every value of the right JSON type, `const`, `enum`,
bounds (including pydantic's `ge`/`gt`/`le`), lengths, nested models. One rule is stricter than the
schema: a field the schema does not name is an error, because the sidecar would silently ignore it
(a typo in an example). `jsonschema` is not installed, so the small subset of JSON Schema the
generated file uses is checked here by hand.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "protocol" / "schema.json").read_text(encoding="utf-8"))
README = ROOT / "README.md"
CI_COMMAND = (
    "python3 -m venv .venv && .venv/bin/pip install uv==0.13.10 && "
    ".venv/bin/uv sync --locked --extra test --inexact && .venv/bin/python -m pytest"
)
RUN_COMMAND = "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/memory-sidecar"
PAGE_LIMIT = 400  # lines: a docs page a newcomer reads in minutes (issue 59)
PAGE_LIMITS = {"performance.md": 250}  # the current figures, not their history
README_LIMIT = 150  # the front door: what it is, the two commands, where to go next
MIN_EXAMPLES = 30  # 37 when written; fewer means the extraction broke, not that examples went away
SHELL_INFO = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^\s*(```+|~~~+)\s*([^`\s]*)")


def doc_files() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# ---------------------------------------------------------------- markdown structure


def split_blocks(path: Path) -> list[tuple[int, str, str | None]]:
    """(line number, line, info string of the fenced block it is in, or None outside fences)."""
    out: list[tuple[int, str, str | None]] = []
    fence: str | None = None
    info: str | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence, info = m.group(1), m.group(2).lower()
            continue
        if fence is not None and line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
            fence = info = None
            continue
        out.append((number, line, info if fence is not None else None))
    return out


def table_cells(line: str) -> list[str]:
    """Cells of a markdown table row; `\\|` is a literal pipe (also inside code spans, as in GFM)."""
    body = line.strip()
    body = body.removeprefix("|")
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [cell.replace("\\|", "|").strip() for cell in re.split(r"(?<!\\)\|", body)]


# ---------------------------------------------------------------- request extraction


def request_examples(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    request_column: int | None = None
    for number, line, info in split_blocks(path):
        if info is not None:
            if line.lstrip().startswith("> {"):
                found.append((number, line.lstrip()[2:].strip()))
            elif info in SHELL_INFO and "'{" in line:
                text = line.rstrip().removesuffix("\\")
                try:
                    words = shlex.split(text, comments=True)
                except ValueError as e:
                    found.append((number, f"<unparsable shell line: {e}>"))
                    continue
                found.extend((number, w) for w in words if w.startswith("{"))
            continue
        if not line.lstrip().startswith("|"):
            request_column = None
            continue
        cells = table_cells(line)
        if request_column is None:
            request_column = cells.index("request") if "request" in cells else -1
            continue
        if request_column < 0 or request_column >= len(cells) or set(cells[0]) <= set("-: "):
            continue
        span = re.search(r"`(\{[^`]*)`", cells[request_column])
        if span:
            found.append((number, span.group(1)))
    return found


def all_examples() -> list[tuple[Path, int, str]]:
    return [(path, number, text) for path in doc_files() for number, text in request_examples(path)]


# ---------------------------------------------------------------- schema check


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        node: Any = SCHEMA
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def errors_of(value: Any, schema: dict[str, Any], where: str) -> list[str]:
    schema = resolve(schema)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            branches = [errors_of(value, branch, where) for branch in schema[key]]
            passing = sum(not b for b in branches)
            if passing == 0:
                return min(branches, key=len)
            if key == "oneOf" and passing > 1:
                return [f"{where}: matches more than one of the oneOf branches"]
    errors: list[str] = []
    kind = json_type(value)
    expected = schema.get("type")
    if expected is not None:
        allowed = expected if isinstance(expected, list) else [expected]
        if not (kind in allowed or (kind == "integer" and "number" in allowed)):
            return [f"{where}: expected {' or '.join(allowed)}, got {kind} {json.dumps(value)[:60]}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: must be {json.dumps(schema['const'])}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {json.dumps(value)} is not one of {schema['enum']}")
    if kind in ("integer", "number"):
        for key, ok in (
            ("minimum", lambda b: value >= b),
            ("ge", lambda b: value >= b),
            ("exclusiveMinimum", lambda b: value > b),
            ("gt", lambda b: value > b),
            ("maximum", lambda b: value <= b),
            ("le", lambda b: value <= b),
            ("exclusiveMaximum", lambda b: value < b),
            ("lt", lambda b: value < b),
        ):
            if key in schema and not ok(schema[key]):
                errors.append(f"{where}: {value} violates {key} {schema[key]}")
    if kind == "string" and not schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value)):
        errors.append(f"{where}: string length {len(value)} out of bounds")
    if kind == "array" and "items" in schema:
        for i, item in enumerate(value):
            errors += errors_of(item, schema["items"], f"{where}[{i}]")
    if kind == "object":
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{where}: missing required field {name!r}")
        if len(value) < schema.get("minProperties", 0):
            errors.append(f"{where}: needs at least {schema['minProperties']} entries")
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            if name in properties:
                errors += errors_of(item, properties[name], f"{where}.{name}")
            elif isinstance(extra, dict):
                errors += errors_of(item, extra, f"{where}.{name}")
            elif properties or extra is False:
                errors.append(f"{where}: unknown field {name!r} (the sidecar would ignore it)")
    return errors


def request_errors(text: str) -> list[str]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        return [f"not JSON ({e})"]
    if not isinstance(obj, dict) or "type" not in obj:
        return ["not a JSON object with a 'type'"]
    mapping = SCHEMA["request"]["discriminator"]["mapping"]
    if obj["type"] not in mapping:
        return [f"type {obj['type']!r} is not a request type (known: {', '.join(sorted(mapping))})"]
    return errors_of(obj, {"$ref": mapping[obj["type"]]}, obj["type"])


# ---------------------------------------------------------------- tests


def test_request_examples_match_the_schema():
    examples = all_examples()
    failures = [
        f"{rel(path)}:{number}: {reason}\n    {text[:160]}"
        for path, number, text in examples
        for reason in request_errors(text)
    ]
    assert not failures, "request examples that do not match protocol/schema.json:\n" + "\n".join(failures)


def test_enough_request_examples_are_found():
    examples = all_examples()
    types = {json.loads(text)["type"] for _, _, text in examples if not request_errors(text)}
    assert len(examples) >= MIN_EXAMPLES, f"only {len(examples)} request examples found; did the extraction break?"
    missing = set(SCHEMA["request"]["discriminator"]["mapping"]) - types
    assert not missing, f"no valid request example of: {sorted(missing)}"


def test_validator_catches_broken_requests():
    assert request_errors('{"type":"query","user_id":"1","text":"hi","limit":5}') == []
    assert request_errors('{"type":"query","user_id":"1"}')  # text missing
    assert request_errors('{"type":"query","user_id":"1","text":"hi","limit":"5"}')  # "5" is not a number
    assert request_errors('{"type":"store","user_id":"1","content":"x","is_bot":1}')  # 1 is not a boolean
    assert request_errors('{"type":"store","user_id":"1","contnet":"x"}')  # unknown field
    assert request_errors('{"type":"recall","users":{}}')  # minProperties
    assert request_errors('{"type":"resolve","fact_id":"a","candidate_id":"b","action":"DROP"}')  # enum
    assert request_errors('{"type":"results","messages":[]}')  # a response type
    assert request_errors('{"type":"store","content":"x",}')  # not JSON


def test_readme_is_a_short_front_door_with_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_LIMIT, f"README.md has {len(text.splitlines())} lines"
    assert "pytest" in text
    assert RUN_COMMAND in text and CI_COMMAND in text
    assert text.index(RUN_COMMAND) < text.index(CI_COMMAND)
    assert CI_COMMAND in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, line, info in split_blocks(path):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if info is None and m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def test_relative_links_resolve():
    failures = []
    for path in doc_files():
        for number, line, info in split_blocks(path):
            if info is not None:
                continue
            line = re.sub(r"`[^`]*`", "", line)  # code spans are not links
            for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                file_part, _, anchor = target.partition("#")
                dest = (path.parent / file_part).resolve() if file_part else path
                if not dest.exists():
                    failures.append(f"{rel(path)}:{number}: {target}: no such file")
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    failures.append(f"{rel(path)}:{number}: {target}: no heading with that anchor")
    assert not failures, "broken links:\n" + "\n".join(failures)


def test_readme_links_every_docs_file():
    text = README.read_text(encoding="utf-8")
    unlinked = [rel(p) for p in sorted((ROOT / "docs").glob("*.md")) if f"]({rel(p)}" not in text]
    assert not unlinked, f"README.md does not link: {unlinked}"


def test_every_docs_page_is_short():
    long = []
    for path in sorted((ROOT / "docs").glob("*.md")):
        limit = PAGE_LIMITS.get(path.name, PAGE_LIMIT)
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            long.append(f"{rel(path)}: {lines} lines, the limit is {limit}")
    assert not long, "pages too long (cut them for users, history goes in CHANGELOG.md):\n" + "\n".join(long)
