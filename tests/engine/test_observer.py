"""The observer: graphs the kernel exports, checked against the op allow-list, imported and
run with the grader's own inputs and variables in a process of its own
(autograder.engine.observer; embeddings_course.observe's graded observations)."""

from __future__ import annotations

import contextlib
import time

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from autograder.engine import wire  # noqa: E402
from autograder.engine.observer import client, graphs, ops  # noqa: E402
from embeddings_course import checks, observe  # noqa: E402


def graph_bytes(function, *specs):
    concrete = tf.function(function).get_concrete_function(*specs)
    return concrete, concrete.graph.as_graph_def().SerializeToString()


class Remote:
    """A kernel's function as the grader sees it: a handle, asked only through the router."""

    _course_grade_remote = True

    def __init__(self, value):
        self.value = value


class KernelRouter:
    """What testcells' router does, with the 'kernel' here: the export runs on the live
    object and its answer crosses the wire as data; graphs run in graphs.run (in the
    grader's process: the observer's own process is tested below)."""

    def __init__(self, fake_export=None):
        self.fake_export = fake_export
        self.asked = []

    def observe(self, name, args, kwargs):
        self.asked.append(name)
        fn, *rest = args
        function = self.fake_export or observe.REGISTRY[name]
        answer = function(fn.value, *rest, **kwargs)
        return wire.decode(wire.encode(answer, wire.Table()), wire.Table())

    def observer_run(self, request):
        request = wire.decode(wire.encode(request, wire.Table()), wire.Table())
        return graphs.run(request)

    def observer_op_types(self, graph):
        return ops.op_types(ops.check(np.asarray(graph, np.uint8).tobytes()))


def entry_stop_gradients(target, mask):
    mask = tf.cast(mask, target.dtype)
    return tf.stop_gradient((1.0 - mask) * target) + mask * target


def sharded_lookup(shards, ids):
    ids = tf.reshape(ids, [-1])
    unique, position = tf.unique(ids)
    rows = tf.concat([tf.gather(shards[0], tf.clip_by_value(unique, 0, 3)),
                      tf.gather(shards[1], tf.clip_by_value(unique - 4, 0, 3))], 1)
    return tf.gather(rows, position)


# -- the allow-list -----------------------------------------------------------------------

def test_the_allow_list_refuses_python_files_and_sizes():
    def py(x):
        return tf.py_function(lambda v: v * 2, [x], tf.float32)

    def reads(x):
        return tf.strings.length(tf.io.read_file("/etc/passwd")) + tf.cast(x, tf.int32)

    def huge(x):
        return x + tf.constant(1.0, shape=[50_000, 50_000])

    spec = tf.TensorSpec([], tf.float32)
    for function, op in ((py, "EagerPyFunc"), (reads, "ReadFile")):
        _, data = graph_bytes(function, spec)
        with pytest.raises(ops.Refused, match=op):
            ops.check(data)
    _, data = graph_bytes(huge, spec)
    with pytest.raises(ops.Refused, match="constants"):
        ops.check(data)
    # hidden in a function of the library, called by a While's body
    def looped(x):
        return tf.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, tf.reshape(py(v), [])),
                             (0, x))[1]

    _, data = graph_bytes(looped, spec)
    with pytest.raises(ops.Refused, match="EagerPyFunc"):
        ops.check(data)
    _, data = graph_bytes(entry_stop_gradients, spec, spec)
    graph = ops.check(data)
    graph.node[-1].attr["f"].func.name = "not_in_the_library"
    with pytest.raises(ops.Refused, match="not_in_the_library"):
        ops.check(graph.SerializeToString())
    with pytest.raises(ops.Refused, match="not a GraphDef"):
        ops.check(b"\xff" * 100)


# -- graded observations: what the kernel sends is data, the facts are computed here -------

def test_gradients_are_taken_by_the_observer():
    router = KernelRouter()
    table = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    mask = tf.constant([[1.0], [0.0], [1.0]])
    with observe.routed(router):
        out, (grad,) = observe.gradients(Remote(entry_stop_gradients), table, mask,
                                         reduce="sum_squares")
    assert router.asked == [observe.export.observation_name]
    np.testing.assert_allclose(out, table.numpy())
    np.testing.assert_allclose(grad, [[2.0, 4.0], [0.0, 0.0], [10.0, 12.0]])
    shards = [tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2)) for _ in range(2)]
    ids = tf.constant([5, 0, 5, 2], tf.int64)
    with observe.routed(router):
        graded, grads = observe.gradients(Remote(sharded_lookup), shards, ids,
                                          reduce="sum_squares")
        op_types = observe.graph_op_types(Remote(sharded_lookup), shards, shape=[None])
    live, want = observe.gradients(sharded_lookup, shards, ids, reduce="sum_squares")
    np.testing.assert_allclose(graded, live)
    for got, expected in zip(grads, want, strict=True):
        assert isinstance(got, tf.IndexedSlices)  # the gather's gradient, kept sparse
        np.testing.assert_allclose(tf.convert_to_tensor(got), tf.convert_to_tensor(expected))
    assert "ResourceGather" in op_types and "ReadVariableOp" not in op_types


def test_a_layer_s_trainable_weights_and_an_error_of_the_graph():
    import keras

    layer = keras.layers.Embedding(6, 3)
    layer.build((None,))
    ids = tf.constant([1, 4, 4])
    router = KernelRouter()
    with observe.routed(router):
        _, (grad,) = observe.gradients(Remote(layer), ids, sources="trainable_weights",
                                       reduce="sum_squares")
    _, (want,) = observe.gradients(layer, ids, sources="trainable_weights",
                                   reduce="sum_squares")
    np.testing.assert_allclose(tf.convert_to_tensor(grad), tf.convert_to_tensor(want))

    def picks(tags, logits):
        return tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(tags, logits))

    with observe.routed(router), pytest.raises(tf.errors.InvalidArgumentError):
        observe.in_tf_function(Remote(picks), np.array([0, 7]), np.zeros((2, 3), np.float32))


def test_a_function_that_cannot_be_traced_is_told_so():
    def numpy_inside(x):
        return tf.constant(np.asarray(x) * 2)

    with observe.routed(KernelRouter()), \
            pytest.raises(NotImplementedError, match="must be traceable by tf.function"):
        observe.in_tf_function(Remote(numpy_inside), tf.constant([1.0]))


def test_a_faked_export_is_graded_on_what_its_graph_computes():
    """A kernel that answers the export with a graph of its own: a graph that computes
    nothing scores as nothing, a Python call is refused."""
    def identity_graph(fn, args, kwargs=None):
        answer = observe.REGISTRY[observe.export.observation_name](
            lambda target, mask: tf.identity(target), args, kwargs)
        return answer

    def python_graph(fn, args, kwargs=None):
        return observe.REGISTRY[observe.export.observation_name](
            lambda target, mask: tf.py_function(lambda t: t, [target], tf.float32),
            args, kwargs)

    table = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    mask = tf.constant([[1.0], [0.0]])
    with observe.routed(KernelRouter(identity_graph)):
        _, (grad,) = observe.gradients(Remote(entry_stop_gradients), table, mask)
    np.testing.assert_allclose(grad, np.ones((2, 2)))  # not the mask: the check fails
    with observe.routed(KernelRouter(python_graph)), \
            pytest.raises(ops.Refused, match="EagerPyFunc"):
        observe.gradients(Remote(entry_stop_gradients), table, mask)


# -- the observer's process ---------------------------------------------------------------

@pytest.mark.slow
def test_the_observer_process_holds_loops_and_memory():
    """A While that never ends and a graph that allocates 200 GB: each fails within its
    deadline, saying what happened, and the next graph runs in a fresh process."""
    def forever(x):
        return tf.while_loop(lambda v: tf.constant(True), lambda v: v + 1.0, [x])[0]

    def allocates(x):
        return tf.reduce_sum(tf.fill([50_000, 100_000, 10], x))

    observer = client.Observer(memory_mb=1500)
    try:
        spec = tf.TensorSpec([], tf.float32)
        concrete, data = graph_bytes(lambda x: x * 2.0, spec)
        plain = {"graph": np.frombuffer(data, np.uint8),
                 "inputs": [[concrete.graph.inputs[0].name, np.float32(3)]],
                 "outputs": [concrete.outputs[0].name]}
        for function, said in ((forever, "deadline"), (allocates, "memory|deadline|OOM")):
            # started (a fresh process after a kill): the deadline is the graph's own
            assert observer.run(plain, time.monotonic() + 120)["outputs"][0] == 6.0
            concrete, data = graph_bytes(function, spec)
            request = {"graph": np.frombuffer(data, np.uint8),
                       "inputs": [[concrete.graph.inputs[0].name, np.float32(1)]],
                       "outputs": [concrete.outputs[0].name]}
            started = time.monotonic()
            with pytest.raises((client.ObserverFailed, tf.errors.ResourceExhaustedError),
                               match=said):
                observer.run(request, started + 8)
            assert time.monotonic() - started < 15
        assert observer.run(plain, time.monotonic() + 120)["outputs"][0] == 6.0
    finally:
        observer.stop()


# -- which rows a graph writes -------------------------------------------------------------
def scatter_step(var, slices, lr):
    var.scatter_sub(tf.IndexedSlices(lr * slices.values, slices.indices, slices.dense_shape))
    return var


def dense_step(var, slices, lr):
    var.assign_sub(lr * tf.convert_to_tensor(slices))
    return var


def every_row_step(var, slices, lr):
    dense = tf.convert_to_tensor(slices)
    var.scatter_sub(tf.IndexedSlices(lr * dense, tf.range(tf.shape(dense)[0])))
    return var


def row_by_row_step(var, slices, lr):
    for i in range(2):
        var[slices.indices[i]].assign(var[slices.indices[i]] - lr * slices.values[i])
    return var


@tf.function
def _inner(var, values, indices):
    var.scatter_sub(tf.IndexedSlices(values, indices))


def nested_step(var, slices, lr):
    _inner(var, lr * slices.values, slices.indices)
    return var


def test_the_rows_a_graph_writes_are_read_in_the_run_that_writes_them():
    """observe.variable_writes: graded (the graph run by graphs.run on variables of its
    own, each write's rows fetched there) and in the kernel (Validate) alike; the values
    alone cannot tell a dense or every-row update from a scatter (rows outside the batch
    get zeros), the writes can; the test's variable is not changed."""
    grads = tf.IndexedSlices(tf.constant([[1.0, 2.0], [1.0, 0.0]]), tf.constant([3, 1]),
                             tf.constant([5, 2]))
    want = {scatter_step: [("ResourceScatterSub", 0, [1, 3])],
            dense_step: [("AssignSubVariableOp", 0, None)],
            every_row_step: [("ResourceScatterSub", 0, [0, 1, 2, 3, 4])],
            row_by_row_step: [("ResourceStridedSliceAssign", 0, [3]),
                              ("ResourceStridedSliceAssign", 0, [1])]}
    for step, expected in want.items():
        var = tf.Variable(tf.ones((5, 2)))
        router = KernelRouter()
        with observe.routed(router):
            graded = observe.variable_writes(Remote(step), var, grads, 0.5)
        live = observe.variable_writes(step, var, grads, 0.5)
        assert router.asked == [observe.export.observation_name]
        got = [(w["op"], w["variable"], w["rows"]) for w in graded]
        assert got == expected, (step.__name__, got)
        assert graded == live, step.__name__
        np.testing.assert_array_equal(var.numpy(), np.ones((5, 2)))
        sparse = step in (scatter_step, row_by_row_step)  # writes the batch's rows only
        with contextlib.nullcontext() if sparse else pytest.raises(checks.CheckFailed):
            checks.check_rows_written(graded, [1, 3], name=step.__name__)
    # a write inside a function call: which rows, the graph does not show
    var = tf.Variable(tf.ones((5, 2)))
    with observe.routed(KernelRouter()):
        graded = observe.variable_writes(Remote(nested_step), var, grads, 0.5)
    assert [w["rows"] for w in graded] == [None], graded
    with pytest.raises(checks.CheckFailed, match="whole variable"):
        checks.check_rows_written(graded, [1, 3])


def test_a_fetch_names_a_tensor_of_the_graph():
    _, data = graph_bytes(lambda x: x * 2.0, tf.TensorSpec([2], tf.float32))
    request = {"graph": np.frombuffer(data, np.uint8),
               "inputs": [["x:0", np.ones(2, np.float32)]], "outputs": ["Identity:0"],
               "fetch": ["no_such_node:0"]}
    with pytest.raises(graphs.Unusable, match="no tensor or op"):
        graphs.run(request)
    request["fetch"] = ["x:0"]  # an input is read where it is fed
    np.testing.assert_array_equal(graphs.run(request)["fetched"][0], np.ones(2))
