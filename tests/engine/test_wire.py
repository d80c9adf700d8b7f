"""What crosses between the grader and the kernel (autograder.engine.wire): data kept exactly,
anything else refused; nothing sent is unpickled or run."""

from __future__ import annotations

import base64
import io
import pickle

import numpy as np
import pytest
import tensorflow as tf

from autograder.engine import wire


class Plain(wire.Table):
    pass


def roundtrip(value):
    return wire.decode(wire.encode(value, Plain()), Plain())


def test_arrays_tensors_and_slices_keep_dtype_and_shape():
    for array in (np.arange(6, dtype=np.int64).reshape(2, 3), np.array(2.5, np.float32),
                  np.zeros((0, 4), np.float16), np.array([True, False]),
                  np.array(["a", "bc"]), np.array([b"x", b"yz"])):
        back = roundtrip(array)
        assert back.dtype == array.dtype and back.shape == array.shape
        assert np.array_equal(back, array)
    tensor = roundtrip(tf.constant([[1, 2]], tf.int32))
    assert isinstance(tensor, tf.Tensor) and tensor.dtype == tf.int32 and tensor.shape == (1, 2)
    assert roundtrip(tf.constant(["a", "b"])).numpy().tolist() == [b"a", b"b"]
    slices = roundtrip(tf.IndexedSlices(tf.ones((2, 3)), tf.constant([4, 1], tf.int64),
                                        tf.constant([5, 3], tf.int64)))
    assert isinstance(slices, tf.IndexedSlices) and slices.indices.dtype == tf.int64
    assert slices.dense_shape.numpy().tolist() == [5, 3]
    variable = roundtrip(tf.Variable(np.float64(1.5), trainable=False))
    assert isinstance(variable, tf.Variable) and variable.shape == () and not variable.trainable
    assert variable.dtype == tf.float64 and float(variable) == 1.5


def test_python_values_and_containers():
    value = {"a": [1, 2.5, None, True, "x", b"y"], 3: (np.int64(4), {5, 6}), "s": slice(1, None)}
    back = roundtrip(value)
    assert back == value and type(back[3]) is tuple and type(back[3][0]) is np.int64
    assert type(roundtrip(np.float64(2.5))) is np.float64
    assert roundtrip(2 ** 100) == 2 ** 100 and np.isnan(roundtrip(float("nan")))
    assert roundtrip(tf.float32) == tf.float32 and roundtrip(tf.TensorShape([None, 3])) == \
        tf.TensorShape([None, 3])


def test_what_is_not_data_does_not_cross():
    with pytest.raises(wire.WireError, match="cannot cross"):
        wire.encode(object(), Plain())
    with pytest.raises(wire.WireError, match="cannot cross"):
        wire.encode(np.array([object()]), Plain())


def test_pickles_and_malformed_messages_are_refused():
    pickled = base64.b64encode(pickle.dumps([1])).decode()
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    object_npy = base64.b64encode(buffer.getvalue()).decode()
    bad = [{"t": "nd", "v": pickled}, {"t": "nd", "v": object_npy}, {"t": "eval", "v": "1"},
           {"t": "handle", "id": 1}, "text", {"t": "int", "v": "9" * 1000},
           {"t": "dict", "k": [{"t": "list", "v": []}], "v": [{"t": "none"}]}]
    for node in bad:
        with pytest.raises((wire.WireError, ValueError)):
            wire.decode(node, Plain())
    deep = {"t": "none"}
    for _ in range(wire.MAX_DEPTH + 5):
        deep = {"t": "list", "v": [deep]}
    with pytest.raises(wire.WireError, match="deeply"):
        wire.decode(deep, Plain())
    with pytest.raises(wire.WireError, match="parts"):
        wire.decode({"t": "list", "v": [{"t": "none"}] * (wire.MAX_ITEMS + 1)}, Plain())
