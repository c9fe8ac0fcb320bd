"""Graph memory: every stored message is an episode of its user's graph; entities (people, places,
organisations, things, events) are found in episodes by a fast rule tier and resolved per user;
relations the user states carry their validity in time; related episodes are consolidated into
traces. Stands on the messages domain through its `Companion` and `MessageReader` interfaces, and on
the conversation domain for the pyramid's word cut.

Which file holds what:
- records: `records.py` (entity, episode, relation, trace), `model.py` (one user's graph in memory), `tables.py`,
  `store.py` (the tables), `cache.py`;
- names: `mentions.py` (the fast entity tier), `names.py`, `self_names.py` (the user's own names);
- reader: `relations/` (the relation engine, knowing no language: `clauses.py`, `state.py`, `subjects.py`,
  `objects.py` read English clause by clause, `cues.py` reads the other languages by cue, `reader.py` the entry,
  `predicates.py`), `deep.py` (the LLM tier);
- lexicons: `lang/` (data: `types.py` what a lexicon holds, `en.py`, `de.py`, `es.py`, `fr.py`, `pt.py`, `it.py`,
  `zh.py`, `ja.py`; `latin.py` what the Latin-script ones share; `lang/__init__.py` a memory's language);
- validity: `validity.py`, `supersession.py`, `recall_validity.py`;
- recall: `activation.py`, `recall.py`, `recaller.py`, `consolidation.py`;
- the service around them: `builder.py`, `service.py`, `companion.py`, `quality.py`, `wire_out.py`."""

from .companion import GraphCompanion
from .names import NameMatcher
from .service import GraphService
from .store import GraphStore
from .tables import TABLES as GRAPH_TABLES
from .tables import read_graphs

__all__ = ["GRAPH_TABLES", "GraphCompanion", "GraphService", "GraphStore", "NameMatcher", "read_graphs"]
