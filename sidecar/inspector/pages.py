"""The inspector's pages as HTML strings (pure: data in, markup out).

Every piece of stored text (messages, names, facts, predicates, ids) goes through `e()`
(`html.escape`, quotes included) before it reaches the markup, and every link is built by `url()`
and escaped too; nothing stored is ever placed in a script, a style or an event attribute (the pages
have none). The server adds a Content Security Policy that forbids scripts as a second wall.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from html import escape
from typing import Any
from urllib.parse import urlencode

from .drawing import svg
from .reader import MODES

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#0f172a;background:#f8fafc}
header{background:#0f172a;color:#e2e8f0;padding:.6em 1.2em;display:flex;gap:1.2em;align-items:baseline}
header a{color:#e2e8f0}header .ro{margin-left:auto;font-size:12px;color:#94a3b8}
main{padding:1em 1.2em;max-width:1200px}h1{font-size:20px;margin:.2em 0 .6em}h2{font-size:16px;margin:1.4em 0 .4em}
nav.user{display:flex;gap:1em;margin-bottom:1em}nav.user a.on{font-weight:bold;text-decoration:none;color:#0f172a}
table{border-collapse:collapse;width:100%;background:#fff}th,td{border:1px solid #e2e8f0;padding:.3em .5em;
text-align:left;vertical-align:top}th{background:#f1f5f9;font-weight:600}td.num{text-align:right;
font-variant-numeric:tabular-nums}td.content{white-space:pre-wrap;word-break:break-word}.muted{color:#64748b}
.inactive{color:#94a3b8}.closed{color:#94a3b8}form.search{display:flex;gap:.5em;margin:.5em 0 1em}
form.search input[type=text]{flex:1;padding:.35em}.error{background:#fef2f2;border:1px solid #fecaca;padding:.6em}
svg.graph{width:100%;height:auto;background:#fff;border:1px solid #e2e8f0}svg.graph text{font-size:11px;
fill:#0f172a}svg.graph text.edge-label{font-size:10px;fill:#475569;text-anchor:middle}svg.graph .closed
text.edge-label{fill:#94a3b8}details summary{cursor:pointer}ul.events{margin:.3em 0;padding-left:1.2em}
.legend span{margin-right:1em}.dot{display:inline-block;width:.8em;height:.8em;border-radius:50%}
.dot.person{background:#3b82f6}.dot.place{background:#16a34a}.dot.organisation{background:#d97706}
.dot.thing{background:#7c3aed}.dot.event{background:#db2777}td.lists{white-space:nowrap}
svg.timeline{width:100%;height:auto;background:#fff;border:1px solid #e2e8f0}svg.timeline text{font-size:11px;
fill:#0f172a}svg.timeline rect.relation{fill:#3b82f6}svg.timeline rect.fact{fill:#16a34a}svg.timeline
rect.ended{fill-opacity:.35}svg.timeline line.then{stroke:#dc2626;stroke-width:2}svg.timeline line.axis{stroke:#cbd5e1}
svg.timeline text.then{fill:#dc2626}
"""


def e(value: Any) -> str:
    """Text for HTML: None as an empty string, everything escaped (quotes too)."""
    return "" if value is None else escape(str(value), quote=True)


def url(path: str, **params: Any) -> str:
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return path + ("?" + query if query else "")


def when(ts: float | None) -> str:
    return "" if ts is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts))


def page(title: str, body: str, data_dir: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{e(title)} · memory inspector'
        '</title><meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="referrer" content="no-referrer"><link rel="stylesheet" href="/style.css"></head><body>'
        f'<header><strong>memory inspector</strong><a href="/">users</a><a href="/stats">stats &amp; health</a>'
        f'<span class="ro">read-only · {e(data_dir)}</span></header><main>{body}</main></body></html>'
    )


def table(head: Iterable[str] | None, rows: Iterable[str], empty: str = "nothing yet") -> str:
    body = "".join(rows)
    if not body:
        return f'<p class="muted">{e(empty)}</p>'
    thead = "" if head is None else "<thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead>"
    return f"<table>{thead}<tbody>{body}</tbody></table>"


def user_nav(user_id: str, on: str) -> str:
    links = [("messages", "messages & search"), ("facts", "facts"), ("graph", "graph"), ("timeline", "timeline")]
    items = "".join(
        f'<a class="{"on" if name == on else ""}" href="{e(url("/" + name, user=user_id))}">{e(label)}</a>'
        for name, label in links
    )
    return f'<h1>user <code>{e(user_id)}</code></h1><nav class="user">{items}</nav>'


def users_page(users: list[dict[str, Any]]) -> str:
    rows = (
        f'<tr><td><a href="{e(url("/messages", user=u["user_id"]))}">{e(u["user_id"])}</a></td>'
        f'<td>{e(u["username"])}</td><td class="num">{u["messages"]}</td>'
        f'<td class="num"><a href="{e(url("/facts", user=u["user_id"]))}">{u["facts"]}</a></td>'
        f'<td class="num"><a href="{e(url("/graph", user=u["user_id"]))}">{u["entities"]}</a></td>'
        f"<td>{when(u['last'])}</td></tr>"
        for u in users
    )
    return "<h1>users</h1>" + table(
        ["user", "name", "messages", "active facts", "entities", "newest message (UTC)"], rows, "no users yet"
    )


def _message_row(r: dict[str, Any], rank: int | None = None) -> str:
    scores = ""
    if rank is not None:
        ranks = ", ".join(f"{k} #{v}" for k, v in r.get("ranks", {}).items())
        fused = f"{r['score']:.4f}" if "score" in r else ""
        scores = (
            f'<td class="num">{rank}</td><td class="num">{fused}</td>'
            f'<td class="num">{r["similarity"]:.4f}</td><td class="lists">{e(ranks)}</td>'
        )
    speaker = "bot" if r["is_bot"] else (r["username"] or "user")
    return (
        f'<tr>{scores}<td class="content">{e(r["content"])}</td><td>{e(speaker)}</td>'
        f"<td>{e(r['channel_id'])}</td><td>{when(r['timestamp'])}</td><td><code>{e(r['id'])}</code></td></tr>"
    )


def messages_page(
    user_id: str,
    q: str,
    mode: str,
    limit: int,
    results: list[dict[str, Any]] | None,
    error: str | None,
    recent: list[dict[str, Any]],
    total: int,
    offset: int,
) -> str:
    options = "".join(f'<option value="{m}"{" selected" if m == mode else ""}>{m}</option>' for m in MODES)
    form = (
        f'<form class="search" method="get" action="/messages"><input type="hidden" name="user" '
        f'value="{e(user_id)}"><input type="text" name="q" value="{e(q)}" placeholder="search this user\'s '
        f'messages" autofocus><select name="mode">{options}</select><input type="number" name="limit" '
        f'value="{limit}" min="1" max="100"><button type="submit">search</button></form>'
    )
    out = [user_nav(user_id, "messages"), form]
    if error:
        out.append(f'<p class="error">{e(error)}</p>')
    if results is not None:
        out.append(
            f'<h2>results for “{e(q)}”, mode <code id="mode">{e(mode)}</code></h2>'
            '<p class="muted">fused: weighted reciprocal-rank score (hybrid, the order); similarity: cosine of '
            "the query and message vectors; lists: the row's place in each ranked list.</p>"
        )
        out.append(
            table(
                ["#", "fused", "similarity", "lists", "message", "speaker", "channel", "time (UTC)", "id"],
                (_message_row(r, k) for k, r in enumerate(results, 1)),
                "no match",
            )
        )
    out.append(f"<h2>messages, newest first ({offset + 1 if recent else 0}–{offset + len(recent)} of {total})</h2>")
    out.append(
        table(["message", "speaker", "channel", "time (UTC)", "id"], (_message_row(r) for r in recent), "no messages")
    )
    if offset + len(recent) < total:
        out.append(f'<p><a href="{e(url("/messages", user=user_id, offset=offset + len(recent)))}">older</a></p>')
    return "".join(out)


def facts_page(user_id: str, facts: list[dict[str, Any]]) -> str:
    def events(f: dict[str, Any]) -> str:
        items = "".join(
            f"<li>{when(ev['at'])} <strong>{e(ev['action'])}</strong> {e(ev['text'])}"
            + (f' <span class="muted">(was: {e(ev["previous_text"])})</span>' if ev["previous_text"] else "")
            + (f' <span class="muted">by {e(ev["decided_by"])}</span>' if ev["decided_by"] else "")
            + (f' <span class="muted">({e(ev["reason"])})</span>' if ev["reason"] else "")
            + "</li>"
            for ev in f["events"]
        )
        return f'<details><summary>{len(f["events"])} events</summary><ul class="events">{items}</ul></details>'

    rows = (
        f'<tr class="{"" if f["active"] else "inactive"}"><td class="content">{e(f["text"])}</td>'
        f'<td>{e(f["category"])}</td><td>{e(f["source"])}</td><td class="num">{f["confidence"]:.2f}</td>'
        f"<td>{'active' if f['active'] else 'replaced: ' + e(f['superseded_reason'])}</td>"
        f"<td>{when(f['created_at'])}</td><td>{when(f['updated_at'])}</td><td>{events(f)}</td></tr>"
        for f in facts
    )
    return user_nav(user_id, "facts") + table(
        ["fact", "category", "source", "confidence", "state", "created (UTC)", "updated (UTC)", "history"],
        rows,
        "no facts",
    )


def graph_page(user_id: str, g: Any) -> str:
    out = [user_nav(user_id, "graph")]
    if g is None or not g.entities:
        return out[0] + '<p class="muted">no graph for this user yet (the sidecar builds it in the background)</p>'
    drawing, drawn, total = svg(g)
    legend = "".join(
        f'<span><span class="dot {t}"></span> {t}</span>' for t in ("person", "place", "organisation", "thing", "event")
    )
    out.append(
        f'<p class="muted legend">{drawn} of {total} entities drawn (the most mentioned); lines: relations '
        "(dashed grey: no longer valid); squares: traces, tied to their entities. " + legend + "</p>"
    )
    out.append(drawing)
    names = {k: v.name for k, v in g.entities.items()}
    ents = sorted(g.entities.values(), key=lambda x: (-len(x.episodes), x.name))
    out.append(
        "<h2>entities</h2>"
        + table(
            ["name", "type", "aliases", "mentions", "salience", "first seen", "last seen"],
            (
                f'<tr id="entity-{e(x.id)}"><td>{e(x.name)}</td><td>{e(x.type)}</td>'
                f"<td>{e(', '.join(sorted(x.aliases)))}"
                f'</td><td class="num">{len(x.episodes)}</td><td class="num">{g.salience(x):.2f}</td>'
                f"<td>{when(g.seen(x)[0] if x.episodes else None)}</td><td>{when(g.seen(x)[1] if x.episodes else None)}"
                "</td></tr>"
                for x in ents
            ),
        )
    )
    rels = sorted(g.relations.values(), key=lambda r: (r.valid_to is not None, -r.valid_from, r.id))
    out.append(
        "<h2>relations</h2>"
        + table(
            ["subject", "predicate", "object", "valid from", "valid to", "confidence", "episodes"],
            (
                f'<tr class="{"closed" if r.valid_to is not None else ""}">'
                f"<td>{e(names.get(r.subject_id, r.subject_id))}</td><td>{e(r.predicate)}</td>"
                f"<td>{e(names.get(r.object_id, r.object_value) if r.object_id else r.object_value)}</td>"
                f"<td>{when(r.valid_from)}</td>"
                f"<td>{when(r.valid_to) if r.valid_to is not None else 'still valid'}</td>"
                f'<td class="num">{r.confidence:.2f}</td><td class="num">{len(r.episode_ids)}</td></tr>'
                for r in rels
            ),
            "no relations",
        )
    )
    traces = sorted(g.traces.values(), key=lambda t: (-t.activation, t.id))
    out.append(
        "<h2>traces</h2>"
        + table(
            ["summary", "entities", "episodes", "activation", "from", "to"],
            (
                f'<tr id="trace-{e(t.id)}"><td class="content">{e(t.summary)}</td>'
                f"<td>{e(', '.join(names.get(x, x) for x in t.entity_ids))}</td>"
                f'<td class="num">{len(t.episode_ids)}</td>'
                f'<td class="num">{t.activation:.2f}</td><td>{when(t.start)}</td><td>{when(t.end)}</td></tr>'
                for t in traces
            ),
            "no traces yet (consolidation groups related episodes)",
        )
    )
    return "".join(out)


# ---------------------------------------------------------------- the timeline

TIMELINE_ROWS = 200  # bars drawn at most (the most recently begun); the tables below list every one
BAR_HEIGHT, ROW, LABEL, SPAN, TOP = 12, 18, 360, 620, 28


def day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def _bars(g: Any, facts: list[dict[str, Any]]) -> list[tuple[str, str, float, float | None]]:
    """(kind, label, start, end or None while it holds) of the user's relations and facts."""
    out: list[tuple[str, str, float, float | None]] = []
    if g is not None:
        names = {k: v.name for k, v in g.entities.items()}
        for r in g.relations.values():
            obj = names.get(r.object_id, r.object_value) if r.object_id else r.object_value
            out.append(
                ("relation", f"{names.get(r.subject_id, r.subject_id)} {r.predicate} {obj}", r.valid_from, r.valid_to)
            )
    for f in facts:
        end = None if f["active"] else f.get("superseded_at") or f["updated_at"]
        out.append(("fact", f["text"], float(f["created_at"]), None if end is None else float(end)))
    return out


def valid_at(start: float, end: float | None, at: float) -> bool:
    """What the sidecar's `as_of` reads: begun by then, and not ended by then."""
    return start <= at and (end is None or end > at)


def timeline_svg(bars: list[tuple[str, str, float, float | None]], at: float | None, now: float) -> str:
    """Each relation and fact as a bar from when it was stated (made) to when it ended (or now), newest last;
    a red line at `at`. Numbers and escaped text only (no script, no style attribute)."""
    shown = sorted(bars, key=lambda b: (b[2], b[1]))[-TIMELINE_ROWS:]
    lo = min([b[2] for b in shown] + ([at] if at is not None else []))
    hi = max([now] + [b[3] for b in shown if b[3] is not None] + ([at] if at is not None else []))
    scale = SPAN / max(hi - lo, 1.0)

    def x(t: float) -> float:
        return round(LABEL + (t - lo) * scale, 1)

    height = TOP + ROW * len(shown) + 8
    mark = day if hi - lo >= 2 * 86_400 else when  # a span of hours: the ends with their times
    parts = [
        f'<svg class="timeline" viewBox="0 0 {LABEL + SPAN + 20} {height}" xmlns="http://www.w3.org/2000/svg">',
        f'<line class="axis" x1="{LABEL}" y1="{TOP - 6}" x2="{LABEL + SPAN}" y2="{TOP - 6}"/>',
        f'<text x="{LABEL}" y="{TOP - 12}">{e(mark(lo))}</text>',
        f'<text x="{LABEL + SPAN}" y="{TOP - 12}" text-anchor="end">{e(mark(hi))}</text>',
    ]
    for i, (kind, label, start, end) in enumerate(shown):
        y = TOP + ROW * i
        stop = hi if end is None else end
        span = f"{day(start)} to {day(end) if end is not None else 'now'}"
        parts.append(
            f'<text x="4" y="{y + BAR_HEIGHT - 2}">{e(label[:60])}'
            f"<title>{e(kind)}: {e(label)} ({e(span)})</title></text>"
            f'<rect class="{kind}{" ended" if end is not None else ""}" x="{x(start)}" y="{y}" '
            f'width="{max(2.0, round(x(stop) - x(start), 1))}" height="{BAR_HEIGHT}"><title>{e(label)} ({e(span)})'
            "</title></rect>"
        )
    if at is not None:
        parts.append(
            f'<line class="then" x1="{x(at)}" y1="{TOP - 8}" x2="{x(at)}" y2="{height}"/>'
            f'<text class="then" x="{x(at) + 3}" y="{TOP - 12}">{e(day(at))}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def timeline_page(user_id: str, g: Any, facts: list[dict[str, Any]], at: float | None, now: float) -> str:
    """The user's relations and facts as bars over time, a date picker that reloads the page with `as_of`, and
    what was true then (or now): the relations valid and the facts active at that time."""
    out = [user_nav(user_id, "timeline")]
    picked = day(at) if at is not None else ""
    out.append(
        f'<form class="search" method="get" action="/timeline"><input type="hidden" name="user" value="{e(user_id)}">'
        f'<label>as of <input type="date" name="as_of" value="{e(picked)}"></label>'
        '<button type="submit">show</button>'
        f'<a href="{e(url("/timeline", user=user_id))}">now</a></form>'
    )
    bars = _bars(g, facts)
    if not bars:
        return "".join(out) + '<p class="muted">nothing on the timeline yet (no relation, no fact)</p>'
    out.append(
        f'<p class="muted legend">{min(len(bars), TIMELINE_ROWS)} of {len(bars)} bars (the most recently begun); '
        "blue: relations from the graph, green: facts; pale: ended. The red line: the date picked.</p>"
    )
    out.append(timeline_svg(bars, at, now))
    when_ = now if at is None else at
    title = "true now" if at is None else f"true on {day(at)} (end of the day, UTC)"
    rows = (
        f'<tr><td>{e(kind)}</td><td class="content">{e(label)}</td><td>{when(start)}</td>'
        f"<td>{when(end) if end is not None else 'still valid'}</td></tr>"
        for kind, label, start, end in sorted(bars, key=lambda b: (b[0], b[2], b[1]))
        if valid_at(start, end, when_)
    )
    out.append(
        f'<h2 id="then">{e(title)}</h2>' + table(["kind", "what", "from", "until"], rows, "nothing was known then")
    )
    return "".join(out)


def stats_page(s: dict[str, Any]) -> str:
    meta, model = s["meta"], s["meta"].get("model", {})
    health = (
        "ok"
        if s["same_model"]
        else "model mismatch: the data dir was embedded by another model; semantic and hybrid search are off"
    )
    facts = [
        ("health", health),
        ("schema version", meta.get("schema_version")),
        ("model", f"{model.get('name')} (dim {model.get('dim')}, sha256 {str(model.get('digest'))[:16]}…)"),
        ("created", when(meta.get("created_at"))),
        ("disk (LanceDB)", f"{s['disk_bytes']:,} bytes"),
        (
            "write-ahead log",
            f"{s['wal_files']} files, {s['wal_bytes']:,} bytes (acknowledged rows not yet "
            "committed are only here, and not shown)",
        ),
    ]
    if s["graph"] is not None:
        g = s["graph"]
        facts += [
            ("graph episodes", g["episodes"]),
            ("messages not in the graph yet", g["not_built"]),
            ("episodes waiting for consolidation", g["unconsolidated"]),
            ("relations still valid", g["relations_current"]),
        ]
    out = ["<h1>stats &amp; health</h1>", table(None, (f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in facts))]
    out.append(
        "<h2>tables</h2>"
        + table(
            ["table", "rows", "version"],
            (
                f'<tr><td>{e(name)}</td><td class="num">{"" if t is None else t["rows"]}</td>'
                f'<td class="num">{"being created" if t is None else t["version"]}</td></tr>'
                for name, t in s["tables"].items()
            ),
        )
    )
    return "".join(out)


def error_page(message: str) -> str:
    return f'<h1>cannot show this</h1><p class="error">{e(message)}</p>'
