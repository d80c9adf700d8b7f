"""`sparse_embeddings.sparse` against NumPy references: duplicates, index dtypes, empty batches."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from sparse_embeddings import sparse

ROWS, DIM = 10, 3


def _slices(ids, dtype=tf.int64, seed=0):
    values = np.random.default_rng(seed).normal(size=(len(ids), DIM)).astype(np.float32)
    indices = tf.constant(np.asarray(ids, dtype=np.int64), dtype=dtype)
    shape = tf.constant([ROWS, DIM], tf.int64)
    return tf.IndexedSlices(tf.constant(values), indices, shape), values


def _dense(ids, values):
    """The NumPy reference of a sparse gradient as a dense matrix (duplicates summed)."""
    dense = np.zeros((ROWS, DIM), np.float64)
    np.add.at(dense, np.asarray(ids, dtype=np.int64), values.astype(np.float64))
    return dense


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_deduplicate_sums_duplicates_and_sorts(dtype):
    ids = [7, 2, 7, 0, 2, 7]
    slices, values = _slices(ids, dtype)
    result = sparse.deduplicate(slices)
    assert isinstance(result, tf.IndexedSlices)
    assert result.indices.dtype == dtype
    assert result.indices.numpy().tolist() == [0, 2, 7]
    expected = _dense(ids, values)[[0, 2, 7]]
    np.testing.assert_allclose(result.values.numpy(), expected, atol=1e-6)
    assert result.dense_shape.numpy().tolist() == [ROWS, DIM]


def test_deduplicate_empty_batch():
    slices = tf.IndexedSlices(tf.zeros((0, DIM)), tf.zeros((0,), tf.int64),
                              tf.constant([ROWS, DIM], tf.int64))
    result = sparse.deduplicate(slices)
    assert result.indices.shape[0] == 0
    assert tuple(result.values.shape) == (0, DIM)


def test_deduplicate_refuses_a_dense_tensor():
    with pytest.raises(TypeError, match="IndexedSlices"):
        sparse.deduplicate(tf.zeros((2, DIM)))


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_sum_duplicates_sums_in_order_of_first_occurrence(dtype):
    ids = [7, 2, 7, 0, 2, 7]
    slices, values = _slices(ids, dtype)
    result = sparse.sum_duplicates(slices)
    assert isinstance(result, tf.IndexedSlices)
    assert result.indices.dtype == dtype
    assert result.indices.numpy().tolist() == [7, 2, 0]
    np.testing.assert_allclose(result.values.numpy(), _dense(ids, values)[[7, 2, 0]], atol=1e-6)
    assert result.dense_shape.numpy().tolist() == [ROWS, DIM]


def test_sum_duplicates_matches_unsorted_segment_sum_bit_for_bit():
    """The same additions in the same order: the faster op changes no result."""
    rng = np.random.default_rng(3)
    ids = tf.constant(rng.integers(0, 50, size=400))
    values = tf.constant(rng.normal(size=(400, 2, 5)).astype(np.float32))
    result = sparse.sum_duplicates(tf.IndexedSlices(values, ids))
    unique, positions = tf.unique(ids)
    expected = tf.math.unsorted_segment_sum(values, positions, tf.size(unique))
    assert tuple(result.values.shape) == (int(tf.size(unique)), 2, 5)
    np.testing.assert_array_equal(result.values.numpy(), expected.numpy())


def test_sum_duplicates_empty_batch_and_bad_input():
    slices = tf.IndexedSlices(tf.zeros((0, DIM)), tf.zeros((0,), tf.int64),
                              tf.constant([ROWS, DIM], tf.int64))
    result = sparse.sum_duplicates(slices)
    assert result.indices.shape[0] == 0
    assert tuple(result.values.shape) == (0, DIM)
    with pytest.raises(TypeError, match="IndexedSlices"):
        sparse.sum_duplicates(tf.zeros((2, DIM)))


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_sparse_sgd_update_moves_only_touched_rows(dtype):
    ids = [1, 4, 1]
    slices, values = _slices(ids, dtype)
    start = np.random.default_rng(1).normal(size=(ROWS, DIM)).astype(np.float32)
    var = tf.Variable(start)
    returned = sparse.sparse_sgd_update(var, slices, lr=0.1)
    assert returned is var
    expected = start - 0.1 * _dense(ids, values)
    np.testing.assert_allclose(var.numpy(), expected, atol=1e-6)
    untouched = [r for r in range(ROWS) if r not in ids]
    assert np.array_equal(var.numpy()[untouched], start[untouched])


def test_sparse_sgd_update_empty_batch_changes_nothing():
    start = np.ones((ROWS, DIM), np.float32)
    var = tf.Variable(start)
    empty = tf.IndexedSlices(tf.zeros((0, DIM)), tf.zeros((0,), tf.int32))
    sparse.sparse_sgd_update(var, empty, lr=0.1)
    assert np.array_equal(var.numpy(), start)


def _numpy_lazy_adam(var, m, v, ids, values, step, lr, b1=0.9, b2=0.999, eps=1e-7):
    """Reference lazy Adam in float64 on the deduplicated rows; returns new copies."""
    var, m, v = var.astype(np.float64), m.astype(np.float64), v.astype(np.float64)
    rows = np.unique(np.asarray(ids, dtype=np.int64))
    g = _dense(ids, values)[rows]
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g**2
    alpha = lr * np.sqrt(1 - b2**step) / (1 - b1**step)
    var[rows] -= alpha * m[rows] / (np.sqrt(v[rows]) + eps)
    return var, m, v


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_lazy_adam_update_matches_numpy_over_steps(dtype):
    rng = np.random.default_rng(2)
    start = rng.normal(size=(ROWS, DIM)).astype(np.float32)
    ref = (start, np.zeros_like(start), np.zeros_like(start))
    var, m, v = (tf.Variable(a) for a in ref)
    batches = [[1, 3, 3], [5], [1, 8, 8, 8]]
    for step, ids in enumerate(batches, start=1):
        before = [x.numpy().copy() for x in (var, m, v)]
        slices, values = _slices(ids, dtype, seed=step)
        assert sparse.lazy_adam_update(var, m, v, slices, step, lr=0.01) is var
        ref = _numpy_lazy_adam(*ref, ids, values, step, lr=0.01)
        for name, got, want in zip(("var", "m", "v"), (var, m, v), ref, strict=True):
            np.testing.assert_allclose(got.numpy(), want, atol=1e-6, rtol=1e-5, err_msg=name)
        untouched = [r for r in range(ROWS) if r not in ids]
        for name, got, old in zip(("var", "m", "v"), (var, m, v), before, strict=True):
            assert np.array_equal(got.numpy()[untouched], old[untouched]), name
        # Keep the reference exactly where the variables are, so errors do not add up.
        ref = tuple(x.numpy() for x in (var, m, v))


def test_lazy_adam_update_empty_batch_changes_nothing():
    start = np.ones((ROWS, DIM), np.float32)
    var, m, v = tf.Variable(start), tf.Variable(start), tf.Variable(start)
    empty = tf.IndexedSlices(tf.zeros((0, DIM)), tf.zeros((0,), tf.int64))
    sparse.lazy_adam_update(var, m, v, empty, step=1, lr=0.1)
    for x in (var, m, v):
        assert np.array_equal(x.numpy(), start)


def test_lazy_adam_update_in_tf_function():
    var, m, v = (tf.Variable(tf.zeros((ROWS, DIM))) for _ in range(3))

    @tf.function
    def step(slices, t):
        sparse.lazy_adam_update(var, m, v, slices, t, lr=0.1)

    slices, _ = _slices([2, 2, 6])
    step(slices, tf.constant(1.0))
    changed = np.flatnonzero(np.abs(var.numpy()).sum(axis=1))
    assert changed.tolist() == [2, 6]


def test_sum_duplicates_compiles_with_xla():
    ids = tf.constant([4, 1, 4, 4], tf.int64)
    values = tf.constant(np.arange(8, dtype=np.float32).reshape(4, 2))
    summed = tf.function(jit_compile=True)(
        lambda: sparse.sum_duplicates(tf.IndexedSlices(values, ids)).values)()
    np.testing.assert_array_equal(summed.numpy(), [[0 + 4 + 6, 1 + 5 + 7], [2, 3]])
