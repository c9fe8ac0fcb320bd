"""The offline relation tier, pure: the personal relations people state in chat, read clause by clause.

What it reads (docs/graph.md, "What the offline tier reads"):
- subjects: "I" (also "i"), "we" and "our" (the speaker's household: lives_in and has_pet only), the people the
  speaker introduces ("my sister Alice", "Ana, my sister,", "Ana is my sister", "my best friend Priya, who
  ..."), people the user's graph already knows by name, "he"/"she" for the one person introduced in the
  same message, and "X and I"; a chat line without a subject ("Just moved to Dublin!") is the speaker's;
- after openers and discourse markers ("Big news:", "omg", "so", "btw", "honestly", "actually"), which
  simply come before a subject;
- coordinated predicates and objects ("I live in Berlin and work at Siemens", "I love hiking and
  climbing", "I have two cats, Salem and Luna");
- changes told as events: quit / left / retired from / lost my job at / used to ... / no longer ...
  (the relation `ended`), joined / started at / got the job as / moved to / relocated to (a new one,
  which closes the older single-valued relation);
- a correction in the same breath ("I moved to Lisbon, no wait, Porto": Porto only).

Precision first: a question, a negation, a hypothetical, a wish or plan, a future, a hedge ("I think")
and reported speech ("my friend asked if I live in Oslo") make nothing current. The words between a
subject and its verb must be ones the tier knows (auxiliaries, a few adverbs), so an unknown construction
makes nothing rather than something wrong.

Each found relation names its subject (None: the speaker), the predicate, the object as written, whether
the statement says it no longer holds (`ended`), and whether the predicate holds one value at a time (a
new one closes the old: lives_in, works_at, partner, ...), so history and "as of" questions stay answerable.
"""

from __future__ import annotations

from collections.abc import Mapping

from .predicates import AS_FACT, PREDICATES, FoundRelation, single_valued

__all__ = ["AS_FACT", "PREDICATES", "FoundRelation", "find_relations", "single_valued"]


def find_relations(
    text: str, known: Mapping[str, str] | None = None, language: str | None = None
) -> list[FoundRelation]:
    """The relations stated in `text`, in order of appearance. `known`: the user's known names (folded name ->
    entity type, the graph's gazetteer), for people named without an introduction and names in lower case.
    `language`: read in this language's lexicon only; None: the memory's language (graph/lang/: keyword
    search's decision), and when that reads nothing in a short Latin-script line (a detector's guess), the one
    other Latin-script lexicon that reads something (two or more: nothing); a line that switches to English in
    the first person ("Ich wohne in Berlin but I work at Google") is read in English too. A language with no
    lexicon yields nothing. The reader's patterns are compiled at its first use (about 0.1 s per language), in the graph
    builder's thread after `ready`, not at start-up."""
    from ..lang import language as decide
    from ..lang import lexicon, others
    from .reader import read

    if language is not None:
        lex = lexicon(language)
        return read(text, known, lex) if lex is not None else []
    decided = decide(text)
    lex = lexicon(decided)
    found = read(text, known, lex) if lex is not None else []
    if found:
        english = lexicon("en")
        if decided != "en" and english is not None and english.first_person and english.first_person.search(text):
            seen = {(r.subject, r.predicate, r.object, r.ended) for r in found}
            more = [r for r in read(text, known, english) if (r.subject, r.predicate, r.object, r.ended) not in seen]
            found = sorted(found + more, key=lambda r: r.start)
        return found
    readings = [r for code in others(text, decided) if (r := read(text, known, lexicon(code)))]  # type: ignore[arg-type]
    return readings[0] if len(readings) == 1 else []
