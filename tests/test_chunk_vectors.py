"""ChunkVectors (pure logic): each row scores as its best chunk, whatever order and batches the chunks came in."""

import numpy as np

from sidecar.messages.chunk_vectors import MERGE_MIN, ChunkVectors


def _reference(batches, query, n_rows):
    """Per row: the best score of its chunks (float16 values, float32 product) and the first chunk with it."""
    vectors = np.concatenate([v for _, _, v in batches]).astype(np.float16).astype(np.float32)
    rows = np.concatenate([r for r, _, _ in batches])
    scores = vectors @ query
    best = np.full(n_rows, -np.inf, dtype=np.float32)
    pick = np.full(n_rows, -1)
    for chunk, (row, score) in enumerate(zip(rows, scores)):
        if score > best[row]:
            best[row], pick[row] = score, chunk
    return best, pick


def _batches(rng, n_rows, n_batches, dim):
    """Small integers as vector components: exact in float16 and in every float32 product, whatever order BLAS
    sums in, so equal scores are equal (within a batch and across batches) and the reference is exact."""
    out = []
    for _ in range(n_batches):
        n = int(rng.integers(1, 40))
        rows = rng.integers(0, n_rows, n)  # any order, a row's chunks spread over batches
        vectors = rng.integers(-3, 4, (n, dim)).astype(np.float32)
        vectors[rng.random(n) < 0.2] = 1.0  # the same vector in many batches: the chunk that came first wins
        spans = np.stack([np.arange(n) * 10, np.arange(n) * 10 + 9], axis=1)
        out.append((rows, spans, vectors))
    return out


def test_best_chunk_per_row_matches_a_plain_loop_over_batches_merges_and_ties():
    rng = np.random.default_rng(7)
    n_rows, dim = 120, 384
    chunks = ChunkVectors(dim)
    batches = _batches(rng, n_rows, 60, dim)
    parts_seen = set()
    for k, (rows, spans, vectors) in enumerate(batches):
        chunks.add(rows, spans, vectors)
        if k % 7 == 0:  # queries between appends, as the cache sees them
            query = rng.integers(-3, 4, dim).astype(np.float32)
            best, pick = chunks.best(query, n_rows)
            ref_best, ref_pick = _reference(batches[: k + 1], query, n_rows)
            assert np.array_equal(best, ref_best)
            assert np.array_equal(pick, ref_pick)
            parts_seen.add(len(chunks._parts))
    assert 1 in parts_seen and 2 in parts_seen  # scored as one merged block and as a block plus its tail
    assert len(chunks) == sum(len(r) for r, _, _ in batches) > MERGE_MIN
    query = rng.integers(-3, 4, dim).astype(np.float32)
    best, pick = chunks.best(query, n_rows + 5)  # rows without chunks (and rows added since) score -inf
    assert np.isneginf(best[n_rows:]).all() and (pick[n_rows:] == -1).all()
    all_spans = np.concatenate([s for _, s, _ in batches])
    for row in np.flatnonzero(pick >= 0)[:20]:
        assert chunks.span(int(pick[row])) == all_spans[pick[row]].tolist()


def test_a_chunk_that_scores_nan_never_wins_and_breaks_nothing():
    chunks = ChunkVectors(2)
    chunks.add(
        np.array([0, 0, 1]),
        np.array([[0, 5], [5, 9], [0, 4]]),
        np.array([[np.nan, 0.0], [1.0, 0.0], [np.nan, np.nan]], dtype=np.float32),
    )
    best, pick = chunks.best(np.array([1.0, 0.0], dtype=np.float32), 2)
    assert best[0] == 1.0 and chunks.span(int(pick[0])) == [5, 9]
    assert np.isneginf(best[1])  # no usable chunk: the row scores by its own vector (UserRows)


def test_the_answer_for_the_same_query_is_kept_until_chunks_or_rows_change():
    rng = np.random.default_rng(3)
    chunks = ChunkVectors(4)
    chunks.add(np.array([0, 1]), np.array([[0, 5], [0, 7]]), rng.standard_normal((2, 4)))
    query = rng.standard_normal(4).astype(np.float32)
    first = chunks.best(query, 2)
    assert chunks.best(query, 2) is first
    assert chunks.best(query, 3) is not first
    chunks.add(np.array([2]), np.array([[0, 3]]), rng.standard_normal((1, 4)))
    assert np.isfinite(chunks.best(query, 3)[0][2])
