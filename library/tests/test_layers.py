"""`PartiallyFrozenEmbedding`: output, sparse gradient on the new rows only, training, saving."""

from __future__ import annotations

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from sparse_embeddings.layers import PartiallyFrozenEmbedding
from sparse_embeddings.optimizers import LazyAdam

PRETRAINED_ROWS, NEW_ROWS, DIM = 5, 3, 4


@pytest.fixture
def pretrained():
    return np.random.default_rng(0).normal(size=(PRETRAINED_ROWS, DIM)).astype(np.float32)


def _full_matrix(layer):
    return np.concatenate([layer.pretrained.numpy(), layer.new_rows.numpy()])


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_output_is_the_concatenated_matrix_gathered(pretrained, dtype):
    layer = PartiallyFrozenEmbedding(pretrained, NEW_ROWS)
    ids = np.array([[0, 6, 2], [7, 7, 4]], dtype=dtype)
    out = layer(ids)
    assert tuple(out.shape) == (2, 3, DIM)
    np.testing.assert_array_equal(out.numpy(), _full_matrix(layer)[ids])
    np.testing.assert_array_equal(layer.pretrained.numpy(), pretrained)


def test_scalar_and_empty_ids(pretrained):
    layer = PartiallyFrozenEmbedding(pretrained, NEW_ROWS)
    assert tuple(layer(tf.constant(6)).shape) == (DIM,)
    assert tuple(layer(tf.zeros((0, 2), tf.int32)).shape) == (0, 2, DIM)


def test_only_the_new_rows_are_trainable(pretrained):
    layer = PartiallyFrozenEmbedding(pretrained, NEW_ROWS)
    layer.build()
    assert [w.name for w in layer.trainable_weights] == ["new_rows"]
    assert tuple(layer.trainable_weights[0].shape) == (NEW_ROWS, DIM)
    assert [w.name for w in layer.non_trainable_weights] == ["pretrained"]


def test_gradient_is_indexed_slices_over_only_the_new_ids(pretrained):
    layer = PartiallyFrozenEmbedding(pretrained, NEW_ROWS)
    ids = tf.constant([[1, 7, 0], [5, 7, 3]])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(ids) * 2.0)
    (grad,) = tape.gradient(loss, layer.trainable_weights)
    assert isinstance(grad, tf.IndexedSlices)
    # Ids 7, 5, 7 are new rows 2, 0, 2; no other index appears, not even with a zero value.
    assert sorted(grad.indices.numpy().tolist()) == [0, 2, 2]
    np.testing.assert_array_equal(grad.values.numpy(), np.full((3, DIM), 2.0))


def test_batch_without_new_ids_gives_an_empty_gradient(pretrained):
    layer = PartiallyFrozenEmbedding(pretrained, NEW_ROWS)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(tf.constant([0, 1, 4])))
    (grad,) = tape.gradient(loss, layer.trainable_weights)
    assert isinstance(grad, tf.IndexedSlices)
    assert grad.indices.shape[0] == 0


def _model(pretrained, mask_zero=False):
    inputs = keras.Input((None,), dtype="int32")
    x = PartiallyFrozenEmbedding(pretrained, NEW_ROWS, mask_zero=mask_zero, name="emb")(inputs)
    x = keras.layers.GlobalAveragePooling1D()(x)
    outputs = keras.layers.Dense(1)(x)
    return keras.Model(inputs, outputs)


def test_adamw_fit_leaves_frozen_rows_bit_identical(pretrained):
    model = _model(pretrained)
    model.compile(optimizer=keras.optimizers.AdamW(0.05, weight_decay=0.1), loss="mse")
    layer = model.get_layer("emb")
    new_before = layer.new_rows.numpy().copy()
    x = np.array([[0, 5, 2], [6, 1, 3], [4, 7, 5]])
    y = np.array([[1.0], [-1.0], [0.5]])
    model.fit(x, y, epochs=3, batch_size=2, verbose=0)
    assert np.array_equal(layer.pretrained.numpy(), pretrained)
    assert (layer.new_rows.numpy() != new_before).any(axis=1).all()


def test_lazy_adam_fit_moves_only_new_rows_in_the_batch(pretrained):
    model = _model(pretrained)
    model.compile(optimizer=LazyAdam(0.05), loss="mse")
    layer = model.get_layer("emb")
    before = layer.new_rows.numpy().copy()
    model.fit(np.array([[0, 6, 6, 2]]), np.array([[1.0]]), epochs=2, verbose=0)
    moved = np.flatnonzero((layer.new_rows.numpy() != before).any(axis=1)).tolist()
    assert moved == [6 - PRETRAINED_ROWS]
    assert np.array_equal(layer.pretrained.numpy(), pretrained)


def test_mask_zero(pretrained):
    layer = PartiallyFrozenEmbedding(pretrained, NEW_ROWS, mask_zero=True)
    ids = tf.constant([[3, 0, 6], [0, 0, 1]])
    np.testing.assert_array_equal(layer.compute_mask(ids).numpy(), ids.numpy() != 0)
    assert PartiallyFrozenEmbedding(pretrained, NEW_ROWS).compute_mask(ids) is None
    model = _model(pretrained, mask_zero=True)
    assert tuple(model(ids).shape) == (2, 1)


def test_get_config_round_trip(pretrained):
    layer = PartiallyFrozenEmbedding(pretrained, NEW_ROWS, mask_zero=True,
                                     new_rows_initializer="zeros", name="words")
    config = layer.get_config()
    assert config["pretrained_shape"] == [PRETRAINED_ROWS, DIM]
    assert config["num_new_rows"] == NEW_ROWS
    assert "pretrained" not in config  # sizes, not the matrix
    again = PartiallyFrozenEmbedding.from_config(config)
    assert again.get_config() == config
    assert again.input_dim == PRETRAINED_ROWS + NEW_ROWS
    again.build()
    assert not again.new_rows.numpy().any()


def test_save_and_load_keras_file(pretrained, tmp_path):
    model = _model(pretrained, mask_zero=True)
    model.compile(optimizer=LazyAdam(0.05), loss="mse")
    x, y = np.array([[1, 6, 0], [7, 2, 0]]), np.array([[1.0], [0.0]])
    model.fit(x, y, epochs=1, verbose=0)
    path = tmp_path / "tagger.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    layer = loaded.get_layer("emb")
    assert isinstance(layer, PartiallyFrozenEmbedding)
    np.testing.assert_array_equal(layer.pretrained.numpy(), pretrained)
    np.testing.assert_array_equal(layer.new_rows.numpy(),
                                  model.get_layer("emb").new_rows.numpy())
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


@pytest.mark.parametrize("bad", [np.zeros(4), np.zeros((2, 3, 4))])
def test_pretrained_of_wrong_rank(bad):
    with pytest.raises(ValueError, match=re.escape(f"got shape {bad.shape}")):
        PartiallyFrozenEmbedding(bad, NEW_ROWS)


def test_negative_num_new_rows(pretrained):
    with pytest.raises(ValueError, match="num_new_rows.*-1"):
        PartiallyFrozenEmbedding(pretrained, -1)


@pytest.mark.parametrize("bad_id", [8, -1])
def test_id_out_of_range(pretrained, bad_id):
    layer = PartiallyFrozenEmbedding(pretrained, NEW_ROWS)
    with pytest.raises(ValueError, match=rf"id {bad_id} is out of range.*0 to 7"):
        layer(tf.constant([1, bad_id]))


def test_non_integer_ids(pretrained):
    layer = PartiallyFrozenEmbedding(pretrained, NEW_ROWS)
    with pytest.raises(ValueError, match="float32"):
        layer(tf.constant([1.0, 2.0]))
