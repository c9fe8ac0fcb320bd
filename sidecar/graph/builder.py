"""Building the graph from stored messages, in the background: each episode's quality, its
mentions (the fast tier, with the user's own known entities as gazetteer), their resolution to
entities, and the relations the user states about themself. One thread; the request path only
queues (rows, vectors) and returns.

Nothing acknowledged is lost by a crash: a message whose episode row was never written is built
again at the next start (`catch_up`), and every write is keyed so that doing it twice is harmless.
The queue is bounded: past QUEUE_MAX rows, stored messages are not queued but read back from the
table by a catch-up once the queue has drained (`on_overflow`), so a burst of stores never holds
more than QUEUE_MAX rows and their vectors in memory.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import regex

from ..text import is_backchannel
from . import self_names
from .lang import LATIN, language, lexicon
from .mentions import Mention, find_mentions
from .model import Similar, UserGraph
from .quality import novelty
from .records import Entity, Episode, Relation, fold
from .relations import AS_FACT, PREDICATES, find_relations

log = logging.getLogger("sidecar.graph")

RECENT = 10  # a user's recent episodes that novelty compares with
QUEUE_MAX = 4_096  # rows waiting (about 2 KB each with the vector); past this, new ones wait for a catch-up
BATCH_DELAY = 1.0  # seconds a stored message may wait to be built with the ones after it
BATCH_ROWS = 512
# Characters of content a batch takes at most (past its first row): a batch of long messages is read in about a
# second at most, and the users' queued rows are taken in turn, so another user's message waits for one batch, not
# for every long message queued before it (a 32,000-character message once held every user's graph 28.7 s).
BATCH_CHARS = 32_000
# A message longer than this is read in slices of at most this many characters (cut after a sentence or at a space
# where one is near), each slice a batch of its own: another user's message waits for one slice, not for the
# whole of a long message (32,000 characters of run-on chat held another user's statement 1.5-5.2 s on a loaded
# machine; `bench.py graph-lag`, docs/reliability.md "Text that costs time").
SLICE_CHARS = 8_000
STOP_SECONDS = 2.0  # at shutdown, the builder finishes what is queued if it can in this long; the rest waits for
# the next start, which builds every stored message with no episode (`catch_up`)
USER_GROUP = 16  # users of a batch whose rows are read together (their graphs made one at a time)
# The builder steps aside while requests are in hand (`busy`): before each group it waits, YIELD_STEP at a
# time, up to YIELD_MAX, so a bulk import runs at nearly its graph-off speed and the graph follows in the
# pauses; under requests that never pause it still builds a group every YIELD_MAX. Measured with
# `bench.py graph-build --ingest 30000` (graph on / off): 2 s, 278 / 356 msg/s = 0.78x; 6 s, 339 / 363 = 0.93x,
# the graph caught up 33-35 s after the ingest either way (docs/graph.md, "Crash safety and speed").
YIELD_STEP, YIELD_MAX = 0.01, 6.0
CATCH_UP_AHEAD = 1024  # the catch-up queues more stored messages only while fewer wait (docs/graph.md)


# The rule tier reads at most this much of a memory: the content limit before long memories. Its pure
# Python over a 1 MB text held the GIL for seconds (other users' requests waited up to 1.9 s, measured).
EPISODE_CHARS = 32_000
RULE_CONFIDENCE = 0.6  # a relation read by the rule tier (the LLM tier's: 0.8; a host's facts stand apart)


def slices(text: str) -> list[tuple[int, int]]:
    """(start, end) of the slices a message is read in: the whole of it up to SLICE_CHARS; past that, slices of at
    most SLICE_CHARS, each ending after a sentence's end or a space in its last 400 characters
    when there is one (a clause cut in two loses what it said; run-on text has no better place to cut)."""
    out, start = [], 0
    while len(text) - start > SLICE_CHARS:
        end = start + SLICE_CHARS
        near = text[end - 400 : end]
        cut = max(near.rfind(". "), near.rfind("! "), near.rfind("? "), near.rfind("\n"))
        if cut < 0:
            cut = near.rfind(" ")
        if cut >= 0:
            end = end - 400 + cut + 1
        out.append((start, end))
        start = end
    out.append((start, len(text)))
    return out


class _Partial:
    """A long message whose slices are being read: its episode (written with the last slice), what the slices read
    so far found, and the similarity to the user's recent episodes (its novelty, once the last is read)."""

    def __init__(self, episode: Episode, best: float | None):
        self.episode, self.best, self.new, self.named = episode, best, 0, 0


class _Stopped(Exception):
    """The sidecar is stopping and STOP_SECONDS have passed: the batch is left unwritten (built at the next start)."""


class Changes:
    """What one batch changed in one user's graph: the builder saves exactly this."""

    def __init__(self) -> None:
        self.episodes: list[Episode] = []
        self.entities: dict[str, Entity] = {}
        self.relations: dict[str, Relation] = {}


def self_entity(g: UserGraph, username: str | None, introduced: str | None = None) -> Entity:
    """The entity of the user themself (the subject of first-person relations), named by the display name;
    it answers to "me", the display name's readable part ("mara_v" -> "Mara") and the name the user introduced
    themself with (self_names.py), unless the graph knows that name as someone else."""
    entity, _new = g.resolve(username or "me", "person")
    keys = entity.keys()
    added = bool(username) and "me" not in keys
    if added:
        entity.aliases.add("me")
    for name in (self_names.readable(username), introduced):
        if name and fold(name) not in keys and g.by_key.get(fold(name), entity.id) == entity.id:
            entity.aliases.add(name)
            added = True
    if added:
        g.index(entity)
    return entity


def build_episode(
    g: UserGraph,
    row: dict[str, Any],
    vector: np.ndarray,
    recent: np.ndarray | None,
    changes: Changes,
    extra: Callable[[str], list[Mention]] | None = None,
    same_fact: Callable[[str, str], str | None] | None = None,
    similar: Similar | None = None,
) -> Episode:
    """Add one message to the user's graph (pure in-memory work; `changes` collects what to save)."""
    content = row["content"]
    low = is_backchannel(content)
    best = float(np.max(recent @ vector)) if recent is not None and len(recent) else None
    episode = new_episode(g, row, low)
    new, named = (0, 0) if low else read_into(g, row, episode, content, changes, extra, same_fact, similar)
    episode.quality = 0.0 if low else novelty(new, named, best)
    changes.episodes.append(episode)
    return episode


def new_episode(g: UserGraph, row: dict[str, Any], low: bool) -> Episode:
    """The message's episode, in the user's graph, before anything of its text is read."""
    episode = Episode(
        row["id"], float(row["timestamp"]), row.get("channel_id"), row.get("message_id"), row.get("reply_to"), 0.0, low
    )
    g.note_username(row.get("username"))
    g.episodes[episode.id] = episode
    if episode.message_id:
        g.by_message_id[episode.message_id] = episode.id
    return episode


def read_into(
    g: UserGraph,
    row: dict[str, Any],
    episode: Episode,
    text: str,
    changes: Changes,
    extra: Callable[[str], list[Mention]] | None = None,
    same_fact: Callable[[str, str], str | None] | None = None,
    similar: Similar | None = None,
) -> tuple[int, int]:
    """Read `text` (the message's content, or a slice of a long one) into its episode: its mentions as entities,
    then (unless a bot said it) the relations it states. Returns the entities it created and its named mentions."""
    if not row.get("is_bot") and (name := self_names.introduced(text)) is not None:
        me = self_entity(g, row.get("username"), name)  # before the mentions: "Hi, I'm Mara" mentions the user
        changes.entities[me.id] = me
    mentions = _mentions(g, text, bool(row.get("is_bot")))
    if extra is not None:
        taken = [(m.start, m.end) for m in mentions]
        mentions += [m for m in extra(text) if all(m.end <= s or m.start >= e for s, e in taken)]
    new = 0
    for m in mentions:
        if m.type == "date":
            continue  # times are the episode's own; a date is not an entity of the graph
        entity, created = g.resolve(m.text, m.type, similar)
        new += created
        if entity.id not in episode.entity_ids:
            episode.entity_ids.append(entity.id)
            entity.episodes.append(episode.id)
            changes.entities[entity.id] = entity
    if not row.get("is_bot"):
        _relations(g, row, episode, text, changes, same_fact, similar)
    return new, sum(m.type != "date" for m in mentions)


# A line whose detected language is not the one nearly all of a user's memories are in is read in theirs: the
# detector takes a short line for another language now and then ("Das Wochenende war anstrengend. (602)": en), and
# one such line read by the English tier made "Das Wochenende" a person, whom the gazetteer then found in every
# later line. Unless the line speaks English in the first person (code-switching: read as detected).
_USUAL_SHARE = 0.8
_USUAL_AFTER = 20  # memories counted before the user's usual language is trusted


def _mentions(g: UserGraph, text: str, is_bot: bool) -> list[Mention]:
    gazetteer, max_words = g.gazetteer()
    code = language(text)
    usual = _usual_language(g)
    if (
        usual is not None
        and code != usual
        and lexicon(usual) is not None
        and not _speaks_english(text)
        and usual in LATIN
        and not _mostly_unlatin(text)  # a line in another script is read in its own language
    ):
        code = usual
    if code is not None and not is_bot:  # the language of the user's memories ("what is true now" is said in it)
        g.languages[code] = g.languages.get(code, 0) + 1
    return typed_mentions(text, gazetteer, max_words, code)


def _usual_language(g: UserGraph) -> str | None:
    total = sum(g.languages.values())
    if total < _USUAL_AFTER:
        return None
    code, n = max(g.languages.items(), key=lambda kv: kv[1])
    return code if n >= _USUAL_SHARE * total else None


def _speaks_english(text: str) -> bool:
    english = lexicon("en")
    return english is not None and english.first_person is not None and bool(english.first_person.search(text))


_LETTER = regex.compile(r"\p{L}")
_LATIN = regex.compile(r"\p{Latin}")


def _mostly_unlatin(text: str) -> bool:
    return len(_LATIN.findall(text)) * 2 < len(_LETTER.findall(text))


def typed_mentions(
    text: str, gazetteer: Mapping[str, str] | None = None, max_words: int | None = None, code: str | None = None
) -> list[Mention]:
    """The fast tier's mentions. In a language read by cue (graph/lang/), the people its lexicon introduces and
    the places and employers of its relations come first, typed by the relation; a capitalised span nothing
    types is "other", not a person (in German, where every noun is capitalised, no evidence of a name at all).
    A language without a lexicon, in a script other than Latin: capitalised spans are "other" (a gazetteer name keeps
    its type). English, a
    line whose language is not known, and a line the detector took for another language that reads nothing there
    and speaks English in the first person ("I study computer science at MIT"): the fast tier alone, as it
    always was. `code`: the text's language when the caller decided it."""
    code = code or language(text)
    lex = lexicon(code)
    speaks_english = _speaks_english(text)
    if lex is None and code not in (None, "en") and not speaks_english and _mostly_unlatin(text):
        # a language without a lexicon in another script ("أسكن في Dubai", "Живу в Berlin"): its capitalised Latin
        # words are names of something, but nothing says of what; typed "other", never guessed to be people. (A
        # Latin-script line goes on to the English tier: the detector takes short English lines for other languages.)
        return find_mentions(text, gazetteer, max_words, [], "other")
    if lex is None or lex.cues is None:
        return find_mentions(text, gazetteer, max_words)
    found = find_relations(text, gazetteer, lex.code)
    if not found and speaks_english:
        return find_mentions(text, gazetteer, max_words)
    typed = []
    for r in found:
        if r.object_type in ("person", "place", "organisation") or r.predicate == "has_pet":
            typed.append(Mention(r.object, r.start, r.end, r.object_type))
        at = text.find(r.subject) if r.subject else -1
        if r.subject and at >= 0:
            typed.append(Mention(r.subject, at, at + len(r.subject), "person"))
    caps = None if lex.capitalised_nouns else "other"
    return find_mentions(text, gazetteer, max_words, sorted(typed, key=lambda m: m.start), caps)


def _relations(
    g: UserGraph,
    row: dict[str, Any],
    episode: Episode,
    text: str,
    changes: Changes,
    same_fact: Callable[[str, str], str | None] | None,
    similar: Similar | None,
) -> None:
    found = find_relations(text, g.gazetteer()[0])
    if not found:
        return
    me = None
    for r in found:
        if r.subject is None:
            if me is None:
                me = self_entity(g, row.get("username"))
                changes.entities[me.id] = me
            subject = me
        else:  # a person the speaker named ("my sister Alice", a known "Ken")
            subject = _entity_of(g, r.subject, "person", episode, changes, similar)
        obj = None
        if r.object_type in ("person", "place", "organisation", "other") and _names_entity(g, r.object):
            obj = _entity_of(g, r.object, r.object_type, episode, changes, similar)
            if obj.id == subject.id:
                continue  # "my sister Alice" said by Alice's own account: no relation of one with itself
        if r.ended:
            rel, closed = g.end_relation(subject, r.predicate, obj, r.object, episode, RULE_CONFIDENCE)
        else:
            rel, closed = g.add_relation(subject, r.predicate, r.single_valued, obj, r.object, episode, RULE_CONFIDENCE)
        if rel.fact_id is None and same_fact is not None and subject is me and not r.ended:
            rel.fact_id = same_fact(g.user_id, AS_FACT[r.predicate].format(rel.object_value))
        changes.relations[rel.id] = rel
        for c in closed:
            changes.relations[c.id] = c


def _names_entity(g: UserGraph, name: str) -> bool:
    """Whether a relation's object names an entity: capitalised (or in a script without case), or known."""
    first = name[:1]
    return first.isupper() or (first.isalpha() and not first.islower()) or g.find(name) is not None


def _a_person(g: UserGraph, entity: Entity) -> bool:
    """Relations know this entity as a person: the subject of one, or the object of a family or friend one."""
    return any(
        r.subject_id == entity.id or (r.object_id == entity.id and PREDICATES[r.predicate][1] == "person")
        for r in g.relations.values()
        if r.predicate in PREDICATES
    )


def _entity_of(
    g: UserGraph, name: str, type_: str, episode: Episode, changes: Changes, similar: Similar | None
) -> Entity:
    """The entity a relation names, mentioned by this episode. The relation says what it is better than
    capitals did ("at Siemens" looked like a place; "I work at Siemens" says it is an organisation)."""
    entity, _new = g.resolve(name, type_, similar)
    if entity.type != type_ and not (entity.type == "person" and _a_person(g, entity)):
        entity.type = type_  # (a person other relations know as one stays a person: a friend Max, a dog Max)
    if episode.id not in entity.episodes:
        entity.episodes.append(episode.id)
        episode.entity_ids.append(entity.id)
    changes.entities[entity.id] = entity
    return entity


class Builder:
    """The background thread. `graphs(user_id)` gives the user's graph under `lock`; `save` turns what was
    built in one user's graph into table rows and `commit` writes a batch's; `after_batch(n)` is told how
    many episodes were built (the consolidation schedule)."""

    def __init__(
        self,
        lock: threading.RLock,
        graphs: Callable[[str], UserGraph],
        save: Callable[[tuple[UserGraph, Changes], Any], Any],
        commit: Callable[[Any], None],
        after_batch: Callable[[int], None],
        extra: Callable[[str], list[Mention]] | None = None,
        same_fact: Callable[[str, str], str | None] | None = None,
        similar: Similar | None = None,
    ):
        self.lock = lock
        self.similar = similar  # resolution by meaning (names.NameMatcher), or None
        self.same_fact = same_fact  # the facts domain: the id of the user's fact that states a text
        self.on_built: Callable[[UserGraph, Episode, dict[str, Any]], None] | None = None
        self.preload: Callable[[list[str]], None] | None = None  # read a group's users' rows together
        self.group_size: Callable[[], int] = lambda: USER_GROUP  # users read together (the service: by their bytes)
        self.release: Callable[[str], None] | None = None  # a user of the group built: its graph may leave
        self.graphs = graphs
        self.save = save  # ((graph, changes), rows so far) -> rows: what was built, as table rows
        self.commit = commit  # rows -> None: the batch written, one commit per table
        self.after_batch = after_batch
        self.extra = extra
        self.queue: queue.Queue[tuple[list[dict[str, Any]], np.ndarray, int] | None] = queue.Queue()
        # the builder thread's own: queued rows taken off the queue, each user's in order, users taken in turn
        # (row, vector, number, slice: (start, end) of a long message's content, or None for the whole message)
        self._backlog: OrderedDict[str, deque[tuple[dict[str, Any], np.ndarray, int, tuple[int, int] | None]]] = (
            OrderedDict()
        )
        self._partial: dict[str, _Partial] = {}  # long messages read in part, by row id (the builder thread's)
        self.pending = 0  # rows queued or being built
        self.submitted = 0  # rows ever queued (a row's number: how many were queued before it)
        self.processed = 0  # rows ever taken off the queue and built (or failed)
        self._outstanding: dict[int, float] = {}  # numbers of the rows not built yet -> when queued (monotonic)
        self._by_user: Counter[str] = Counter()  # rows not built yet, per user
        self._hurry_until = 0  # the row number below which every row is built when the `wait_built` callers are served
        self._stop_at: float | None = None  # set by `stop`: past it, the batch in hand is left
        self._idle_waiters = 0
        self.built = 0
        self.failed = 0
        # episodes built into the graphs but not yet written (the batch commits once, after its last group; the
        # lock is let go between groups), or whose batch failed: consolidation leaves them alone. It upserted
        # them, then the batch appended them again: 901 duplicate episode rows after a 100k catch-up (docs/graph.md)
        self.unwritten: set[str] = set()
        self._count = threading.Lock()
        self._thread: threading.Thread | None = None
        self._idle = threading.Condition(self._count)
        self.hurry = threading.Event()  # someone waits for the graph: build what is queued now
        self.busy: Callable[[], bool] | None = None  # are requests in hand? (the host's traffic)
        self.overflowed = False  # rows were left out of the queue since the last catch-up started
        self._in_hand: Counter[str] = Counter()  # ids of the rows queued or being built (how many times each)
        self._catching = threading.Lock()  # one catch-up at a time
        self.on_overflow: Callable[[], Any] | None = None  # the catch-up, run in a thread of its own after an overflow

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="graph-builder", daemon=True)
        self._thread.start()

    def submit(self, rows: list[dict[str, Any]], vectors: np.ndarray) -> None:
        # what the graph reads of a long memory: cut once, here, so no step after (and no queued row) holds more
        rows = [
            r if len(r["content"]) <= EPISODE_CHARS else {**r, "content": r["content"][:EPISODE_CHARS]} for r in rows
        ]
        with self._count:
            if self.pending > QUEUE_MAX:
                if not self.overflowed:
                    log.info("graph builder queue full: stored messages are built from the table once it drains")
                self.overflowed = True
                return
            first = self.submitted
            self.pending += len(rows)
            self.submitted += len(rows)
            now = time.monotonic()
            self._outstanding.update((first + k, now) for k in range(len(rows)))
            self._by_user.update(r.get("user_id", "") for r in rows)
            self._in_hand.update(r["id"] for r in rows)
        self.queue.put((rows, vectors, first))

    def _oldest(self) -> int:
        """The number of the oldest row not built yet (`submitted` when every row is): under `_count`."""
        return next(iter(self._outstanding), self.submitted)

    def lag(self) -> tuple[int, float]:
        """Rows queued or being built, and the seconds the oldest of them has waited (0 when none)."""
        with self._count:
            since = next(iter(self._outstanding.values()), None)
            return len(self._outstanding), (0.0 if since is None else max(0.0, time.monotonic() - since))

    def with_in_hand(self, done: Callable[[list[str]], pa.Array]) -> Callable[[list[str]], pa.Array]:
        """`done(users)` (ids with episodes) and the ids queued or being built, for a catch-up to leave alone."""

        def both(users: list[str]) -> pa.Array:
            with self._count:  # read first: a row built and written in between is in one or the other
                queued = pa.array(list(self._in_hand), pa.string())
            have = done(users)
            return pa.concat_arrays([have, queued.cast(have.type)]) if len(queued) else have

        return both

    def catch_up(
        self,
        missing: Callable[[], Iterable[tuple[pa.Array, int, int, int]]],
        embedded: Callable[[list[str]], tuple[list[dict[str, Any]], np.ndarray]],
    ) -> int:
        """Queue the stored messages `missing()` names, a group of users at a time ((Arrow string array, the
        group's first and last user by number, users in all); read by `embedded`, 256 at a time, each slice
        made Python strings only then), only as fast as they are built; how many. Blocks."""
        total = 0
        try:
            with self._catching:
                for ids, first, last, users in missing():
                    if ids:
                        log.warning(
                            "graph: building %d stored messages in the background (users %d-%d of %d)",
                            len(ids),
                            first,
                            last,
                            users,
                        )
                    for start in range(0, len(ids), 256):
                        self.wait_room(CATCH_UP_AHEAD)
                        rows, vectors = embedded(ids[start : start + 256].to_pylist())
                        if rows:
                            self.submit(rows, vectors)
                    total += len(ids)
                return total
        except Exception:
            log.exception("graph catch-up failed")
            return total

    def wait_room(self, ahead: int) -> None:
        """Block while `ahead` rows or more are queued or being built (while the builder runs): the
        catch-up's backpressure, so that a backlog is read from the table only as fast as it is built."""
        with self._count:
            while self.pending >= ahead and self._thread is not None and self._thread.is_alive():
                self._idle.wait(1.0)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is queued or being built: under a steady stream of stores that may not
        happen before the timeout (use `wait_built`)."""
        deadline = time.monotonic() + timeout
        with self._count:
            self._idle_waiters += 1
            try:
                if self.pending:
                    self.hurry.set()
                while self.pending:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._idle.wait(left)
            finally:
                self._idle_waiters -= 1
        return True

    def wait_user(self, user_id: str, timeout: float) -> bool:
        """Wait until none of this user's queued rows waits (`wait_idle` while a catch-up may queue more): a
        graph command of one user does not wait for another's backlog."""
        if self.overflowed or self._catching.locked():
            return self.wait_idle(timeout)
        deadline = time.monotonic() + timeout
        with self._count:
            if self.pending > len(self._outstanding):  # a catch-up's unit: rows not queued yet
                deadline = -1.0
            else:
                self._idle_waiters += 1
                try:
                    if self._by_user[user_id]:
                        self.hurry.set()
                    while self._by_user[user_id]:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            return False
                        self._idle.wait(left)
                finally:
                    self._idle_waiters -= 1
        return True if deadline >= 0 else self.wait_idle(timeout)

    def wait_built(self, timeout: float) -> bool:
        """Wait until every row queued before this call is built (or failed), not for rows queued after
        it: stores that keep coming cannot hold the caller (a delete) back. While a catch-up runs, rows it
        read before a delete may be queued after this call: then wait for idle."""
        if self._catching.locked():
            return self.wait_idle(timeout)
        deadline = time.monotonic() + timeout
        with self._count:
            target = self.submitted
            if self._oldest() < target:
                self._hurry_until = max(self._hurry_until, target)
                self.hurry.set()
            while self._oldest() < target:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def wait_rows(self, ids: list[str], timeout: float) -> bool:
        """Wait until none of these rows is queued or being built (a delete of them: their episodes are written
        before it removes them), not for other rows: a cleanup of old memories no longer waits for every message
        stored before it (up to 30 s behind a busy builder). While a catch-up runs, rows it read before the
        delete may be queued after this call: then `wait_built`."""
        if not self._catching.locked():
            with self._count:
                if not any(i in self._in_hand for i in ids):
                    return True
        return self.wait_built(timeout)

    def stop(self) -> None:
        """Stop the thread: what is queued is built if it can be in STOP_SECONDS, else left for the next start
        (the process exits within seconds whatever the builder was doing)."""
        self._stop_at = time.monotonic() + STOP_SECONDS
        self.hurry.set()
        self.queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout=STOP_SECONDS + 1.0)
            if self._thread.is_alive():
                log.warning("graph builder still busy at shutdown; what it had not written is built at the next start")

    def _stopping(self) -> None:
        if self._stop_at is not None and time.monotonic() > self._stop_at:
            raise _Stopped

    def _take(self, item: tuple[list[dict[str, Any]], np.ndarray, int] | None) -> bool:
        """A queued item into the backlog, each row behind its user's; False for the stop mark."""
        if item is None:
            return False
        rows, vectors, first = item
        for k, r in enumerate(rows):
            user = r.get("user_id", "")
            waiting = self._backlog.get(user)
            if waiting is None:  # a user with nothing waiting goes first: not behind another's backlog
                waiting = self._backlog[user] = deque()
                self._backlog.move_to_end(user, last=False)
            parts = slices(r["content"])
            if len(parts) == 1:
                waiting.append((r, vectors[k], first + k, None))
            else:
                waiting.extend((r, vectors[k], first + k, part) for part in parts)
        return True

    def _next_batch(
        self,
    ) -> tuple[list[dict[str, Any]], np.ndarray, list[int], list[tuple[int, int] | None]] | None:
        """Queued work for one pass: with nothing in hand, what arrives within BATCH_DELAY of the first item
        (fewer commits to the graph tables), less when a command waits for the graph (`hurry`); then every
        queued row joins the backlog, and the batch takes the users' rows in turn, up to BATCH_ROWS rows and
        BATCH_CHARS characters (past its first row), and a slice of a long message only as its first (`slices`).
        The rows, their vectors, numbers and slices (None: the whole row). None: stop."""
        if not self._backlog:
            if not self._take(self.queue.get()):
                return None
            deadline = time.monotonic() + BATCH_DELAY
            while not self.hurry.is_set() and sum(map(len, self._backlog.values())) < BATCH_ROWS:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    nxt = self.queue.get(timeout=min(left, 0.05))
                except queue.Empty:
                    continue
                if not self._take(nxt):
                    self.queue.put(None)
                    break
        while True:
            try:
                nxt = self.queue.get_nowait()
            except queue.Empty:
                break
            if not self._take(nxt):
                if self._stop_at is None or time.monotonic() > self._stop_at:
                    return None
                self.queue.put(None)  # stopping: the backlog first, while there is time
                break
        rows: list[dict[str, Any]] = []
        vectors: list[np.ndarray] = []
        numbers: list[int] = []
        parts: list[tuple[int, int] | None] = []
        chars = 0
        while self._backlog and len(rows) < BATCH_ROWS:
            user = next(iter(self._backlog))
            row, vector, number, part = self._backlog[user][0]
            size = len(row.get("content", "")) if part is None else part[1] - part[0]
            if rows and (part is not None or chars + size > BATCH_CHARS):
                break  # the next batch starts with it
            waiting = self._backlog.pop(user)
            waiting.popleft()
            if waiting:
                self._backlog[user] = waiting  # behind the other users: one row each in turn
            rows.append(row)
            vectors.append(vector)
            numbers.append(number)
            parts.append(part)
            chars += size
        return rows, np.stack(vectors), numbers, parts

    def _run(self) -> None:
        while (batch := self._next_batch()) is not None:
            rows, vectors, numbers, parts = batch
            # the rows done with this batch: whole ones and long ones' last slices (until then a row is pending)
            done = [k for k, p in enumerate(parts) if p is None or p[1] >= len(rows[k]["content"])]
            try:
                self.build(rows, vectors, parts)
            except _Stopped:
                log.info("graph builder stopped with %d messages unwritten (built at the next start)", len(rows))
                return
            except Exception:
                log.exception("graph building failed for %d messages", len(rows))
                self.failed += len(done)
                for r in rows:  # a long message's later slices are left unread (built again at the next start)
                    self._partial.pop(r["id"], None)
            with self._count:
                self.pending -= len(done)
                self.processed += len(done)
                for k in done:
                    self._outstanding.pop(numbers[k], None)
                self._by_user -= Counter(rows[k].get("user_id", "") for k in done)
                self._in_hand -= Counter(rows[k]["id"] for k in done)  # the built ones out (- keeps counts above 0)
                catch_up = self.overflowed and not self.pending and self.on_overflow is not None
                if catch_up:  # the catch-up holds one pending unit: nobody sees the graph settled before it is done
                    self.overflowed, self.pending = False, 1
                elif not self.pending or (self._oldest() >= self._hurry_until and not self._idle_waiters):
                    self.hurry.clear()  # every waiter served: step aside for requests again
                self._idle.notify_all()
            if catch_up:
                threading.Thread(target=self._catch_up, name="graph-catch-up", daemon=True).start()

    def _catch_up(self) -> None:
        assert self.on_overflow is not None  # (started only when it is set)
        while True:
            try:
                self.on_overflow()
            finally:
                with self._count:
                    again, self.overflowed = self.overflowed, False  # more left out meanwhile: once more
                    if not again:
                        self.pending -= 1
                        if not self.pending:
                            self.hurry.clear()
                        self._idle.notify_all()
            if not again:
                return

    def build(
        self, rows: list[dict[str, Any]], vectors: np.ndarray, parts: list[tuple[int, int] | None] | None = None
    ) -> None:
        """Build a batch of stored messages, every user's, a group of users at a time (`group_size()` of them,
        at most USER_GROUP: their rows read together, their graphs made and let go one at a time, so that a
        batch over many users never holds more than one graph beyond the memory budget), then write it all with
        one commit per table. `parts`: per row, the slice of a long message this batch reads (None: all of it)."""
        by_user: dict[str, list[int]] = {}
        for k, r in enumerate(rows):
            by_user.setdefault(r["user_id"], []).append(k)
        users = list(by_user)
        written, episodes = None, set()
        start = 0
        while start < len(users):
            group = users[start : start + max(1, min(USER_GROUP, self.group_size()))]
            start += len(group)
            self._step_aside()
            self._stopping()
            with self.lock:
                if self.preload is not None:
                    self.preload(group)
                for u in group:  # one user's graph at a time (the group's rows were read together)
                    built = self._build_user(u, by_user[u], rows, vectors, parts)
                    ids = {ep.id for ep in built[1].episodes}
                    episodes |= ids
                    self.unwritten |= ids
                    written = self.save(built, written)
                    if self.release is not None:
                        self.release(u)
        self._stopping()
        with self.lock:
            if self.preload is not None:
                self.preload([])  # unpinned: the budget applies again
            self.commit(written)
            self.unwritten -= episodes  # a failed batch's stay: nothing writes them, the next start builds them
        self.built += len(rows)
        self.after_batch(len(rows))

    def _step_aside(self) -> None:
        waited = 0.0
        while (
            self.busy is not None
            and waited < YIELD_MAX
            and not self.hurry.is_set()
            and self._stop_at is None
            and self.busy()
        ):
            time.sleep(YIELD_STEP)
            waited += YIELD_STEP

    def _build_user(
        self,
        user_id: str,
        idx: list[int],
        rows: list[dict[str, Any]],
        vectors: np.ndarray,
        parts: list[tuple[int, int] | None] | None = None,
    ) -> tuple[UserGraph, Changes]:
        idx.sort(key=lambda k: rows[k]["timestamp"])  # (stable: a long message's slices stay in order)
        g = self.graphs(user_id)
        changes = Changes()
        for k in idx:
            self._stopping()
            part = parts[k] if parts is not None else None
            if part is not None:
                built = self._build_slice(g, rows[k], vectors[k], part, changes)
                if built is None:
                    continue  # not its last slice, or built before a crash
                ep = built
            elif rows[k]["id"] in g.episodes:
                continue  # built before a crash
            else:
                recent = np.asarray(g.recent[-RECENT:]) if g.recent else None
                ep = build_episode(g, rows[k], vectors[k], recent, changes, self.extra, self.same_fact, self.similar)
            if self.on_built is not None:
                self.on_built(g, ep, rows[k])
            # a copy: a view would keep the builder's whole batch of vectors alive for as long as the graph
            g.recent = [*g.recent[-RECENT + 1 :], vectors[k].astype(np.float32)]
        return g, changes

    def _build_slice(
        self, g: UserGraph, row: dict[str, Any], vector: np.ndarray, part: tuple[int, int], changes: Changes
    ) -> Episode | None:
        """Read one slice of a long message into the user's graph; its episode once the last slice is read (it
        joins `changes` then, and stays in `unwritten` until that batch is written), else None."""
        start, end = part
        state = self._partial.get(row["id"])
        if start == 0:
            if row["id"] in g.episodes:
                return None  # built before a crash
            recent = np.asarray(g.recent[-RECENT:]) if g.recent else None
            best = float(np.max(recent @ vector)) if recent is not None and len(recent) else None
            state = self._partial[row["id"]] = _Partial(new_episode(g, row, is_backchannel(row["content"])), best)
            self.unwritten.add(row["id"])
        elif state is None:
            return None  # its first slice was built before a crash, or its batch failed
        ep = state.episode
        g.episodes[ep.id] = ep  # (the graph may have been let go and read again from the tables since)
        if ep.message_id:
            g.by_message_id[ep.message_id] = ep.id
        if not ep.low:
            new, named = read_into(
                g, row, ep, row["content"][start:end], changes, self.extra, self.same_fact, self.similar
            )
            state.new += new
            state.named += named
        if end < len(row["content"]):
            return None
        del self._partial[row["id"]]
        ep.quality = 0.0 if ep.low else novelty(state.new, state.named, state.best)
        changes.episodes.append(ep)
        return ep
