"""The graph-mode harness of notebook 04 (embeddings_course.tf1) runs what it is given and
tells a sparse update from a dense one."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from embeddings_course import tf1
from embeddings_course.checks import CheckFailed


def capped(loss, var, max_norm, optimizer=None):
    optimizer = optimizer or tf.compat.v1.train.GradientDescentOptimizer(1.0)
    ((grad, _),) = optimizer.compute_gradients(loss, [var])
    if isinstance(grad, tf.IndexedSlices):
        ids, positions = tf.unique(grad.indices)
        summed = tf.math.unsorted_segment_sum(grad.values, positions, tf.shape(ids)[0])
        grad = tf.IndexedSlices(tf.clip_by_norm(summed, max_norm, axes=[1]), ids)
    else:
        grad = tf.clip_by_norm(grad, max_norm, axes=[1])
    return optimizer.apply_gradients([(grad, var)])


def dense(loss, var, max_norm, optimizer=None):
    optimizer = optimizer or tf.compat.v1.train.GradientDescentOptimizer(1.0)
    ((grad, _),) = optimizer.compute_gradients(loss, [var])
    return optimizer.apply_gradients([(tf.convert_to_tensor(grad), var)])


def test_runs_the_op_and_matches_the_reference():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(10, 3))
    ids = np.array([4, 4, 9, 0], dtype=np.int64)
    upstream = rng.normal(size=(4, 3)) * 3
    run = tf1.train_in_graph(capped, table, [(ids, upstream), (ids[:1], upstream[:1])], 1.0)
    assert len(run.tables) == 3
    expected = tf1.capped_sgd_reference(table, ids, upstream, 1.0)
    np.testing.assert_allclose(run.tables[1], expected, atol=1e-5)
    assert run.moved_rows(1) == [0, 4, 9] and run.moved_rows(2) == [4]
    tf1.check_sparse_update(run)


def test_reference_caps_the_summed_row():
    out = tf1.capped_sgd_reference(np.zeros((3, 2)), [1, 1], [[3.0, 0.0], [3.0, 0.0]], 1.0)
    np.testing.assert_allclose(out, [[0, 0], [-1, 0], [0, 0]])


def test_dense_update_is_reported():
    run = tf1.train_in_graph(dense, np.ones((4, 2)), [([1], [[1.0, 1.0]])], 1.0)
    with pytest.raises(CheckFailed, match="dense update .*ResourceApplyGradientDescent"):
        tf1.check_sparse_update(run)


def test_dense_gradient_path():
    x = np.eye(3)[:2]
    run = tf1.train_in_graph(capped, np.zeros((3, 2)), [(x, [[0.0, 2.0], [0.3, 0.4]])], 1.0,
                             dense=True)
    np.testing.assert_allclose(run.tables[1], [[0, -1], [-0.3, -0.4], [0, 0]], atol=1e-6)


def test_optimizer_is_made_inside_the_graph():
    run = tf1.train_in_graph(capped, np.ones((6, 2)),
                             [([1, 3], np.ones((2, 2))), ([5], np.ones((1, 2)))], 10.0,
                             optimizer=("Adam", 0.1))
    assert run.moved_rows(2) == [1, 3, 5]  # TF 1's Adam decays every row's moments


def test_a_wrong_return_value_gets_a_clear_message():
    with pytest.raises(CheckFailed, match="got a NoneType, expected the op"):
        tf1.train_in_graph(lambda loss, var, max_norm: None, np.ones((2, 2)),
                           [([0], [[1.0, 1.0]])], 1.0)


@pytest.mark.parametrize("table, batches, message", [
    (np.ones(3), [([0], [[1.0]])], "2-D"),
    (np.ones((2, 2)), [], "empty"),
])
def test_bad_arguments(table, batches, message):
    with pytest.raises(ValueError, match=message):
        tf1.train_in_graph(capped, table, batches, 1.0)


def test_dropout_places_say_where_a_tagger_drops_units():
    def tagger(inputs_layer=0.0, inputs=0.0, states=0.0, outputs=0.0):
        ids = keras.Input((None,), dtype="int32")
        x = keras.layers.Embedding(10, 4, mask_zero=True)(ids)
        if inputs_layer:
            x = keras.layers.Dropout(inputs_layer)(x)
        x = keras.layers.Bidirectional(keras.layers.LSTM(
            3, return_sequences=True, dropout=inputs, recurrent_dropout=states))(x)
        if outputs:
            x = keras.layers.Dropout(outputs)(x)
        return keras.Model(ids, keras.layers.Dense(2)(x))

    assert tf1.dropout_places(tagger(inputs=0.4, states=0.4, outputs=0.4)) == {
        "inputs": [0.4], "states": [0.4], "outputs": [0.4]}
    assert tf1.dropout_places(tagger(inputs_layer=0.3, states=0.3, outputs=0.3)) == {
        "inputs": [0.3], "states": [0.3], "outputs": [0.3]}
    assert tf1.dropout_places(tagger(outputs=0.4)) == {"inputs": [], "states": [],
                                                       "outputs": [0.4]}
    assert tf1.dropout_places(tagger(inputs=0.2, states=0.5)) == {
        "inputs": [0.2], "states": [0.5], "outputs": []}
