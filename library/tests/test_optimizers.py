"""`LazyAdam` against a NumPy reference, against Keras Adam, and through Keras's machinery."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from sparse_embeddings.optimizers import LazyAdam

ROWS, DIM = 8, 3
B1, B2, EPS = 0.9, 0.999, 1e-7


def _grad(ids, values):
    return tf.IndexedSlices(
        tf.constant(values, tf.float32),
        tf.constant(ids, tf.int64),
        tf.constant([ROWS, DIM], tf.int64),
    )


def _reference_step(state, ids, values, step, lr):
    """Lazy Adam in NumPy, Keras's formulation, on the deduplicated rows."""
    var, m, v = (x.astype(np.float64) for x in state)
    dense = np.zeros_like(var)
    np.add.at(dense, np.asarray(ids), np.asarray(values, np.float64))
    rows = np.unique(ids)
    g = dense[rows]
    m[rows] += (g - m[rows]) * (1 - B1)
    v[rows] += (g**2 - v[rows]) * (1 - B2)
    alpha = lr * np.sqrt(1 - B2**step) / (1 - B1**step)
    var[rows] -= alpha * m[rows] / (np.sqrt(v[rows]) + EPS)
    return var, m, v


def _moved_rows(before, after):
    return np.flatnonzero((before != after).any(axis=1)).tolist()


def test_build_creates_zero_moment_slots():
    var = keras.Variable(np.ones((ROWS, DIM), np.float32))
    opt = LazyAdam()
    opt.build([var])
    assert len(opt._momentums) == len(opt._velocities) == 1
    for slot in opt._momentums + opt._velocities:
        assert tuple(slot.shape) == (ROWS, DIM)
        assert not slot.numpy().any()


def test_sparse_steps_match_numpy_and_leave_other_rows_alone():
    rng = np.random.default_rng(0)
    start = rng.normal(size=(ROWS, DIM)).astype(np.float32)
    var = keras.Variable(start)
    opt = LazyAdam(learning_rate=0.01)
    opt.build([var])
    m, v = opt._momentums[0], opt._velocities[0]
    state = (start, np.zeros_like(start), np.zeros_like(start))
    batches = [[1, 3, 3], [5], [1, 6, 6]]
    for step, ids in enumerate(batches, start=1):
        values = rng.normal(size=(len(ids), DIM)).astype(np.float32)
        before = [x.numpy().copy() for x in (var, m, v)]
        opt.apply([_grad(ids, values)], [var])
        state = _reference_step(state, ids, values, step, lr=0.01)
        for name, got, want in zip(("var", "m", "v"), (var, m, v), state, strict=True):
            np.testing.assert_allclose(got.numpy(), want, atol=1e-6, rtol=1e-5, err_msg=name)
            assert _moved_rows(before[0 if name == "var" else 1 if name == "m" else 2],
                               got.numpy()) == sorted(set(ids)), name
        state = tuple(x.numpy() for x in (var, m, v))


def test_rows_that_left_the_batch_stop_moving_unlike_keras_adam():
    """Step 1 touches rows {1, 3}, step 2 row {5}: only row 5 moves at step 2."""
    start = np.zeros((ROWS, DIM), np.float32)
    step1 = _grad([1, 3], np.ones((2, DIM)))
    step2 = _grad([5], np.ones((1, DIM)))
    moved = {}
    for name, opt in [("lazy", LazyAdam(0.1)), ("keras", keras.optimizers.Adam(0.1))]:
        var = keras.Variable(start)
        opt.build([var])
        opt.apply([step1], [var])
        after1 = var.numpy().copy()
        m1 = opt.variables[2].numpy().copy() if name == "keras" else opt._momentums[0].numpy()
        opt.apply([step2], [var])
        moved[name] = _moved_rows(after1, var.numpy())
        if name == "lazy":
            m, v = opt._momentums[0].numpy(), opt._velocities[0].numpy()
            assert _moved_rows(m1, m) == [5]
            np.testing.assert_allclose(m[[1, 3]], 1 - B1, rtol=1e-6)  # not decayed at step 2
            np.testing.assert_allclose(v[[1, 3]], 1 - B2, rtol=1e-6)
    assert moved["lazy"] == [5]
    assert moved["keras"] == [1, 3, 5]


def test_dense_gradients_match_keras_adam():
    rng = np.random.default_rng(1)
    start = rng.normal(size=(ROWS, DIM)).astype(np.float32)
    ours, theirs = keras.Variable(start), keras.Variable(start)
    lazy, adam = LazyAdam(0.05), keras.optimizers.Adam(0.05)
    for _ in range(5):
        g = tf.constant(rng.normal(size=(ROWS, DIM)).astype(np.float32))
        lazy.apply([g], [ours])
        adam.apply([g], [theirs])
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-6, rtol=0)


def test_sparse_gradient_touching_every_row_matches_keras_adam():
    """When every row is in every batch, lazy Adam is Adam."""
    rng = np.random.default_rng(2)
    start = rng.normal(size=(ROWS, DIM)).astype(np.float32)
    ours, theirs = keras.Variable(start), keras.Variable(start)
    lazy, adam = LazyAdam(0.05), keras.optimizers.Adam(0.05)
    for _ in range(4):
        ids = np.concatenate([np.arange(ROWS), [2, 2]])
        g = _grad(ids, rng.normal(size=(len(ids), DIM)))
        lazy.apply([g], [ours])
        adam.apply([tf.convert_to_tensor(g)], [theirs])
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-6, rtol=0)


def test_learning_rate_schedule():
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5)
    start = np.zeros((ROWS, DIM), np.float32)
    var = keras.Variable(start)
    opt = LazyAdam(learning_rate=schedule)
    state = (start, start.copy(), start.copy())
    for step, ids in enumerate([[0, 2], [2, 4], [4]], start=1):
        values = np.full((len(ids), DIM), 0.5)
        opt.apply([_grad(ids, values)], [var])
        state = _reference_step(state, ids, values, step, lr=0.1 * 0.5 ** (step - 1))
        np.testing.assert_allclose(var.numpy(), state[0], atol=1e-6, rtol=1e-5)
    config = opt.get_config()
    assert isinstance(LazyAdam.from_config(config)._learning_rate,
                      keras.optimizers.schedules.ExponentialDecay)


def test_clipnorm_deduplicates_then_clips_and_stays_sparse():
    # Rows 1 (twice) and 4: the dense gradient is [[3, 4, 0] at row 1, [0, 0, 0] at row 4].
    g = _grad([1, 1, 4], [[1.5, 2.0, 0.0], [1.5, 2.0, 0.0], [0.0, 0.0, 0.0]])
    opt = LazyAdam(clipnorm=1.0)
    (clipped,) = opt._clip_gradients([g])
    assert isinstance(clipped, tf.IndexedSlices)
    dense = tf.convert_to_tensor(clipped).numpy()
    np.testing.assert_allclose(dense[1], [0.6, 0.8, 0.0], atol=1e-6)
    assert not dense[[0, 2, 3, 5, 6, 7]].any()


def test_global_clipnorm_and_clipvalue_stay_sparse():
    g = _grad([2, 2], [[3.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    dense_g = tf.constant([[0.0, 8.0]])
    clipped, dense = LazyAdam(global_clipnorm=5.0)._clip_gradients([g, dense_g])
    assert isinstance(clipped, tf.IndexedSlices)
    np.testing.assert_allclose(tf.convert_to_tensor(clipped).numpy()[2], [3.0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(dense.numpy(), [[0.0, 4.0]], atol=1e-6)  # global norm 10
    (capped,) = LazyAdam(clipvalue=4.0)._clip_gradients([g])
    assert isinstance(capped, tf.IndexedSlices)
    np.testing.assert_allclose(tf.convert_to_tensor(capped).numpy()[2], [4.0, 0, 0])


@pytest.mark.parametrize("clip", [{"clipnorm": 0.5}, {"clipvalue": 0.1}])
def test_clipping_in_apply_moves_only_touched_rows(clip):
    var = keras.Variable(np.zeros((ROWS, DIM), np.float32))
    opt = LazyAdam(0.1, **clip)
    opt.apply([_grad([3, 3, 6], np.full((3, DIM), 2.0))], [var])
    assert _moved_rows(np.zeros((ROWS, DIM)), var.numpy()) == [3, 6]


def test_get_config_round_trip():
    opt = LazyAdam(learning_rate=0.02, beta_1=0.8, beta_2=0.99, epsilon=1e-5, clipnorm=2.0,
                   name="lazy")
    config = opt.get_config()
    for key, value in {"beta_1": 0.8, "beta_2": 0.99, "epsilon": 1e-5, "clipnorm": 2.0,
                       "name": "lazy"}.items():
        assert config[key] == value
    assert config["learning_rate"] == pytest.approx(0.02)
    again = LazyAdam.from_config(config)
    assert isinstance(again, LazyAdam)
    assert again.get_config() == config
    assert keras.optimizers.deserialize(keras.optimizers.serialize(opt)).get_config() == config


@pytest.mark.parametrize("jit_compile", [False, True])
def test_inside_tf_function(jit_compile):
    var = keras.Variable(np.zeros((ROWS, DIM), np.float32))
    opt = LazyAdam(0.1)
    opt.build([var])

    @tf.function(jit_compile=jit_compile)
    def step(ids):
        g = tf.IndexedSlices(tf.ones((tf.size(ids), DIM)), ids, tf.constant([ROWS, DIM],
                                                                            tf.int64))
        opt.apply([g], [var])

    step(tf.constant([1, 3], tf.int64))
    after1 = var.numpy().copy()
    step(tf.constant([5, 5], tf.int64))
    assert _moved_rows(after1, var.numpy()) == [5]
    assert int(opt.iterations.numpy()) == 2


def _tiny_model(optimizer, jit_compile="auto"):
    model = keras.Sequential([
        keras.Input((2,), dtype="int32"),
        keras.layers.Embedding(ROWS, DIM, name="embedding"),
        keras.layers.Flatten(),
        keras.layers.Dense(1),
    ])
    model.compile(optimizer=optimizer, loss="mse", jit_compile=jit_compile)
    return model


@pytest.mark.parametrize("jit_compile", ["auto", True])
def test_model_fit_moves_only_rows_in_the_data(jit_compile):
    model = _tiny_model(LazyAdam(0.05), jit_compile)
    table = model.get_layer("embedding").embeddings
    x = np.array([[1, 2], [2, 5]])
    y = np.array([[1.0], [-1.0]])
    model.fit(x, y, epochs=1, batch_size=2, verbose=0)  # rows 1, 2, 5 get moments
    before = table.numpy().copy()
    model.fit(x[:1], y[:1], epochs=2, verbose=0)  # only rows 1 and 2 from now on
    assert _moved_rows(before, table.numpy()) == [1, 2]
    assert int(model.optimizer.iterations.numpy()) == 3


def test_save_and_load_a_model_compiled_with_lazy_adam(tmp_path):
    model = _tiny_model(LazyAdam(0.03, beta_1=0.85, clipnorm=1.0))
    x, y = np.array([[1, 2], [3, 4]]), np.array([[1.0], [0.0]])
    model.fit(x, y, epochs=1, verbose=0)
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded.optimizer, LazyAdam)
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    for ours, theirs in zip(model.optimizer.variables, loaded.optimizer.variables, strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    loaded.fit(x, y, epochs=1, verbose=0)  # and it trains on
