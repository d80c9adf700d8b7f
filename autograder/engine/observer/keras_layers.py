"""A Keras layer of the student's that crossed as a traced graph and its weights, run here.

A custom layer (a class the student wrote) cannot be rebuilt from a config: its code is the
student's. The kernel sends instead its `call` traced by `tf.function` for the test's input
spec, as a `GraphDef`, with each weight's name, value and whether it trains, and which of
them the graph reads (`embeddings_course.observe.export_layer`). `observe(request)` makes
its own variables from those values (the trainable ones from values of its own, with
`fresh_seed`: the graph must read them, not constants), wraps the
imported graph as a Keras layer of its own (`GraphLayer`) and computes every fact itself:
the outputs for the test's inputs, the gradient of `sum(output ** 2)` for the trainable
weights (an `IndexedSlices` where the graph gathers rows), and a training by `model.fit`
with AdamW inside its own model. What trains is what the kernel said trains: a layer whose
weights say so computes the answer. The graph is checked by `ops.check` before anything of
it is built, and `observe` runs in the observer's process (`serve`), whose memory is capped
and whose time is the test's.
"""

from __future__ import annotations

import numpy as np

from autograder.engine.observer import ops

MAX_CALLS = 16


class Unusable(ValueError):
    """A request whose names or values do not fit its graph."""


def _tensor_name(name: str) -> str:
    return name if ":" in name else f"{name}:0"


def _layer_class():
    import keras
    import tensorflow as tf
    from tensorflow.python.eager import tape

    class GraphLayer(keras.layers.Layer):
        """The imported graph as a layer: its weights are this layer's own variables."""

        def __init__(self, graph_def, request, values, **kwargs):
            super().__init__(**kwargs)
            self.own = [self.add_weight(shape=value.shape, dtype=value.dtype.name,
                                        trainable=bool(trainable), name=f"weight_{k}",
                                        initializer=keras.initializers.Constant(value))
                        for k, ((_, _, trainable), value) in enumerate(
                            zip(request["weights"], values, strict=True))]
            spec = tf.TensorSpec([None] * int(request["rank"]), tf.as_dtype(request["dtype"]))
            captures = [(_tensor_name(str(name)), int(k)) for name, k in request["captures"]]

            def imported(ids):
                graph = tf.compat.v1.get_default_graph()
                bound = {_tensor_name(str(request["input"])): ids}
                bound.update({name: graph.capture(self.own[k].value.handle)
                              for name, k in captures})
                return tf.graph_util.import_graph_def(
                    graph_def, input_map=bound, name="student",
                    return_elements=[_tensor_name(str(request["output"]))])[0]

            self.dtype_in = spec.dtype
            self.function = tf.compat.v1.wrap_function(imported, [spec])

        def call(self, ids):
            for variable in self.own:  # read inside the imported graph: watched here
                if variable.trainable:
                    tape.variable_accessed(variable.value)
            return self.function(tf.cast(ids, self.dtype_in))

    return GraphLayer


def _check(request: dict) -> tuple:
    graph_def = ops.check(np.asarray(request["graph"], np.uint8).tobytes())
    placeholders = {n.name for n in graph_def.node if n.op == "Placeholder"}
    weights = request["weights"]
    for name, k in request["captures"]:
        if str(name).split(":")[0] not in placeholders or not 0 <= int(k) < len(weights):
            raise Unusable(f"the capture {name!r} is not a placeholder bound to a weight")
    if str(request["input"]).split(":")[0] not in placeholders:
        raise Unusable("the graph's input is not a placeholder")
    values = [np.asarray(value) for _, value, _ in weights]
    if any(v.dtype.kind not in "fiu" for v in values):
        raise Unusable("a weight is not an array of numbers")
    if len(request.get("calls", [])) + len(request.get("grads", [])) > MAX_CALLS:
        raise Unusable(f"at most {MAX_CALLS} calls")
    return graph_def, values


def _part(grad):
    import tensorflow as tf

    if grad is None:
        return None
    if isinstance(grad, tf.IndexedSlices):
        return {"indexed_slices": True, "values": grad.values.numpy(),
                "indices": grad.indices.numpy(), "dense_shape": None}
    return np.asarray(grad)


def observe(request: dict) -> dict:
    """Run one layer the kernel exported. `request` (data only): "graph" (uint8 GraphDef),
    "input" and "output" (tensor names), "rank" and "dtype" of the input, "weights"
    ([[name, value, trainable], ...]), "captures" ([[placeholder, weight index], ...]),
    "fresh_seed" (None: the values sent; else normal values of that seed for the trainable
    weights),
    "calls" (inputs to run), "grads" (inputs for the gradient of sum(output ** 2)), "fit"
    (None, or {"X", "y", "epochs", "batch_size", "learning_rate", "weight_decay", "seed"}).
    Returns {"values": the weights' values the runs started from, "outputs": per call,
    "grads": per input, one per trainable weight (arrays, or an IndexedSlices' parts),
    "fit": {"before", "after", "trainable"} or None}."""
    import keras
    import tensorflow as tf

    graph_def, values = _check(request)
    seed = request.get("fresh_seed")
    if seed is not None:
        rng = np.random.default_rng(int(seed))
        values = [rng.normal(size=v.shape).astype(v.dtype)
                  if v.dtype.kind == "f" and trainable else v
                  for v, (_, _, trainable) in zip(values, request["weights"], strict=True)]
    layer = _layer_class()(graph_def, request, values)
    outputs = [np.asarray(layer(tf.constant(np.asarray(ids)))) for ids in request.get("calls", [])]
    grads = []
    for ids in request.get("grads", []):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(layer(tf.constant(np.asarray(ids)))))
        grads.append([_part(g) for g in tape.gradient(loss, layer.trainable_weights)])
    fitted = None
    fit = request.get("fit")
    if fit:
        keras.utils.set_random_seed(int(fit.get("seed", 0)))
        X, y = np.asarray(fit["X"]), np.asarray(fit["y"], np.float32)
        model = keras.Sequential([keras.Input((X.shape[1],), dtype=layer.dtype_in.name), layer,
                                  keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1)])
        model.compile(loss="mse", optimizer=keras.optimizers.AdamW(
            float(fit["learning_rate"]), weight_decay=float(fit["weight_decay"])))
        before = [np.array(w.numpy()) for w in layer.own]
        model.fit(X, y, epochs=int(fit["epochs"]), batch_size=int(fit["batch_size"]),
                  verbose=0)
        fitted = {"before": before, "after": [np.array(w.numpy()) for w in layer.own],
                  "trainable": [bool(w.trainable) for w in layer.own]}
    return {"values": values, "outputs": outputs, "grads": grads, "fit": fitted}
