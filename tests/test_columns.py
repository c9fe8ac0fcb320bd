"""The vector cache's compact columns (pure logic): strings by position and ids by hash."""

from __future__ import annotations

import pickle

from sidecar.messages.columns import ID_INDEX_MIN_TAIL, IdIndex, TextColumn


def test_a_text_column_gives_back_every_value_none_and_empty_included():
    values = ["hello", None, "", "naïve café ☕", None, "x" * 5000, "", None, "last"]
    column = TextColumn()
    column.extend(values[:4])
    column.extend(values[4:])
    assert [column[i] for i in range(len(column))] == values
    assert column[-1] == "last" and column[1] is None
    assert column.nbytes == len("".join(v for v in values if v).encode()) + 8 * len(values)
    again = pickle.loads(pickle.dumps(column))
    assert [again[i] for i in range(len(again))] == values
    again.extend(["more", None])  # still appendable after a round trip
    assert again[len(values)] == "more" and again[len(values) + 1] is None


class Colliding(str):
    """An id whose hash collides with every other's."""

    def __hash__(self) -> int:
        return 42


def test_ids_are_found_in_the_sorted_part_and_in_the_tail_and_confirmed_against_the_ids():
    column, index = TextColumn(), IdIndex()
    first = [f"id-{i}" for i in range(ID_INDEX_MIN_TAIL + 1)]  # past the tail's minimum: sorted
    column.extend(first)
    index.extend(first)
    tail = ["late-1", "late-2"]  # a store's single appends stay in the scanned tail
    column.extend(tail)
    index.extend(tail)
    wanted = ["late-2", "id-0", "nope", f"id-{ID_INDEX_MIN_TAIL}", "late-1", "id-7"]
    assert index.find(wanted, column) == [ID_INDEX_MIN_TAIL + 2, 0, None, ID_INDEX_MIN_TAIL, ID_INDEX_MIN_TAIL + 1, 7]
    assert index.find([], column) == []


def test_colliding_hashes_still_find_the_right_id_sorted_or_not():
    ids = [Colliding(f"c-{i}") for i in range(ID_INDEX_MIN_TAIL + 10)]
    column, index = TextColumn(), IdIndex()
    column.extend(ids[:-3])
    index.extend(ids[:-3])
    column.extend(ids[-3:])  # three more in the tail, same hash as all the others
    index.extend(ids[-3:])
    wanted = [ids[5], ids[-1], Colliding("c-absent"), ids[-3], ids[0]]
    assert index.find(wanted, column) == [5, len(ids) - 1, None, len(ids) - 3, 0]


def test_a_growing_index_re_sorts_and_keeps_every_position():
    column, index = TextColumn(), IdIndex()
    ids = []
    for i in range(1000):  # one at a time, as stores to a cached user arrive
        ids.append(f"m-{i * 7919 % 1000}")
        column.extend(ids[-1:])
        index.extend(ids[-1:])
    assert index.find(ids, column) == list(range(1000))
    assert index.nbytes == 20 * 1000


def test_an_id_held_twice_is_found_at_its_newest_position():
    column, index = TextColumn(), IdIndex()
    ids = [f"d-{i}" for i in range(ID_INDEX_MIN_TAIL + 1)] + ["d-3"]  # "d-3" again, in the tail
    column.extend(ids)
    index.extend(ids)
    assert index.find(["d-3", "d-4"], column) == [len(ids) - 1, 4]
    more = [f"e-{i}" for i in range(200)]  # a re-sort: both "d-3"s in the sorted part now
    column.extend(more)
    index.extend(more)
    assert index.find(["d-3"], column) == [len(ids) - 1]


def test_a_text_column_reads_from_the_end_like_a_list():
    column = TextColumn()
    column.extend(["only"])
    assert column[-1] == column[0] == "only"
    column.extend([None, "b"])
    assert [column[-3], column[-2], column[-1]] == ["only", None, "b"]
