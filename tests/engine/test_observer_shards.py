"""Notebook 07's facts about a lookup over shards, computed from the graph the kernel sent:
the rows from the test's values, the gradient the grader takes, the rows each gather read;
a graph that hides a read, or a shard, is refused; the train step's bytes measured here."""

from __future__ import annotations

import numpy as np
import pytest

from autograder.engine.observer import shards as observed
from embeddings_course import cluster

tf = pytest.importorskip("tensorflow")

FULL = np.arange(20, dtype=np.float32).reshape(10, 2)  # row i is [2i, 2i + 1]
SHARDS = [FULL[a:b] for a, b in ((0, 3), (3, 6), (6, 8), (8, 10))]
IDS = np.array([7, 0, 7, 3, 9, 9])


def right(shards, ids):
    ids = tf.cast(tf.reshape(ids, [-1]), tf.int64)
    unique, position = tf.unique(ids)
    sizes = [int(s.shape[0]) for s in shards]
    ends = tf.constant(np.cumsum(sizes), tf.int64)
    starts = tf.constant(np.cumsum([0] + sizes[:-1]), tf.int64)
    owner = tf.cast(tf.searchsorted(ends, unique, side="right"), tf.int32)
    local = tf.dynamic_partition(unique - tf.gather(starts, owner), owner, len(shards))
    slots = tf.dynamic_partition(tf.range(tf.size(unique)), owner, len(shards))
    pieces = [tf.gather(s, rows) for s, rows in zip(shards, local, strict=True)]
    return tf.gather(tf.dynamic_stitch(slots, pieces), position)


def whole(shards, ids):
    return tf.gather(tf.concat(shards, axis=0), tf.reshape(ids, [-1]))


def hidden_whole_read(shards, ids):
    """Right rows, and gradients that name each unique row once, but every row of every
    shard gathered (with tf.range, no ReadVariableOp) behind a stop_gradient."""
    every = tf.concat([tf.gather(s, tf.range(s.shape[0])) for s in shards], axis=0)
    return tf.stop_gradient(tf.gather(every, ids)) + 0.0 * right(shards, ids)


def test_the_facts_of_a_right_lookup_come_from_the_tests_values():
    facts = cluster.lookup_facts(right, SHARDS, IDS)
    np.testing.assert_array_equal(facts["rows"], FULL[IDS])
    assert facts["shard_rows"] == [[0], [0], [1], [1]]
    assert facts["read"] == [[0], [0], [1], [1]]
    assert facts["whole_reads"] == 0 and "ResourceGather" in facts["op_types"]
    other = FULL * 3 - 1  # other values, the same graph: the rows follow the test's values
    facts = cluster.lookup_facts(right, [other[:3], other[3:6], other[6:8], other[8:]], IDS)
    np.testing.assert_array_equal(facts["rows"], other[IDS])


def test_whole_reads_are_counted_however_they_are_hidden():
    facts = cluster.lookup_facts(whole, SHARDS, IDS)
    assert facts["whole_reads"] == 4
    assert facts["read"] == [[0, 1, 2], [0, 1, 2], [0, 1], [0, 1]]
    facts = cluster.lookup_facts(hidden_whole_read, SHARDS, IDS)
    np.testing.assert_array_equal(facts["rows"], FULL[IDS])
    assert facts["shard_rows"] == [[0], [0], [1], [1]]  # the gradient alone would pass
    assert facts["whole_reads"] == 0
    assert [sorted(r) for r in facts["read"]] == [[0, 0, 1, 2], [0, 0, 1, 2], [0, 1, 1],
                                                 [0, 1, 1]]


def test_the_kernel_traces_over_zeros_and_never_sees_the_tests_values():
    seen = []

    def spy(shards, ids):
        seen.extend(shards)
        return right(shards, ids)

    export = cluster.lookup_export(spy, [[3, 2], [3, 2], [2, 2], [2, 2]])
    assert [s.numpy().tolist() for s in seen] == [np.zeros(s.shape).tolist() for s in SHARDS]
    assert sorted(k for _, k in export["variables"]) == [0, 1, 2, 3]
    assert export["constants"] == []


def _export(fn, specs):
    graph = tf.function(fn).get_concrete_function(*specs).graph
    return graph, {"graph": np.frombuffer(graph.as_graph_def().SerializeToString(), np.uint8),
                   "ids": graph.inputs[0].name, "outputs": [graph.outputs[0].name]}


def test_a_shard_handed_to_an_op_that_hides_what_it_reads_is_refused():
    # a hand-made graph: shard 0's handle goes through a function call before its gather
    @tf.function
    def inner(handle, ids):
        return tf.raw_ops.ResourceGather(resource=handle, indices=ids, dtype=tf.float32)

    def fn(ids, handle):
        return inner(handle, ids)

    graph, export = _export(fn, [tf.TensorSpec([None], tf.int64),
                                 tf.TensorSpec([], tf.resource)])
    export["variables"] = [[graph.inputs[1].name, 0]]
    with pytest.raises(observed.BadExport, match="shard 0 is given to a .*PartitionedCall"):
        observed.request(export, SHARDS, IDS)


@pytest.mark.parametrize("change, message", [
    ({"variables": [["x:0", 4]]}, "not one of the shards"),
    ({"variables": [["x:0", 0], ["y:0", 0]]}, "a shard twice"),
    ({"outputs": ["a:0", "b:0"]}, "one tensor"),
    ({"constants": [["c:0", np.zeros(2**19)]]}, "more than"),
    ({"graph": np.zeros(3, np.float32)}, "array of bytes"),
])
def test_an_export_that_does_not_fit_the_shards_is_refused(change, message):
    export = {**cluster.lookup_export(right, [[3, 2], [3, 2], [2, 2], [2, 2]]), **change}
    with pytest.raises(observed.BadExport, match=message):
        observed.request(export, SHARDS, IDS)


def test_the_train_steps_bytes_measured_here_are_the_arithmetic():
    pairs = [[1, 2], [2, 1999], [7, 7]]
    measured = cluster.measured_traffic(pairs, 2000, 16)
    assert measured == {"ids": 4 * 8, "rows": 4 * 16 * 4, "grad": 4 * (16 * 4 + 8)}
    assert sum(cluster.measured_traffic(pairs, 2000, 16, sparse=False).values()) == \
        cluster.predicted_traffic(pairs, 2000, 16, sparse=False)
