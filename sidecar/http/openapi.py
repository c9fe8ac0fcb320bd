"""The OpenAPI 3.1 description served at /openapi.json, made from the same pydantic models as
protocol/schema.json (wire.json_schema): its `$defs` become the components, the routes refer to them."""

from __future__ import annotations

from typing import Any

from .. import __version__
from ..wire import json_schema
from .statuses import STATUS_BY_CODE

DEFS = "#/$defs/"
COMPONENTS = "#/components/schemas/"
# the seed's routes: a shortcut for one command (the body is that command's request; `type` may be left out)
SHORTCUTS = {"/ingest": "store", "/recall": "graph_recall", "/context": "context"}


def _refs(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: (COMPONENTS + v[len(DEFS) :] if k == "$ref" and v.startswith(DEFS) else _refs(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_refs(v) for v in node]
    if isinstance(node, str) and node.startswith(DEFS):  # a discriminator's mapping
        return COMPONENTS + node[len(DEFS) :]
    return node


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _errors() -> dict[str, Any]:
    error = {"$ref": COMPONENTS + "ErrorResponse"}
    out: dict[str, Any] = {}
    for code, status in sorted(STATUS_BY_CODE.items(), key=lambda kv: kv[1]):
        entry = out.setdefault(str(status), {"description": "", "content": _json(error)})
        entry["description"] = ", ".join(filter(None, [entry["description"], f"`{code}`"]))
    return out


def _model_name(kind: str, defs: dict[str, Any]) -> str:
    return next(
        n
        for n, d in defs.items()
        if n.endswith("Request") and d.get("properties", {}).get("type", {}).get("const") == kind
    )


def document() -> dict[str, Any]:
    wire = json_schema()
    defs = _refs(wire["$defs"])
    request, response = _refs(wire["request"]), _refs(wire["response"])
    errors = _errors()

    def post(summary: str, body: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
        return {
            "post": {
                "summary": summary,
                "requestBody": {"required": True, "content": _json(body)},
                "responses": {"200": {"description": "the command's answer", "content": _json(answer)}, **errors},
            }
        }

    paths: dict[str, Any] = {
        "/v1/command": post(
            "Any request the pipe takes (one JSON object), answered with the same object", request, response
        ),
        "/health": {
            "get": {
                "summary": "The `health` command's answer",
                "responses": {
                    "200": {"description": "health", "content": _json({"$ref": COMPONENTS + "HealthResponse"})},
                    **errors,
                },
            }
        },
        "/openapi.json": {"get": {"summary": "This description", "responses": {"200": {"description": "OpenAPI 3.1"}}}},
    }
    for path, kind in SHORTCUTS.items():
        paths[path] = post(
            f"The `{kind}` command (`type` may be left out)", {"$ref": COMPONENTS + _model_name(kind, defs)}, response
        )
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "memory-sidecar HTTP face",
            "version": __version__,
            "description": wire["description"] + " Over HTTP: POST the request as the body; errors carry the status "
            "of their code and the pipe's error object.",
        },
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": defs,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "the token in --token-file"}
            },
        },
    }
