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
    links = [("messages", "messages & search"), ("facts", "facts"), ("graph", "graph")]
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
