"""The entity graph as inline SVG, laid out on the server (pure: a graph in, markup out).

Why not a JavaScript graph library: the page then needs no script at all, so its Content Security
Policy forbids every script (a stored `<script>` could not run even if escaping failed), nothing is
vendored or updated, and it works offline. Measured against the two usual
candidates (npm, November 2026): cytoscape 3.34.4's `cytoscape.min.js` is 435,649 bytes (136,822
gzipped), vis-network 10.1.5's standalone `vis-network.min.js` 653,713 (155,195); this module is about
120 lines of Python. What it gives up: dragging and zooming (the browser's own zoom works,
and every node links to its row in the tables below).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

import numpy as np

WIDTH, HEIGHT, MARGIN = 1000.0, 640.0, 48.0
LABEL_ROOM = 150.0  # right of the rightmost node: its label
MAX_ENTITIES = 120  # the most mentioned ones are drawn; every one is listed in the tables
MAX_TRACES = 40
TYPE_COLOURS = {
    "person": "#3b82f6",
    "place": "#16a34a",
    "organisation": "#d97706",
    "organization": "#d97706",
    "thing": "#7c3aed",
    "event": "#db2777",
}
OTHER_COLOUR = "#64748b"
TRACE_COLOUR = "#0f766e"


def force_layout(n: int, edges: list[tuple[int, int]], iterations: int = 300) -> np.ndarray:
    """Fruchterman-Reingold positions (n x 2) in the drawing's box. Deterministic: the same graph is
    always drawn the same way (nodes start on a golden-angle spiral, no randomness)."""
    if n == 0:
        return np.empty((0, 2))
    if n == 1:
        return np.array([[WIDTH / 2, HEIGHT / 2]])
    i = np.arange(n)
    radius, angle = np.sqrt((i + 0.5) / n), i * 2.399963
    pos = np.c_[radius * np.cos(angle), radius * np.sin(angle)]
    pairs = np.array(edges, dtype=int).reshape(-1, 2)
    k = np.sqrt(4.0 / n)  # the ideal distance in a 2 x 2 square
    for step in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.maximum(np.linalg.norm(delta, axis=-1), 1e-3)
        disp = (delta * (k * k / dist**2)[..., None]).sum(axis=1)  # every pair repels
        if len(pairs):
            d = pos[pairs[:, 0]] - pos[pairs[:, 1]]
            pull = d * (np.linalg.norm(d, axis=1) / k)[:, None]  # edges attract
            np.subtract.at(disp, pairs[:, 0], pull)
            np.add.at(disp, pairs[:, 1], pull)
        disp -= pos * (0.5 * k)  # gravity: parts without edges stay on the page
        length = np.maximum(np.linalg.norm(disp, axis=1), 1e-9)
        temperature = 0.2 * (1.0 - step / iterations) + 0.002
        pos += disp / length[:, None] * np.minimum(length, temperature)[:, None]
    lo, span = pos.min(axis=0), np.maximum(np.ptp(pos, axis=0), 1e-9)
    box = np.array([WIDTH - 2 * MARGIN - LABEL_ROOM, HEIGHT - 2 * MARGIN])
    return MARGIN + (pos - lo) / span * box


@dataclass
class Node:
    id: str
    label: str
    kind: str  # "entity" or "trace"
    colour: str
    radius: float
    title: str  # the hover text


def _nodes(g: Any) -> list[Node]:
    entities = sorted(g.entities.values(), key=lambda e: (-len(e.episodes), e.name, e.id))[:MAX_ENTITIES]
    nodes = [
        Node(
            e.id,
            e.name,
            "entity",
            TYPE_COLOURS.get(e.type, OTHER_COLOUR),
            7 + 9 * g.salience(e),
            f"{e.name} ({e.type}), {len(e.episodes)} mentions"
            + (f", also: {', '.join(sorted(e.aliases))}" if e.aliases else ""),
        )
        for e in entities
    ]
    shown = {n.id for n in nodes}
    traces = sorted(g.traces.values(), key=lambda t: (-t.activation, t.id))[:MAX_TRACES]
    nodes += [
        Node(
            t.id,
            _short(t.summary, 28),
            "trace",
            TRACE_COLOUR,
            6.0,
            f"trace: {t.summary} ({len(t.episode_ids)} episodes)",
        )
        for t in traces
        if any(e in shown for e in t.entity_ids)
    ]
    return nodes


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def svg(g: Any) -> tuple[str, int, int]:
    """The SVG of one user's graph: entities (coloured by type, sized by salience), relations between
    them (solid while valid, dashed and grey once closed), traces (squares) tied to their entities.
    Returns the markup, the entities drawn and the entities there are."""
    nodes = _nodes(g)
    index = {n.id: k for k, n in enumerate(nodes)}
    relations = [r for r in g.relations.values() if r.subject_id in index and r.object_id in index]
    ties = [
        (index[n.id], index[e]) for n in nodes if n.kind == "trace" for e in g.traces[n.id].entity_ids if e in index
    ]
    pos = force_layout(len(nodes), [(index[r.subject_id], index[r.object_id]) for r in relations] + ties)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" viewBox="0 0 {WIDTH:.0f} {HEIGHT:.0f}" '
        'role="img" aria-label="entity graph">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#475569"/></marker></defs>',
    ]
    for a, b in ties:
        out.append(_line(pos[a], pos[b], 'class="tie" stroke="#99f6e4" stroke-width="1"'))
    for r in sorted(relations, key=lambda r: r.id):
        a, b = pos[index[r.subject_id]], pos[index[r.object_id]]
        d = b - a
        b = b - d / max(float(np.linalg.norm(d)), 1e-9) * (nodes[index[r.object_id]].radius + 2)  # arrow tip
        closed = r.valid_to is not None
        style = 'stroke="#cbd5e1" stroke-dasharray="5 4"' if closed else 'stroke="#475569"'
        out.append(
            f'<g class="relation{" closed" if closed else ""}">'
            + _line(a, b, f'{style} stroke-width="1.5" marker-end="url(#arrow)"')
            + f'<text x="{(a[0] + b[0]) / 2:.1f}" y="{(a[1] + b[1]) / 2 - 3:.1f}" class="edge-label">'
            f"{escape(r.predicate)}</text></g>"
        )
    for n, (x, y) in zip(nodes, pos):
        shape = (
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{n.radius:.1f}" fill="{n.colour}"/>'
            if n.kind == "entity"
            else f'<rect x="{x - 6:.1f}" y="{y - 6:.1f}" width="12" height="12" fill="{n.colour}"/>'
        )
        out.append(
            f'<a href="#{n.kind}-{escape(n.id)}" class="node {n.kind}" data-id="{escape(n.id)}">'
            f"<title>{escape(n.title)}</title>{shape}"
            f'<text x="{x + n.radius + 3:.1f}" y="{y + 4:.1f}">{escape(_short(n.label, 40))}</text></a>'
        )
    out.append("</svg>")
    return "\n".join(out), sum(n.kind == "entity" for n in nodes), len(g.entities)


def _line(a: np.ndarray, b: np.ndarray, attrs: str) -> str:
    return f'<line x1="{a[0]:.1f}" y1="{a[1]:.1f}" x2="{b[0]:.1f}" y2="{b[1]:.1f}" {attrs}/>'
