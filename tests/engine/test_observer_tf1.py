"""Notebook 04's TF 1 training op: built in the kernel, sent as a GraphDef, run by the
observer on the test's table and batches (embeddings_course.tf1,
autograder.engine.observer.tf1graph)."""

from __future__ import annotations

import time

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from autograder.engine import wire  # noqa: E402
from autograder.engine.observer import client, ops, serve  # noqa: E402
from embeddings_course import checks, observe, tf1  # noqa: E402


class Remote:
    """A kernel's function as the grader sees it: a handle, asked only through the router."""

    _course_grade_remote = True

    def __init__(self, value):
        self.value = value


class KernelRouter:
    """What testcells' router does, with the 'kernel' here: the export runs on the live
    function and its answer crosses the wire as data, as does what the kernel was asked;
    the observer's request is answered by serve's own dispatch (the process is tested
    below)."""

    def __init__(self, fake_export=None):
        self.fake_export = fake_export
        self.sent = []

    def observe(self, name, args, kwargs):
        fn, *rest = args
        self.sent.append((name, rest, kwargs))
        function = self.fake_export or observe.REGISTRY[name]
        answer = function(fn.value, *rest, **kwargs)
        return wire.decode(wire.encode(answer, wire.Table()), wire.Table())

    def observer_ask(self, message):
        message = wire.decode(wire.encode(message, wire.Table()), wire.Table())
        return serve._answer(message)


def capped(loss, var, max_norm, optimizer=None):
    """The notebook's solution."""
    optimizer = optimizer or tf.compat.v1.train.GradientDescentOptimizer(1.0)
    ((grad, _),) = optimizer.compute_gradients(loss, [var])
    if isinstance(grad, tf.IndexedSlices):
        ids, positions = tf.unique(grad.indices)
        summed = tf.math.unsorted_segment_sum(grad.values, positions, tf.shape(ids)[0])
        grad = tf.IndexedSlices(tf.clip_by_norm(summed, max_norm, axes=[1]), ids,
                                grad.dense_shape)
    else:
        grad = tf.clip_by_norm(grad, max_norm, axes=[1])
    return optimizer.apply_gradients([(grad, var)])


def every_row(loss, var, max_norm, optimizer=None):
    """Issue 39's mistake: the right numbers, in an IndexedSlices naming every row."""
    optimizer = optimizer or tf.compat.v1.train.GradientDescentOptimizer(1.0)
    ((grad, _),) = optimizer.compute_gradients(loss, [var])
    dense = tf.clip_by_norm(tf.convert_to_tensor(grad), max_norm, axes=[1])
    rows = tf.IndexedSlices(dense, tf.range(tf.shape(var)[0]), grad.dense_shape)
    return optimizer.apply_gradients([(rows, var)])


RNG = np.random.default_rng(4)
TABLE = RNG.normal(size=(9, 3))
IDS = np.array([7, 0, 7, 3])
UPSTREAM = RNG.normal(size=(4, 3)) * 3


def test_the_observer_runs_the_kernel_s_graph_on_values_the_kernel_never_sees():
    router = KernelRouter()
    with observe.routed(router):
        run = tf1.train_in_graph(Remote(capped), TABLE, [(IDS, UPSTREAM), ([5], [[9.0, 0, 0]])],
                                 max_norm=1.1)
    checks.check_close(run.tables[1], tf1.capped_sgd_reference(TABLE, IDS, UPSTREAM, 1.1),
                       atol=1e-5, name="table after step 1")
    assert run.moved_rows(2) == [5]
    tf1.check_sparse_update(run)
    assert run.updates == [[{"op": "ResourceScatterAdd", "rows": [0, 3, 7]}],
                           [{"op": "ResourceScatterAdd", "rows": [5]}]]
    # the kernel was asked for the graph of a (9, 3) table: no value of the test crossed
    ((name, args, kwargs),) = router.sent
    assert name.endswith(":export_train_graph") and args == [[9, 3]]
    assert not any(isinstance(v, np.ndarray) for v in kwargs.values())
    # the same facts in JupyterLab, where no router is set
    local = tf1.train_in_graph(capped, TABLE, [(IDS, UPSTREAM)], max_norm=1.1)
    np.testing.assert_array_equal(local.tables[1], run.tables[1])


def test_optimizers_and_dense_gradients_are_run_by_the_observer():
    with observe.routed(KernelRouter()):
        adam = tf1.train_in_graph(Remote(capped), np.ones((6, 2)),
                                  [([1, 3], np.ones((2, 2))), ([5], np.ones((1, 2)))],
                                  max_norm=10.0, optimizer=("Adam", 0.1))
        x, upstream = np.array([[1.0, 0, 0], [0, 0, 1]]), np.array([[0.0, 2], [0.3, 0.4]])
        dense = tf1.train_in_graph(Remote(capped), np.zeros((3, 2)), [(x, upstream)],
                                   max_norm=1.0, dense=True)
    tf1.check_sparse_update(adam)  # Adam's scatters into its slots name the batch's rows
    assert adam.moved_rows(2) == [1, 3, 5]
    checks.check_close(dense.tables[1], [[0, -1.0], [0, 0], [-0.3, -0.4]], atol=1e-6,
                       name="dense step")
    assert "ResourceApplyGradientDescent" in dense.op_types


def test_a_sparse_update_that_names_every_row_is_rejected():
    with observe.routed(KernelRouter()):
        run = tf1.train_in_graph(Remote(every_row), TABLE, [(IDS, UPSTREAM)], max_norm=1.1)
    # its numbers are right: only the rows its scatter was given tell it apart
    checks.check_close(run.tables[1], tf1.capped_sgd_reference(TABLE, IDS, UPSTREAM, 1.1),
                       atol=1e-5, name="table after step 1")
    with pytest.raises(checks.CheckFailed, match=r"got rows \[0, 1, 2, 3, 4, 5, 6, 7, 8\] named "
                                                 r".* expected \[0, 3, 7\]"):
        tf1.check_sparse_update(run)


def test_a_faked_export_is_graded_on_what_its_graph_computes():
    """A kernel that answers the export with a graph of its own: an op that does nothing
    leaves the table as it was and scatters nothing; Python and file ops are refused."""
    export = observe.REGISTRY[tf1.export_train_graph.observation_name]

    def built_with(builder):
        return lambda fn, *args, **kwargs: export(builder, *args, **kwargs)

    def python(loss, var, max_norm, optimizer=None):
        side = tf.compat.v1.py_func(lambda: np.float32(0), [], tf.float32)
        with tf.control_dependencies([side]):
            return tf.group(capped(loss, var, max_norm, optimizer))

    def writes(loss, var, max_norm, optimizer=None):
        with tf.control_dependencies([tf.io.write_file("/tmp/tf1-observer-test", "x")]):
            return tf.group(capped(loss, var, max_norm, optimizer))

    with observe.routed(KernelRouter(built_with(lambda *args, **kwargs: tf.no_op()))):
        run = tf1.train_in_graph(Remote(capped), TABLE, [(IDS, UPSTREAM)], max_norm=1.1)
    np.testing.assert_array_equal(run.tables[1], run.tables[0])
    with pytest.raises(checks.CheckFailed, match="no scatter op"):
        tf1.check_sparse_update(run)
    for builder, op in ((python, "PyFunc"), (writes, "WriteFile")):
        with observe.routed(KernelRouter(built_with(builder))), \
                pytest.raises(ops.Refused, match=op):
            tf1.train_in_graph(Remote(capped), TABLE, [(IDS, UPSTREAM)], max_norm=1.1)


def test_names_that_point_at_the_wrong_part_are_refused():
    export = tf1.export_train_graph.__wrapped__(capped, [9, 3], id_dtype="int64")
    cases = [({"table": export["inputs"]}, "is a Placeholder; expected VarHandleOp"),
             ({"train_op": "nowhere"}, "no node 'nowhere' for its train_op"),
             ({"inputs": export["upstream"]}, "placeholders are float32 and float32")]
    for change, said in cases:
        with pytest.raises(ops.Refused, match=said):
            serve._answer({"op": "tf1_train", "request": {
                "export": {**export, **change}, "table": TABLE, "batches": [(IDS, UPSTREAM)],
                "dense": False}})
    with pytest.raises(ops.Refused, match=r"float32 of shape \[9, 3\]; expected float32 of "
                                          r"shape \[4, 3\]"):
        serve._answer({"op": "tf1_train", "request": {
            "export": export, "table": TABLE[:4], "batches": [(IDS % 4, UPSTREAM)],
            "dense": False}})


@pytest.mark.slow
def test_the_observer_process_runs_the_training_op():
    observer = client.Observer(memory_mb=1500)
    export = tf1.export_train_graph.__wrapped__(capped, [9, 3], id_dtype="int64")
    try:
        seen = observer.ask({"op": "tf1_train", "request": {
            "export": export, "table": TABLE, "batches": [(IDS, UPSTREAM)], "dense": False}},
            time.monotonic() + 120)
    finally:
        observer.stop()
    checks.check_close(seen["tables"][1], tf1.capped_sgd_reference(TABLE, IDS, UPSTREAM, 1.0),
                       atol=1e-5, name="table after the step")
    assert seen["updates"] == [[{"op": "ResourceScatterAdd", "rows": [0, 3, 7]}]]
