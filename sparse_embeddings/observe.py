"""Observations: library functions that run the learner's code and return only data.

A test cell asks things of a learner's object that need the live object: a gradient
through it, its graph inside a `tf.function`, a training step of a model. Such a question
is an *observation*: a function here (or in another library module) registered with
`@observation`, that takes the learner's objects and data and returns data (arrays,
tensors, `IndexedSlices`, lists, dicts). The assertions stay in the test.

In JupyterLab (Validate) an observation is an ordinary call. While a notebook is graded,
the test runs in the trusted grader and the learner's objects stay in the sandboxed
kernel; a call of an observation with any of them as an argument is sent there, by name,
and only its data comes back (autograder.engine.trusted.testcells). So an observation can be
faked only by
computing the right answer.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

# "module:qualname" -> the plain function, what the kernel runs when asked by name
REGISTRY: dict = {}
_ROUTER: list = [None]  # the trusted grader's router while it runs a test cell


def is_remote(value) -> bool:
    """Whether `value` is an object of the notebook's kernel seen by the grader."""
    return getattr(type(value), "_course_grade_remote", False) is True


def _reaches_remote(value, depth: int = 0) -> bool:
    if is_remote(value):
        return True
    if depth > 8:
        return False
    if isinstance(value, (list, tuple, set)):
        return any(_reaches_remote(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_reaches_remote(v, depth + 1) for v in value.values())
    return False


def observation(function):
    """Register `function` as an observation (see the module's docstring)."""
    name = f"{function.__module__}:{function.__qualname__}"
    REGISTRY[name] = function

    @functools.wraps(function)
    def observed(*args, **kwargs):
        router = _ROUTER[0]
        if router is not None and _reaches_remote((args, kwargs)):
            return router.observe(name, args, kwargs)
        return function(*args, **kwargs)

    observed.observation_name = name
    return observed


@contextlib.contextmanager
def routed(router):
    """While the block runs, observations of remote objects go to `router`."""
    previous = _ROUTER[0]
    _ROUTER[0] = router
    try:
        yield
    finally:
        _ROUTER[0] = previous


def router():
    return _ROUTER[0]


# ---------------------------------------------------------------------------------------
# Observations the tests use
# ---------------------------------------------------------------------------------------

def _sources(fn, args, sources):
    """What to differentiate: "trainable_weights" (fn's), or positions in args (a tensor
    is watched; a variable, or a list of them, is itself)."""
    if sources == "trainable_weights":
        return list(fn.trainable_weights), False
    picked = [args[i] for i in sources]
    flat, nested = [], len(picked) == 1 and isinstance(picked[0], (list, tuple))
    for item in (picked[0] if nested else picked):
        flat.append(item)
    return flat, nested


@observation
def gradients(fn, *args, sources=(0,), upstream=None, reduce: str = "sum", training=None,
              **kwargs):
    """`fn(*args, **kwargs)` under a `tf.GradientTape`; returns `(output, grads)`.

    The loss differentiated is `sum(output * upstream)` (`reduce="sum"`; the output itself
    when it is a scalar and no upstream is given) or `sum(output ** 2)`
    (`reduce="sum_squares"`). `sources` are positions in `args` (a tensor there is
    watched) or "trainable_weights" (those of `fn`, a layer or model). `grads` is a list
    in the order of the sources (an `IndexedSlices` stays one), or `None` entries.
    """
    import tensorflow as tf

    args = list(args)
    if sources != "trainable_weights":
        for i in sources:
            if not isinstance(args[i], (tf.Variable, list, tuple)):
                args[i] = tf.convert_to_tensor(args[i])
    targets, _ = _sources(fn, args, sources)
    if training is not None:
        kwargs["training"] = training
    with tf.GradientTape() as tape:
        for target in targets:
            if isinstance(target, tf.Tensor):
                tape.watch(target)
        output = fn(*args, **kwargs)
        out = tf.convert_to_tensor(output)
        if reduce == "sum_squares":
            loss = tf.reduce_sum(out ** 2)
        elif upstream is not None:
            loss = tf.reduce_sum(out * tf.cast(upstream, out.dtype))
        else:
            loss = tf.reduce_sum(out)
    return output, tape.gradient(loss, targets)


@observation
def in_tf_function(fn, *args, **kwargs):
    """`fn(*args, **kwargs)` run as a `tf.function` (traced, as a training loop runs it)."""
    import tensorflow as tf

    return tf.function(fn)(*args, **kwargs)


@observation
def graph_op_types(fn, *fixed, shape=(None,), dtype="int64"):
    """The types of the operations of `lambda x: fn(*fixed, x)` traced by `tf.function`
    for an input of `shape` and `dtype`: what the graph would run."""
    import tensorflow as tf

    traced = tf.function(lambda x: fn(*fixed, x)).get_concrete_function(
        tf.TensorSpec(list(shape), tf.as_dtype(dtype)))
    return [op.type for op in traced.graph.get_operations()]


@observation
def type_names(obj) -> list[str]:
    """`module.qualname` of each class `obj` is an instance of."""
    return [f"{c.__module__}.{c.__qualname__}" for c in type(obj).__mro__]


@observation
def call_method(obj, method: str, *args, **kwargs):
    """`getattr(obj, method)(*args, **kwargs)`; its result, or the error's kind and
    message as `{"raised": name, "message": text}`."""
    try:
        return {"result": getattr(obj, method)(*args, **kwargs)}
    except Exception as error:  # noqa: BLE001 - what was raised is the observation
        return {"raised": type(error).__name__, "message": str(error)[:500]}


@observation
def optimizer_step(model, inputs, optimizer: str = "AdamW", learning_rate: float = 0.1,
                   weight_decay: float = 0.1):
    """One step of a Keras `optimizer` on `sum(model(inputs) ** 2)`. Returns a dict: the
    gradients (in the order of `model.trainable_weights`), and every weight's value before
    and after the step (in the order of `model.weights`) with its shape."""
    import keras
    import tensorflow as tf

    before = [np.array(w.numpy()) for w in model.weights]
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.convert_to_tensor(model(inputs)) ** 2)
    grads = tape.gradient(loss, model.trainable_weights)
    make = {"AdamW": lambda: keras.optimizers.AdamW(learning_rate, weight_decay=weight_decay),
            "Adam": lambda: keras.optimizers.Adam(learning_rate),
            "SGD": lambda: keras.optimizers.SGD(learning_rate)}[optimizer]
    make().apply_gradients(zip(grads, model.trainable_weights, strict=True))
    return {"grads": list(grads), "before": before,
            "after": [np.array(w.numpy()) for w in model.weights]}


@observation
def fit_in_model(layer, X, y, *, epochs: int = 2, batch_size: int = 8,
                 learning_rate: float = 0.05, weight_decay: float = 0.1, seed: int = 0):
    """`layer` (an embedding) trained inside `Sequential([Input, layer, average, Dense])`
    by `model.fit` with AdamW. Returns every weight of the layer before and after
    (in the order of `layer.weights`), with which of them are trainable."""
    import keras

    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((np.shape(X)[1],), dtype="int32"), layer,
                              keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.AdamW(learning_rate, weight_decay=weight_decay),
                  loss="mse")
    before = [np.array(w.numpy()) for w in layer.weights]
    model.fit(np.asarray(X), np.asarray(y), epochs=epochs, batch_size=batch_size, verbose=0)
    return {"before": before, "after": [np.array(w.numpy()) for w in layer.weights],
            "trainable": [bool(w.trainable) for w in layer.weights]}


@observation
def train_step_run(step_fn, model_json: str, weights, batch, *, clip_norm: float = 5.0,
                   learning_rate: float = 0.01, in_function: bool = False):
    """`step_fn(model, optimizer, batch, clip_norm=...)` on a model rebuilt here from its
    Keras JSON and weights (the library's tagger, made by the grader), with a LazyAdam that
    keeps the gradients it is given. Returns the step's loss, the gradients the optimizer
    got (in the order of the trainable weights), and every weight before and after."""
    import keras
    import tensorflow as tf

    from sparse_embeddings.optimizers import LazyAdam

    class SpyAdam(LazyAdam):
        seen: list = []

        def apply_gradients(self, grads_and_vars, *args, **kwargs):
            grads_and_vars = list(grads_and_vars)
            SpyAdam.seen = [g for g, _ in grads_and_vars]
            return super().apply_gradients(grads_and_vars, *args, **kwargs)

    model = keras.models.model_from_json(model_json)
    model.set_weights([np.asarray(w) for w in weights])
    before = [np.array(w.numpy()) for w in model.weights]
    batch = tuple(tf.convert_to_tensor(b) for b in batch)
    step = tf.function(step_fn) if in_function else step_fn
    loss = step(model, SpyAdam(learning_rate), batch, clip_norm=clip_norm)
    # inside a tf.function the optimizer saw symbolic tensors: only the loss and weights
    spied = [] if in_function else SpyAdam.seen
    seen = [g if isinstance(g, tf.IndexedSlices) or g is None else tf.convert_to_tensor(g)
            for g in spied]
    return {"loss": tf.convert_to_tensor(loss), "grads": seen,
            "kinds": [type(g).__name__ for g in spied],
            "names": [w.path if hasattr(w, "path") else w.name for w in model.weights],
            "before": before, "after": [np.array(w.numpy()) for w in model.weights]}
