"""Consolidation, pure: group related episodes into traces.

Edges between an episode and the W episodes before it (so the cost is O(n * W), never all pairs):
- reply: it answers that message (`reply_to`), confidence 1.0;
- duplicate: cosine >= 0.95, confidence 1.0;
- next: the previous episode of the same channel within the session gap, confidence
  0.6 + 0.4 * max(0, cosine) (consecutive turns on one topic reach 0.7 at cosine 0.25);
- similar: cosine >= 0.55, confidence cosine + 0.15;
- entity: a shared entity that is not a hub (in at most HUB_SHARE of the user's episodes) within
  the session, confidence 0.75.
Groups are the connected components over edges of confidence >= MIN_CONFIDENCE (0.7), built
strongest edge first, never larger than MAX_GROUP episodes, and never joining episodes more than
four session gaps apart unless one replies to (or duplicates) the other. An
episode joined to one already in a trace joins that trace (which is then consolidated again).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .model import UserGraph
from .records import Episode, Trace

WINDOW = 20  # episodes before each one that it may link to
MIN_CONFIDENCE = 0.7  # edges at least this confident join episodes into one trace
MAX_GROUP = 10  # episodes in one trace at most
SESSION_GAP = 30 * 60.0  # seconds between two episodes that start a new session
DUPLICATE = 0.95
SIMILAR = 0.55
HUB_SHARE = 0.2
TRACE_LINK = 0.85  # traces whose vectors are closer than this are linked (weight = cosine)
SUMMARY_WORDS = 32
BATCH = 500  # episodes per consolidation pass of one user (GraphService.consolidate_user)


@dataclass
class Group:
    episode_ids: list[str]
    trace_id: str | None = None  # an existing trace the group joins
    edges: list[tuple[str, str, float]] = field(default_factory=list)


class _Sets:
    def __init__(self, ids: Sequence[str]):
        self.parent = {i: i for i in ids}
        self.size = {i: 1 for i in ids}

    def find(self, x: str) -> str:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str, max_size: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb or self.size[ra] + self.size[rb] > max_size:
            return False
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        return True


def edges(episodes: Sequence[Episode], vectors: np.ndarray, hubs: set[str]) -> list[tuple[int, int, float]]:
    """(i, j, confidence) for j < i within the window; `episodes` in time order, `vectors` row-aligned."""
    out = []
    by_message = {e.message_id: i for i, e in enumerate(episodes) if e.message_id}
    for i, ep in enumerate(episodes):
        lo = max(0, i - WINDOW)
        if lo == i:
            continue
        sims = vectors[lo:i] @ vectors[i]
        last_same_channel = next((j for j in range(i - 1, lo - 1, -1) if episodes[j].channel_id == ep.channel_id), None)
        mine = set(ep.entity_ids) - hubs
        for j in range(lo, i):
            other, sim = episodes[j], float(sims[j - lo])
            session = ep.ts - other.ts <= SESSION_GAP
            conf = 0.0
            if (ep.reply_to is not None and by_message.get(ep.reply_to) == j) or sim >= DUPLICATE:
                conf = 1.0
            if j == last_same_channel and session:
                conf = max(conf, 0.6 + 0.4 * max(0.0, sim))
            if sim >= SIMILAR:
                conf = max(conf, sim + 0.15)
            if session and mine and mine & set(other.entity_ids):
                conf = max(conf, 0.75)
            if conf > 0:
                out.append((i, j, min(1.0, conf)))
    return out


def group(
    episodes: Sequence[Episode], vectors: np.ndarray, hubs: set[str], new: set[str], trace_sizes: dict[str, int]
) -> list[Group]:
    """Groups of the `new` episodes (ids), each possibly joining the trace of an older episode in
    `episodes` (the context before them). Low-quality episodes join nothing."""
    ids = [e.id for e in episodes]
    sets = _Sets(ids)
    for e in episodes:  # episodes already in a trace count as that trace's size
        if e.trace_id:
            sets.size[e.id] = trace_sizes.get(e.trace_id, 1)
    found = edges(episodes, vectors, hubs)
    strong = sorted((c, i, j) for i, j, c in found if c >= MIN_CONFIDENCE)
    for conf, i, j in reversed(strong):
        a, b = episodes[i], episodes[j]
        far = abs(a.ts - b.ts) > SESSION_GAP * 4 and conf < 1.0  # a reply or a duplicate joins at any distance
        if a.low or b.low or (a.id not in new and b.id not in new) or far:
            continue
        if a.trace_id and b.trace_id:
            continue  # two old episodes: their traces stay as they are
        sets.union(a.id, b.id, MAX_GROUP)
    members: dict[str, list[str]] = {}
    for e in episodes:
        if e.id in new and not e.low:
            members.setdefault(sets.find(e.id), []).append(e.id)
    old_trace = {sets.find(e.id): e.trace_id for e in episodes if e.trace_id and e.id not in new}
    by_index = {e.id: k for k, e in enumerate(episodes)}
    groups = []
    for root, member_ids in members.items():
        inside = {by_index[m] for m in member_ids}
        group_edges = [(ids[i], ids[j], c) for i, j, c in found if i in inside or j in inside]
        groups.append(Group(member_ids, old_trace.get(root), group_edges))
    return groups


def central(vectors: np.ndarray) -> int:
    """The row closest to all the others (the medoid): the summary's sentence."""
    if len(vectors) <= 2:
        return 0
    return int(np.argmax((vectors @ vectors.T).sum(axis=1)))


def mean_vector(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float32).mean(axis=0)
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v


def summarise(texts: Sequence[str], vectors: np.ndarray, cut) -> str:
    """Extractive: the most central message, cut to SUMMARY_WORDS words by the pyramid's own cut."""
    text = re.sub(r"\s+", " ", texts[central(vectors)]).strip()
    return cut(text, SUMMARY_WORDS)


def links(ids: Sequence[str], vectors: np.ndarray, changed: set[str]) -> dict[tuple[str, str], float]:
    """Trace pairs (a < b) with cosine > TRACE_LINK where at least one of them changed."""
    out: dict[tuple[str, str], float] = {}
    rows = [k for k, t in enumerate(ids) if t in changed]
    if not rows or len(ids) < 2:
        return out
    sims = vectors[rows] @ vectors.T
    for r, k in enumerate(rows):
        for m in np.nonzero(sims[r] > TRACE_LINK)[0]:
            if m != k:
                a, b = sorted((ids[k], ids[int(m)]))
                out[(a, b)] = float(sims[r, m])
    return out


def refresh(g: UserGraph, traces: Sequence[Trace], rows: list[dict], vectors: np.ndarray, cut, now: float) -> None:
    """Each trace's summary, vector, entities and time span from its current episodes: `rows` (with their
    `vectors`) are the messages of all of them; a trace none of whose messages is there stays as it was."""
    at = {r["id"]: k for k, r in enumerate(rows)}
    for trace in traces:
        idx = [at[e] for e in trace.episode_ids if e in at]
        if not idx:
            continue
        trace.summary = summarise([rows[k]["content"] for k in idx], vectors[idx], cut)
        trace.vector = mean_vector(vectors[idx]).astype(np.float16)
        eps = [g.episodes[rows[k]["id"]] for k in idx if rows[k]["id"] in g.episodes]
        trace.entity_ids = list(dict.fromkeys(e for ep in eps for e in ep.entity_ids))
        trace.start, trace.end = min(ep.ts for ep in eps), max(ep.ts for ep in eps)
        trace.updated_at = now
