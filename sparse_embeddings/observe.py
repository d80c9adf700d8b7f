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


def observation(function=None, *, graded: str | None = None):
    """Register `function` as an observation (see the module's docstring). With `graded`,
    the name of a function `graded(router, *args, **kwargs)` of this module, an
    observation of the kernel's objects is that function, run in the grader: it asks the
    kernel only for an export (data) and has the observer compute the facts from it
    (`_graded_gradients` and the others below); `function` is then what Validate runs,
    on the live objects."""
    if function is None:
        return functools.partial(observation, graded=graded)
    name = f"{function.__module__}:{function.__qualname__}"
    REGISTRY[name] = function

    @functools.wraps(function)
    def observed(*args, **kwargs):
        router = _ROUTER[0]
        if router is not None and _reaches_remote((args, kwargs)):
            if graded is not None:
                return globals()[graded](router, *args, **kwargs)
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


@observation(graded="_graded_gradients")
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


@observation(graded="_graded_in_tf_function")
def in_tf_function(fn, *args, **kwargs):
    """`fn(*args, **kwargs)` run as a `tf.function` (traced, as a training loop runs it)."""
    import tensorflow as tf

    return tf.function(fn)(*args, **kwargs)


@observation(graded="_graded_graph_op_types")
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


# ---------------------------------------------------------------------------------------
# Graphs: what the kernel exports, and the facts the grader computes from them
# ---------------------------------------------------------------------------------------
# While a notebook is graded, `gradients`, `in_tf_function` and `graph_op_types` of a
# kernel's function ask the kernel only for `export`: the function traced by
# `tf.function` for the shapes and dtypes of the test's inputs (never their values), as a
# GraphDef with the values of the variables it captured. The observer
# (autograder.engine.observer) checks the graph's ops against its allow-list, binds its own
# variables and the test's inputs, runs it and takes the gradients itself. A kernel that
# sends another graph than its function's is graded on what that graph computes.

SPEC = "course_grade_spec"  # marks an argument that the export traces as an input


def _traced_value(spec, tf):
    kind = spec.get(SPEC)
    if kind == "tensor":
        return tf.TensorSpec([None if d is None else int(d) for d in spec["shape"]],
                             tf.as_dtype(str(spec["dtype"])))
    if kind == "variable":
        return tf.Variable(tf.zeros([int(d) for d in spec["shape"]], str(spec["dtype"])),
                           trainable=bool(spec["trainable"]))
    raise ValueError(f"not a spec: {kind!r}")


def _is_spec(value) -> bool:
    if isinstance(value, dict):
        return SPEC in value
    return isinstance(value, list) and bool(value) and all(
        isinstance(v, dict) and SPEC in v for v in value)


@observation
def export(fn, args, kwargs=None):
    """`fn(*args, **kwargs)` traced by `tf.function`, as data: each argument that is a
    spec (`{SPEC: "tensor", "shape", "dtype"}`, `{SPEC: "variable", ...}` or a list of
    them) is an input of the graph; any other is used as it is. Returns the GraphDef's
    bytes (uint8), the names of its inputs (in the order of the specs, flattened) and
    outputs, whether the output is one tensor, and each captured tensor: its placeholder,
    its value, whether it is a trainable variable, and its position in
    `fn.trainable_weights` (-1: none)."""
    import tensorflow as tf

    target = getattr(fn, "python_function", fn)  # a tf.function: traced flat
    positions = [i for i, a in enumerate(args) if _is_spec(a)]
    traced = [[_traced_value(s, tf) for s in args[i]] if isinstance(args[i], list)
              else _traced_value(args[i], tf) for i in positions]

    def call(*values):
        full = list(args)
        for i, value in zip(positions, values, strict=True):
            full[i] = value
        return target(*full, **dict(kwargs or {}))

    concrete = tf.function(call).get_concrete_function(*traced)
    graph = concrete.graph
    flat = len(tf.nest.flatten(traced, expand_composites=True))
    weights = [w if isinstance(w, tf.Variable) else getattr(w, "value", w)
               for w in getattr(fn, "trainable_weights", [])]
    by_handle = {id(v.handle): v for v in [*concrete.variables, *weights]
                 if hasattr(v, "handle")}
    weight_of = {id(w.handle): k for k, w in enumerate(weights) if hasattr(w, "handle")}
    captures = []
    for tensor, placeholder in zip(concrete.captured_inputs, graph.inputs[flat:],
                                   strict=True):
        variable = by_handle.get(id(tensor))
        value = variable.numpy() if variable is not None else np.asarray(tensor)
        captures.append({"name": placeholder.name, "value": np.asarray(value),
                         "resource": tensor.dtype == tf.resource,
                         "trainable": bool(variable is not None and variable.trainable),
                         "weight": weight_of.get(id(tensor), -1)})
    outputs = tf.nest.flatten(concrete.structured_outputs, expand_composites=True)
    data = graph.as_graph_def().SerializeToString()
    return {"graph": np.frombuffer(data, np.uint8).copy(),
            "inputs": [t.name for t in graph.inputs[:flat]],
            "outputs": [t.name for t in outputs if t is not None],
            "single": isinstance(concrete.structured_outputs, tf.Tensor),
            "captures": captures}


def _describe(args, tf):
    """The export's arguments for the test's `args`, and what the observer feeds: a
    variable of the grader (or a list of them) is a variable input, fed its value; a
    tensor, array or list of numbers an input of its shape and dtype; a kernel's object,
    a Python scalar or None stays as it is."""
    described, feeds = [], []  # feeds: (kind, value, trainable) in the graph's order

    def variable(v):
        feeds.append(("variable", np.asarray(v.numpy()), bool(v.trainable)))
        return {SPEC: "variable", "shape": list(v.shape), "dtype": v.dtype.name,
                "trainable": bool(v.trainable)}

    for arg in args:
        if is_remote(arg) or arg is None or isinstance(arg, (bool, int, float, str)):
            described.append(arg)
        elif isinstance(arg, tf.Variable):
            described.append(variable(arg))
        elif isinstance(arg, (list, tuple)) and arg and all(isinstance(v, tf.Variable)
                                                            for v in arg):
            described.append([variable(v) for v in arg])
        else:
            value = np.asarray(arg.numpy() if isinstance(arg, tf.Tensor) else arg)
            if value.dtype.kind not in "biuf":
                raise TypeError(f"an argument of dtype {value.dtype} cannot be traced")
            feeds.append(("input", value, False))
            described.append({SPEC: "tensor", "shape": list(value.shape),
                              "dtype": value.dtype.name})
    return described, feeds


def _retold(error, what: str):
    """The kernel's error while tracing, of the same kind, saying what the grader did."""
    import tensorflow as tf

    message = (f"{what} must be traceable by tf.function (the grader runs it as a graph); "
               f"tracing it raised: {error}")
    if isinstance(error, tf.errors.OpError):
        return type(error)(None, None, message)
    try:
        return type(error)(message)
    except Exception:  # noqa: BLE001 - a kind that takes other arguments
        return RuntimeError(message)


def _exported(router, fn, args, kwargs, what):
    import tensorflow as tf

    described, feeds = _describe(args, tf)
    try:
        data = router.observe(export.observation_name, (fn, described, kwargs), {})
    except Exception as error:  # noqa: BLE001 - whatever tracing raised, said as such
        raise _retold(error, what) from None
    if not isinstance(data, dict) or not {"graph", "inputs", "outputs",
                                          "captures"} <= set(data):
        raise TypeError("the kernel's export is not a traced graph")
    names = [str(n) for n in data["inputs"]]
    if len(names) != len(feeds):
        raise TypeError("the kernel's export has other inputs than the test's arguments")
    request = {"graph": np.asarray(data["graph"], np.uint8), "inputs": [], "variables": [],
               "outputs": [str(n) for n in data["outputs"]]}
    where = []  # per feed: ("input" | "variable", its position in the request)
    for name, (kind, value, trainable) in zip(names, feeds, strict=True):
        pool = request["inputs" if kind == "input" else "variables"]
        where.append((kind, len(pool)))
        pool.append([name, value] if kind == "input" else [name, value, trainable])
    weights = []
    for capture in data["captures"]:
        value = np.asarray(capture["value"])
        if capture.get("resource"):
            if int(capture.get("weight", -1)) >= 0:
                weights.append((int(capture["weight"]), len(request["variables"])))
            request["variables"].append([str(capture["name"]), value,
                                         bool(capture.get("trainable"))])
        else:
            request["inputs"].append([str(capture["name"]), value])
    return request, where, [k for _, k in sorted(weights)], bool(data.get("single", True))


def _tensor(value, tf):
    if isinstance(value, dict) and value.get("indexed_slices"):
        shape = value.get("dense_shape")
        return tf.IndexedSlices(tf.constant(value["values"]), tf.constant(value["indices"]),
                                None if shape is None else tf.constant(shape))
    return None if value is None else tf.constant(value)


def _graded_gradients(router, fn, *args, sources=(0,), upstream=None, reduce="sum",
                      training=None, **kwargs):
    import tensorflow as tf

    if training is not None:
        kwargs["training"] = training
    request, where, weights, single = _exported(router, fn, args, kwargs, "the function")
    if sources == "trainable_weights":
        wrt = [["variable", k] for k in weights]
    else:
        wrt, feed = [], 0
        positions = {}
        for i, arg in enumerate(args):  # the feeds each argument became
            count = len(arg) if isinstance(arg, (list, tuple)) and arg and all(
                isinstance(v, tf.Variable) for v in arg) else 0 if (
                is_remote(arg) or arg is None or isinstance(arg, (bool, int, float, str))) \
                else 1
            positions[i] = list(range(feed, feed + count))
            feed += count
        for i in sources:
            wrt += [list(where[k]) for k in positions[i]]
    request.update(wrt=wrt, reduce=reduce,
                   upstream=None if upstream is None else np.asarray(upstream))
    got = router.observer_run(request)
    outputs = [tf.constant(o) for o in got["outputs"]]
    grads = [_tensor(g, tf) for g in got["grads"]]
    return (outputs[0] if single else outputs), grads


def _graded_in_tf_function(router, fn, *args, **kwargs):
    import tensorflow as tf

    request, _, _, single = _exported(router, fn, args, kwargs, "the function")
    outputs = [tf.constant(o) for o in router.observer_run(request)["outputs"]]
    return outputs[0] if single else outputs


def _graded_graph_op_types(router, fn, *fixed, shape=(None,), dtype="int64"):
    spec = {SPEC: "tensor", "shape": list(shape), "dtype": str(dtype)}
    try:
        data = router.observe(export.observation_name, (fn, [*fixed, spec], None), {})
    except Exception as error:  # noqa: BLE001 - whatever tracing raised, said as such
        raise _retold(error, "the function") from None
    if not isinstance(data, dict) or "graph" not in data:
        raise TypeError("the kernel's export is not a traced graph")
    return router.observer_op_types(np.asarray(data["graph"], np.uint8))
