"""Keras models rebuilt from their config and weights, and custom layers and training steps
run from their traced graphs (autograder.engine.observer.keras_models, keras_layers; the
library's side: embeddings_course.observe), without a kernel: what the observer computes,
and what it refuses before anything of a config or graph is built."""

from __future__ import annotations

import json
import resource
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from autograder.engine.observer import keras_layers, keras_models
from autograder.engine.observer.ops import Refused
from embeddings_course import checks, ner, observe
from sparse_embeddings.layers import PartiallyFrozenEmbedding

LIBRARY = {("sparse_embeddings.layers", "PartiallyFrozenEmbedding"):
           ("sparse_embeddings>PartiallyFrozenEmbedding", PartiallyFrozenEmbedding)}


def tagger(rate=0.0, lambda_layer=False):
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(20, 4, mask_zero=True)(ids)
    x = keras.layers.Bidirectional(keras.layers.LSTM(3, return_sequences=True, dropout=rate))(x)
    if lambda_layer:
        x = keras.layers.Lambda(lambda t: t * 2)(x)
    return keras.Model(ids, keras.layers.Dense(5)(keras.layers.Dropout(rate)(x)))


def test_a_model_of_keras_layers_is_rebuilt_and_computes_the_same():
    model = tagger(rate=0.25)
    rebuilt = keras_models.rebuild(model.to_json(), model.get_weights())
    batch = np.array([[3, 4, 5, 0], [6, 7, 0, 0]])
    assert rebuilt is not model and isinstance(rebuilt, keras.Model)
    np.testing.assert_allclose(rebuilt(batch), model(batch), atol=1e-6)
    assert rebuilt.count_params() == model.count_params()


def test_a_lambda_is_refused():
    model = tagger(lambda_layer=True)
    with pytest.raises(Refused, match="Lambda"):
        keras_models.rebuild(model.to_json(), model.get_weights())


def test_a_class_of_another_module_is_refused_before_keras_imports_it():
    config = json.loads(tagger().to_json())
    config["config"]["layers"][1].update(module="antigravity", class_name="Popen")
    with pytest.raises(Refused, match="Popen of antigravity"):
        keras_models.rebuild(json.dumps(config), [])
    assert "antigravity" not in sys.modules
    config = json.loads(tagger().to_json())
    config["config"]["layers"][3]["config"]["activation"] = {
        "class_name": "function", "module": "os", "config": "system", "registered_name": None}
    with pytest.raises(Refused, match="'system' of 'os'"):
        keras_models.rebuild(json.dumps(config), [])


def test_a_custom_layer_class_is_refused_and_the_library_layer_only_where_allowed():
    class Doubling(keras.layers.Layer):
        def call(self, x):
            return 2 * x

    model = keras.Sequential([keras.Input((None,), dtype="int32"),
                              keras.layers.Embedding(10, 3), Doubling()])
    with pytest.raises(Refused, match="Doubling"):
        keras_models.rebuild(model.to_json(), model.get_weights())
    library = ner.build_tagger(np.ones((6, 4), np.float32), 3, 5, units=4, dropout=0.0)
    with pytest.raises(Refused, match="PartiallyFrozenEmbedding"):
        keras_models.rebuild(library.to_json(), library.get_weights())
    rebuilt = keras_models.rebuild(library.to_json(), library.get_weights(), LIBRARY)
    np.testing.assert_allclose(rebuilt(np.array([[1, 7, 0]])), library(np.array([[1, 7, 0]])),
                               atol=1e-6)


def test_a_huge_config_is_refused_with_no_memory_taken():
    model = tagger()
    config = json.loads(model.to_json())
    config["config"]["layers"][1]["config"]["input_dim"] = 10**9  # 16 GB of embedding
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(Refused, match="shapes"):
        keras_models.rebuild(json.dumps(config), model.get_weights())
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # kB
    keras_models.rebuild(model.to_json(), model.get_weights())  # nothing left pending


def test_keras_model_fails_the_check_with_the_reason():
    with pytest.raises(checks.CheckFailed, match="build_x.*Lambda"):
        observe.keras_model(tagger(lambda_layer=True), name="build_x(...)")
    with pytest.raises(checks.CheckFailed, match=r"build_x\(...\): got \w+ .*expected a Keras "):
        observe.keras_model(object(), name="build_x(...)")


def test_a_custom_layer_runs_from_its_graph_and_trains_in_the_observers_model():
    pretrained = np.arange(12, dtype=np.float32).reshape(6, 2)
    layer = PartiallyFrozenEmbedding(pretrained, 3)
    ids = np.array([[0, 7, 2], [8, 6, 6]])
    seen = observe.layer_facts(layer, [ids], grads=[[[1, 7, 7]]])
    table = np.concatenate([pretrained, seen["attributes"]["new_rows"]])
    np.testing.assert_allclose(seen["outputs"][0], table[ids])
    (grad,) = seen["grads"][0]
    assert isinstance(grad, tf.IndexedSlices) and sorted(set(grad.indices.numpy())) == [1]
    fresh = observe.layer_facts(layer, [ids], fresh_seed=3)
    assert not np.allclose(fresh["attributes"]["new_rows"], seen["attributes"]["new_rows"])
    table = np.concatenate([pretrained, fresh["attributes"]["new_rows"]])
    np.testing.assert_allclose(fresh["outputs"][0], table[ids])
    rng = np.random.default_rng(0)
    fitted = observe.fit_in_model(layer, rng.integers(0, 9, (16, 3)), rng.normal(size=(16, 1)),
                                  epochs=1, batch_size=8)
    frozen, new = (fitted["attributes"][n] for n in ("pretrained", "new_rows"))
    np.testing.assert_array_equal(fitted["after"][frozen], pretrained)
    assert not np.array_equal(fitted["after"][new], fitted["before"][new])


def test_a_graph_bound_to_no_weight_is_refused():
    layer = PartiallyFrozenEmbedding(np.ones((2, 2), np.float32), 1)
    export = observe.export_layer(layer)
    request = {**{k: export[k] for k in ("graph", "input", "output", "weights")},
               "captures": [[name, 5] for name, _ in export["captures"]], "rank": 2,
               "dtype": "int32", "calls": [np.zeros((1, 1), np.int32)]}
    with pytest.raises(keras_layers.Unusable, match="bound to a weight"):
        keras_layers.observe(request)


def _step(model, optimizer, batch, clip_norm=5.0):
    inputs, tags, lengths = batch
    with tf.GradientTape() as tape:
        loss = ner.masked_cross_entropy(tags, model(inputs, training=True), lengths)
    grads = tape.gradient(loss, model.trainable_variables)
    grads, _ = tf.clip_by_global_norm(grads, clip_norm)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


def test_a_training_step_runs_from_its_graph_with_the_tests_weights():
    model = ner.build_tagger(np.random.default_rng(1).normal(size=(8, 4)).astype(np.float32),
                             6, 5, units=4, dropout=0.0)
    batch = (np.array([[1, 9, 3, 0], [12, 12, 0, 0]]), np.array([[0, 1, 2, 0], [3, 4, 0, 0]]),
             np.array([3, 2]))
    run = observe.train_step_run(_step, model.to_json(), model.get_weights(), batch,
                                 clip_norm=1e-3)
    want = ner.masked_cross_entropy(batch[1], model(batch[0]), batch[2])
    np.testing.assert_allclose(run["loss"], want, atol=1e-6)
    assert "IndexedSlices" in run["kinds"]
    norm = float(tf.linalg.global_norm([g for g in run["grads"] if g is not None]))
    assert abs(norm - 1e-3) < 1e-7
    new = run["names"].index("word_embedding/new_rows")
    assert checks.rows_changed(run["before"][new], run["after"][new]) == [1, 4]

    def numpy_step(model, optimizer, batch, clip_norm=5.0):
        return _step(model, optimizer, batch, clip_norm).numpy()

    with pytest.raises(checks.CheckFailed, match="traced by tf.function"):
        observe.train_step_run(numpy_step, model.to_json(), model.get_weights(), batch)
