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


@observation(graded="_graded_variable_writes")
def variable_writes(fn, *args, **kwargs):
    """Which rows of which variables `fn(*args, **kwargs)` writes, from its graph traced by
    `tf.function` and run once on copies of the variables among `args` (they stay as they
    are). Returns one dict per write the graph makes: {"op": the op's type, "variable":
    the position of the variable among the variables of `args` (-1: another one), "rows":
    the sorted row ids it wrote, or None where it writes the whole variable (an assign) or
    a part the graph does not show (a write inside a loop or a function call)}
    (`embeddings_course.graphwrites`)."""
    import tensorflow as tf

    request, _, _, _ = _exported(_LocalRouter(), fn, args, kwargs, "the function")
    return _writes_run_here(request, tf)


class _LocalRouter:
    """What `_exported` asks of a router, answered in this process (Validate's kernel)."""

    def observe(self, name, args, kwargs):
        return REGISTRY[name](*args, **kwargs)


def _writes_request(request: dict, tf) -> tuple[list, list, object]:
    """The plan of the exported graph's writes (`graphwrites.plan`), the rows of each
    variable and the parsed GraphDef; sets the request's "fetch" and "targets", which make
    the run read what each write was given."""
    from embeddings_course import graphwrites

    graph_def = tf.compat.v1.GraphDef.FromString(np.asarray(request["graph"], np.uint8)
                                                 .tobytes())
    found = graphwrites.plan(graph_def, [str(name) for name, *_ in request["variables"]])
    request["fetch"] = [name for entry in found for name in entry["fetch"]]
    request["targets"] = [entry["node"] for entry in found]
    return found, [int(np.shape(value)[0]) if np.ndim(value) else 1
                   for _, value, _ in request["variables"]], graph_def


def _writes_run_here(request: dict, tf) -> list[dict]:
    """The request's graph run in this process on variables of its own (Validate)."""
    from embeddings_course import graphwrites

    found, rows, graph_def = _writes_request(request, tf)
    graph = tf.Graph()
    with graph.as_default():
        fed = {f"{name.split(':')[0]}:0": tf.compat.v1.placeholder(
            tf.as_dtype(np.asarray(value).dtype), np.shape(value))
            for name, value in request["inputs"]}
        own = [tf.Variable(np.asarray(value)) for _, value, _ in request["variables"]]
        input_map = dict(fed)
        input_map.update({f"{name.split(':')[0]}:0": v.handle
                          for (name, *_), v in zip(request["variables"], own, strict=True)})
        tf.graph_util.import_graph_def(graph_def, input_map=input_map, name="student")
        # an input of the graph is read where it is fed
        fetch = [input_map[name] if name in input_map else
                 graph.get_tensor_by_name(f"student/{name}") for name in request["fetch"]]
        targets = [graph.get_operation_by_name(f"student/{name}")
                   for name in request["targets"]]
        init = [v.initializer for v in own]
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        feed = {fed[f"{name.split(':')[0]}:0"]: np.asarray(value)
                for name, value in request["inputs"]}
        got, _ = session.run((fetch, targets), feed_dict=feed)
    return graphwrites.report(found, got, rows)


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


# ---------------------------------------------------------------------------------------
# Keras models: they cross as config and weights, and are rebuilt where the test runs
# ---------------------------------------------------------------------------------------

# the library's own layers a model may hold: (module, class) -> (registered name, import)
LIBRARY_LAYERS = {("sparse_embeddings.layers", "PartiallyFrozenEmbedding"):
                  ("sparse_embeddings>PartiallyFrozenEmbedding",
                   "sparse_embeddings.layers:PartiallyFrozenEmbedding")}


@observation
def keras_export(model) -> dict:
    """What crosses for a Keras model: its JSON config and its weights, data only."""
    return {"config": model.to_json(), "weights": [np.asarray(w) for w in model.get_weights()]}


def keras_model(obj, name: str = "the model", hint: str | None = None):
    """`obj`, a Keras model, rebuilt from its config and weights by
    `autograder.engine.observer.keras_models.rebuild`: a new model of Keras' own layers
    (and of this library's, named in `LIBRARY_LAYERS`), whose types, layers, outputs and
    gradients a test then reads. While a notebook is graded `obj` stays in the kernel,
    which sends only `keras_export`'s data; in JupyterLab the same rebuild runs on the live
    model, so a model that cannot be graded (a `Lambda` layer, a class of its own) fails
    Validate the same way. A model that cannot be rebuilt fails the check (`CheckFailed`)
    with the reason."""
    import importlib

    from autograder.engine.observer import keras_models
    from embeddings_course import checks

    extra = {}
    for key, (registered, where) in LIBRARY_LAYERS.items():
        module, _, attribute = where.partition(":")
        extra[key] = (registered, getattr(importlib.import_module(module), attribute))
    try:
        exported = keras_export(obj)
    except Exception as error:  # noqa: BLE001 - why it could not be exported is the message
        raise checks.CheckFailed(
            f"{name}: got {type(error).__name__} ({checks.error_line(error)}), expected a "
            "Keras model that can be read." + (f"\nHint: {hint}" if hint else "")) from None
    if not isinstance(exported, dict) or not isinstance(exported.get("weights"), list):
        raise checks.CheckFailed(f"{name} could not be read as a Keras model")
    try:
        return keras_models.rebuild(exported.get("config"), exported["weights"], extra)
    except keras_models.Refused as error:
        raise checks.CheckFailed(f"{name}: {error}." + (f"\nHint: {hint}" if hint else "")) \
            from None


def optimizer_step(model, inputs, optimizer: str = "AdamW", learning_rate: float = 0.1,
                   weight_decay: float = 0.1):
    """One step of a Keras `optimizer` on `sum(model(inputs) ** 2)`, on the model rebuilt
    by `keras_model` (a model of the kernel is rebuilt first; nothing runs there). Returns
    a dict: the gradients (in the order of `model.trainable_weights`), and every weight's
    value before and after the step (in the order of `model.weights`) with its shape."""
    import keras
    import tensorflow as tf

    if is_remote(model):
        model = keras_model(model)
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
def export_layer(layer, rank: int = 2, dtype: str = "int32") -> dict:
    """A Keras layer as data: called once on zeros if it is not built, then its call traced
    by `tf.function` for inputs of `rank` and `dtype`. Returns
    the GraphDef's bytes, its input and output names, each weight's name, value and whether
    it trains, the attributes of the layer that hold each weight, and which weight each
    captured variable of the graph is."""
    import tensorflow as tf

    if not layer.built:
        layer(tf.zeros([1] * int(rank), dtype))
    spec = tf.TensorSpec([None] * int(rank), tf.as_dtype(dtype))
    concrete = tf.function(lambda ids: layer(ids)).get_concrete_function(spec)
    weights = list(layer.weights)
    handles = [w.value.handle for w in weights]  # held: ids stay unique while compared
    position = {id(h): k for k, h in enumerate(handles)}
    captures = []
    for outer, inner in concrete.graph.captures:
        if id(outer) not in position:
            raise ValueError(f"the layer's call reads {inner.name}, which is none of its "
                             "weights")
        captures.append([inner.name, position[id(outer)]])
    attributes = {name: k for name, value in vars(layer).items()
                  for k, w in enumerate(weights) if value is w and not name.startswith("_")}
    data = concrete.graph.as_graph_def().SerializeToString()
    return {"graph": np.frombuffer(data, np.uint8).copy(), "input": concrete.inputs[0].name,
            "output": concrete.outputs[0].name, "captures": captures,
            "weights": [[w.name, np.asarray(w.numpy()), bool(w.trainable)] for w in weights],
            "attributes": attributes}


def _observer_ask(message: dict):
    """`message` answered by the grader's observer process while a notebook is graded
    (within the test's deadline), else here, by the same code (Validate)."""
    router = _ROUTER[0]
    if router is None:
        from autograder.engine.observer import keras_layers

        return keras_layers.observe(message["request"])
    ask = getattr(router, "observer_ask", None)
    if ask is not None:
        return ask(message)
    from autograder.engine.observer import client

    return client.shared().ask(message, router.bridge.deadline)


def layer_facts(layer, calls=(), *, grads=(), fit=None, fresh_seed=None, rank=None,
                dtype="int32") -> dict:
    """Facts of a Keras layer computed by the observer (`autograder.engine.observer.
    keras_layers`) from its traced call and its weights (`export_layer`): the outputs for
    `calls`, the gradients of sum(output ** 2) for `grads` (one list per input, in the
    order of the trainable weights; an `IndexedSlices` stays one), and `fit`'s training
    (`fit_in_model`'s arguments) inside the observer's own model. With `fresh_seed`, every
    trainable weight starts from normal values of that seed instead of its own. Returns a dict:
    "outputs", "grads", "fit", "weights" (per weight: name, attribute, shape, trainable,
    the value the runs started from) and "attributes" (attribute name -> that value)."""
    import tensorflow as tf

    from embeddings_course import checks

    calls = [np.asarray(c.numpy() if isinstance(c, tf.Tensor) else c) for c in calls]
    grads = [np.asarray(g.numpy() if isinstance(g, tf.Tensor) else g) for g in grads]
    ranks = {c.ndim for c in calls + grads} | ({2} if fit else set()) | (
        {int(rank)} if rank is not None else set())
    if len(ranks) > 1:
        raise ValueError(f"inputs of one rank at a time; got ranks {sorted(ranks)}")
    rank = ranks.pop() if ranks else 2
    try:
        export = export_layer(layer, rank, str(dtype))
    except Exception as error:  # noqa: BLE001 - what the layer raised is the message
        raise _retold(error, "the layer") from None
    request = {key: export[key] for key in ("graph", "input", "output", "captures",
                                            "weights")}
    request.update({"rank": rank, "dtype": str(dtype), "calls": calls, "grads": grads,
                    "fresh_seed": fresh_seed,
                    "fit": None if fit is None else {**fit, "X": np.asarray(fit["X"]),
                                                     "y": np.asarray(fit["y"])}})
    try:
        seen = _observer_ask({"op": "keras_layer", "request": request})
    except (ValueError, RuntimeError, tf.errors.OpError) as error:
        raise checks.CheckFailed(f"the layer's graph could not be run: {error}") from None
    names = {k: name for name, k in dict(export.get("attributes") or {}).items()}
    weights = [{"name": str(name), "attribute": names.get(k), "shape": np.shape(value),
                "trainable": bool(trainable), "value": np.asarray(seen["values"][k])}
               for k, (name, value, trainable) in enumerate(export["weights"])]
    return {"outputs": [tf.constant(o) for o in seen["outputs"]],
            "grads": [[_tensor(g, tf) for g in per] for per in seen["grads"]],
            "fit": seen["fit"], "weights": weights,
            "attributes": {w["attribute"]: w["value"] for w in weights if w["attribute"]}}


def fit_in_model(layer, X, y, *, epochs: int = 2, batch_size: int = 8,
                 learning_rate: float = 0.05, weight_decay: float = 0.1, seed: int = 0):
    """`layer` (an embedding) trained inside `Sequential([Input, layer, average, Dense])`
    by `model.fit` with AdamW, by the observer, on its own copy of the layer (its traced
    call and its weights: `layer_facts`). Returns every weight of the layer before and
    after (in the order of `layer.weights`), with which of them are trainable, and
    "attributes": the layer's attribute name of each weight it holds as one -> its index."""
    fit = {"X": X, "y": y, "epochs": epochs, "batch_size": batch_size, "seed": seed,
           "learning_rate": learning_rate, "weight_decay": weight_decay}
    seen = layer_facts(layer, fit=fit)
    return {**seen["fit"], "attributes": {w["attribute"]: k for k, w in enumerate(
        seen["weights"]) if w["attribute"]}}


def _run_graph(request: dict) -> dict:
    """Run one exported graph (`autograder.engine.observer.graphs.run`): through the
    grader's observer where the router offers one, else here (Validate)."""
    runner = getattr(_ROUTER[0], "observer_run", None)
    if runner is not None:
        return runner(request)
    from autograder.engine.observer import graphs

    return graphs.run(request)


@observation
def export_train_step(step_fn, model_json: str, specs, *, clip_norm: float = 5.0) -> dict:
    """`step_fn(model, optimizer, batch, clip_norm=...)` traced by `tf.function` for a batch
    of `specs` (`[shape, dtype]` each), on a model made from `model_json` (its initial
    weights: the test's are bound where the graph runs) and an optimizer that records the
    gradients it is given and applies none. Returns data: the graph's bytes, the names of
    its inputs and outputs (the loss, then each gradient's parts), what each captured
    variable is (a weight of the model by path, or another variable's value) and, per
    gradient, the weight's path and its kind."""
    import keras
    import tensorflow as tf

    from sparse_embeddings.optimizers import LazyAdam

    class Recorder(LazyAdam):
        seen: list = []

        def apply_gradients(self, grads_and_vars, *args, **kwargs):
            Recorder.seen = list(grads_and_vars)

        def apply(self, grads, trainable_variables=None):
            Recorder.seen = list(zip(grads, trainable_variables or [], strict=False))

    model = keras.models.model_from_json(model_json)
    optimizer = Recorder(0.01)

    def traced(*batch):
        loss = step_fn(model, optimizer, tuple(batch), clip_norm=clip_norm)
        flat, parts = [tf.convert_to_tensor(loss)], []
        for grad, variable in Recorder.seen:
            kind = "None" if grad is None else type(grad).__name__
            kind = kind if kind in ("IndexedSlices", "None") else "dense"
            parts.append([variable.path, kind])
            if kind == "IndexedSlices":
                flat += [grad.values, grad.indices]
            elif kind == "dense":
                flat.append(tf.convert_to_tensor(grad))
        traced.parts = parts
        return flat

    concrete = tf.function(traced).get_concrete_function(
        *[tf.TensorSpec(shape, tf.as_dtype(dtype)) for shape, dtype in specs])
    known = {}
    for variable in optimizer.variables:
        known[id(variable.value.handle)] = ("state", variable)
    for variable in model.variables:  # a dropout layer's seed is state, not a weight
        state = variable.path.startswith("seed_generator")
        known[id(variable.value.handle)] = ("state" if state else "weight", variable)
    captures = []
    for outer, inner in concrete.graph.captures:
        kind, variable = known.get(id(outer), ("state", None))
        value = variable.path if kind == "weight" else \
            None if variable is None else np.asarray(variable.numpy())
        captures.append([inner.name, kind, value])
    return {"graph": np.frombuffer(concrete.graph.as_graph_def().SerializeToString(), np.uint8),
            "inputs": [t.name for t in concrete.inputs[:len(specs)]],
            "outputs": [t.name for t in concrete.outputs], "captures": captures,
            "grads": traced.parts}


def _is_the_stub(error: BaseException) -> bool:
    """`raise NotImplementedError()` without a message, as the release's stub raises it,
    seen through tf.function's tracing (which prefixes where in the user's code)."""
    last = (str(error).strip().splitlines() or [""])[-1].strip()
    return isinstance(error, NotImplementedError) and last.rstrip(":") in (
        "", "NotImplementedError")


def train_step_run(step_fn, model_json: str, weights, batch, *, clip_norm: float = 5.0,
                   learning_rate: float = 0.01, in_function: bool = True):
    """`step_fn(model, optimizer, batch, clip_norm=...)`, one step, as a `tf.function`: the
    step is traced where it lives (`export_train_step`, in the kernel while a notebook is
    graded) and its graph run here (`_run_graph`) on the test's batch and on variables
    made here from `model_json` and `weights` (the library's tagger, made by the test).
    The gradients the graph handed the optimizer are then applied here by a `LazyAdam`
    of `learning_rate`. Returns the step's loss, those gradients (in the order given; an
    `IndexedSlices` stays one) and their kinds, and every weight before and after, by
    name. `in_function` is kept for the tests' calls: every step runs traced."""
    import keras
    import tensorflow as tf

    from embeddings_course import checks
    from sparse_embeddings.optimizers import LazyAdam

    model = keras.models.model_from_json(model_json)
    model.set_weights([np.asarray(w) for w in weights])
    by_path = {w.path: w for w in model.weights}
    batch = [np.asarray(tf.convert_to_tensor(b)) for b in batch]
    specs = [[list(b.shape), b.dtype.name] for b in batch]
    try:
        export = export_train_step(step_fn, model_json, specs, clip_norm=float(clip_norm))
    except Exception as error:  # noqa: BLE001 - what failed is the message
        if _is_the_stub(error):  # the release's train_step: not answered, not a failure
            raise NotImplementedError() from None
        raise checks.CheckFailed(
            f"the step traced by tf.function: got {type(error).__name__} "
            f"({checks.error_line(error)}), expected a graph, as section 7 runs it.\nHint: "
            "use TensorFlow operations only: no .numpy() or float() on tensors inside the "
            "step.") from None
    variables = []
    for name, kind, value in export["captures"]:
        if kind == "weight" and value in by_path:
            variables.append([name, by_path[value].numpy(), True])
        elif kind == "state" and value is not None and np.size(value) <= 64:
            variables.append([name, np.asarray(value), False])
        else:
            raise checks.CheckFailed(f"the step's graph reads a variable the grader cannot "
                                     f"give it ({kind} {str(value)[:80]})")
    seen = _run_graph({"graph": export["graph"], "outputs": export["outputs"],
                       "inputs": [[n, b] for n, b in zip(export["inputs"], batch, strict=True)],
                       "variables": variables})
    before = [np.array(w.numpy()) for w in model.weights]
    try:
        outputs = iter(seen["outputs"])
        loss = tf.convert_to_tensor(next(outputs))
        grads, pairs = [], []
        for path, kind in export["grads"]:
            variable = by_path.get(path)
            if variable is None or not variable.trainable:
                raise ValueError(f"a gradient for {path!r}, not a trainable weight")
            if kind == "IndexedSlices":
                values, indices = next(outputs), next(outputs)
                grad = tf.IndexedSlices(tf.constant(values), tf.constant(indices),
                                        tf.constant(variable.shape, tf.int64))
            elif kind == "dense":
                grad = tf.ensure_shape(tf.constant(next(outputs)), variable.shape)
            else:
                grad = None
            grads.append(grad)
            if grad is not None:
                pairs.append((grad, variable))
        if pairs:
            LazyAdam(learning_rate).apply_gradients(pairs)
    except (ValueError, TypeError, StopIteration, tf.errors.OpError) as error:
        raise checks.CheckFailed(f"the gradients the step gave the optimizer: got "
                                 f"{type(error).__name__} ({checks.error_line(error)}), "
                                 "expected gradients that fit the model's weights.") from None
    return {"loss": loss, "grads": grads, "kinds": [kind for _, kind in export["grads"]],
            "names": [w.path for w in model.weights],
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
    if kind == "slices":  # an IndexedSlices: its values, indices and dense shape, in order
        return tf.IndexedSlicesSpec(
            shape=[int(d) for d in spec["dense_shape"]], dtype=tf.as_dtype(str(spec["dtype"])),
            indices_dtype=tf.as_dtype(str(spec["indices_dtype"])),
            dense_shape_dtype=tf.as_dtype(str(spec["dense_shape_dtype"])),
            indices_shape=[int(d) for d in spec["indices_shape"]])
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
        elif isinstance(arg, tf.IndexedSlices):
            parts = [np.asarray(arg.values.numpy()), np.asarray(arg.indices.numpy()),
                     np.asarray(arg.dense_shape.numpy())]
            feeds.extend(("input", part, False) for part in parts)
            described.append({SPEC: "slices", "dense_shape": parts[2].tolist(),
                              "dtype": parts[0].dtype.name, "indices_dtype": parts[1].dtype.name,
                              "dense_shape_dtype": parts[2].dtype.name,
                              "indices_shape": list(parts[1].shape)})
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
                else 3 if isinstance(arg, tf.IndexedSlices) else 1
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


def _graded_variable_writes(router, fn, *args, **kwargs):
    import tensorflow as tf

    from embeddings_course import graphwrites

    request, _, _, _ = _exported(router, fn, args, kwargs, "the function")
    found, rows, _ = _writes_request(request, tf)
    got = router.observer_run(request)
    return graphwrites.report(found, got["fetched"], rows)


def _graded_graph_op_types(router, fn, *fixed, shape=(None,), dtype="int64"):
    spec = {SPEC: "tensor", "shape": list(shape), "dtype": str(dtype)}
    try:
        data = router.observe(export.observation_name, (fn, [*fixed, spec], None), {})
    except Exception as error:  # noqa: BLE001 - whatever tracing raised, said as such
        raise _retold(error, "the function") from None
    if not isinstance(data, dict) or "graph" not in data:
        raise TypeError("the kernel's export is not a traced graph")
    return router.observer_op_types(np.asarray(data["graph"], np.uint8))
