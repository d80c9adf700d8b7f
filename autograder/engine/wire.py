"""What crosses between the trusted grader and the sandboxed kernel: data, never code.

Both sides describe values as JSON trees. Arrays travel as `.npy` bytes (base64) written
and read with `allow_pickle=False`, so dtype and shape are kept and nothing is unpickled;
tensors, variables, `IndexedSlices`, lists, tuples, dicts, sets and scalars are
described, never pickled. Anything else stays where it is and crosses as a reference:
a *handle* (an object of the kernel, which the grader can only ask about) or a *ref* (an
object of the grader, named by number). `decode` builds fresh objects and nothing else:
it imports nothing named by the other side, calls no method of a received object, and
refuses what is too big, too deep or of a dtype outside `DTYPES`.

The encoder and decoder take a `Table` that turns the references of one side into
objects (`handle`, `ref`, `callback`) and objects into references.
"""

from __future__ import annotations

import base64
import io
import math
import sys

import numpy as np

MAX_DEPTH = 32
MAX_ITEMS = 200_000  # nodes in one message
MAX_BYTES = 12 * 2**20  # bytes of array data in one message, as the arrays take in memory
MAX_TEXT = 1_000_000  # characters of one string
# dtypes an array may have on the wire (no object arrays: they would need pickle)
DTYPES = frozenset("bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 "
                   "float32 float64 complex64 complex128".split())


class WireError(ValueError):
    """A value that cannot cross, or a message that is not what the wire allows."""


def _npy(array: np.ndarray) -> str:
    if array.dtype.kind in "US":
        kind = array.dtype.kind
        return {"kind": kind, "shape": list(array.shape),
                "items": [x if kind == "U" else base64.b64encode(x).decode()
                          for x in array.ravel().tolist()]}
    if array.dtype.name not in DTYPES:
        raise WireError(f"an array of dtype {array.dtype} cannot cross")
    buffer = io.BytesIO()
    np.save(buffer, np.array(array, order="C", copy=True), allow_pickle=False)
    return base64.b64encode(buffer.getvalue()).decode()


class Budget:
    def __init__(self):
        self.items = 0
        self.bytes = 0

    def take(self, items: int = 1, size: int = 0) -> None:
        self.items += items
        self.bytes += size
        if self.items > MAX_ITEMS:
            raise WireError(f"the message has more than {MAX_ITEMS} parts")
        if self.bytes > MAX_BYTES:
            raise WireError(f"the message holds more than {MAX_BYTES >> 20} MB of arrays")


def _read_npy(node, budget: Budget) -> np.ndarray:
    if isinstance(node, dict):  # strings
        kind, shape, items = node.get("kind"), node.get("shape"), node.get("items")
        if kind not in ("U", "S") or not isinstance(items, list) or not _is_shape(shape):
            raise WireError("a malformed string array")
        if not all(isinstance(x, str) and len(x) <= MAX_TEXT for x in items):
            raise WireError("a malformed string array")
        # NumPy pads every item to the longest: that is the memory the array takes
        longest = max((len(x) for x in items), default=0)
        budget.take(len(items), len(items) * max(1, longest) * (4 if kind == "U" else 1))
        values = items if kind == "U" else [base64.b64decode(x) for x in items]
        array = np.array(values) if values else np.array([], "U1" if kind == "U" else "S1")
        if math.prod(shape) != array.size:
            raise WireError("a string array whose shape does not match its items")
        return array.reshape(shape)
    if not isinstance(node, str):
        raise WireError("a malformed array")
    raw = base64.b64decode(node, validate=True)
    budget.take(1, len(raw))
    array = np.load(io.BytesIO(raw), allow_pickle=False)
    if array.dtype.name not in DTYPES:
        raise WireError(f"an array of dtype {array.dtype} cannot cross")
    return array


def _is_shape(shape) -> bool:
    return isinstance(shape, list) and len(shape) <= 32 and all(
        type(d) is int and 0 <= d < 2**40 for d in shape)


# ---------------------------------------------------------------------------------------
# Encoding: the sender's values as a JSON tree
# ---------------------------------------------------------------------------------------

def encode(value, table, depth: int = 0, budget: Budget | None = None):
    """`value` as a JSON tree; what is not data becomes a reference through `table`."""
    tf = sys.modules.get("tensorflow")  # no TensorFlow loaded: no TensorFlow value here

    budget = budget or Budget()
    budget.take()
    if depth > MAX_DEPTH:
        raise WireError("the value is nested too deeply to cross")
    reference = table.reference(value)
    if reference is not None:
        return reference
    if isinstance(value, np.generic) and value.dtype.name in DTYPES:
        return {"t": "npscalar", "v": _npy(np.asarray(value))}
    if value is None or value is Ellipsis:
        return {"t": "none" if value is None else "ellipsis"}
    if isinstance(value, bool):
        return {"t": "bool", "v": value}
    if isinstance(value, int):
        return {"t": "int", "v": str(value)}
    if isinstance(value, float):
        return {"t": "float", "v": repr(value)}
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise WireError("a string too long to cross")
        return {"t": "str", "v": value}
    if isinstance(value, bytes):
        return {"t": "bytes", "v": base64.b64encode(value).decode()}
    if isinstance(value, np.ndarray) and (value.dtype.name in DTYPES or
                                          value.dtype.kind in "US"):
        budget.take(1, value.nbytes)
        return {"t": "nd", "v": _npy(value)}
    if isinstance(value, np.dtype) and value.name in DTYPES:
        return {"t": "dtype", "v": value.name}
    if tf is not None:
        node = _encode_tensorflow(tf, value, table, depth, budget)
        if node is not None:
            return node
    if isinstance(value, slice):
        return {"t": "slice", "v": [encode(x, table, depth + 1, budget)
                                    for x in (value.start, value.stop, value.step)]}
    kind = {list: "list", tuple: "tuple", set: "set", frozenset: "set"}.get(type(value))
    if kind is not None:
        items = list(value)
        budget.take(len(items))
        return {"t": kind, "v": [encode(x, table, depth + 1, budget) for x in items]}
    if type(value) is dict:
        budget.take(len(value))
        return {"t": "dict", "k": [encode(k, table, depth + 1, budget) for k in value],
                "v": [encode(v, table, depth + 1, budget) for v in value.values()]}
    return table.handle(value)


def _is_keras_variable(value) -> bool:
    keras = sys.modules.get("keras")
    return keras is not None and isinstance(value, keras.Variable)


def _encode_tensorflow(tf, value, table, depth, budget):
    """A TensorFlow or Keras value as a JSON tree, or None for any other value."""
    if isinstance(value, tf.DType):
        return {"t": "dtype", "v": value.name}
    if isinstance(value, tf.TensorShape):
        return {"t": "shape", "v": value.as_list() if value.rank is not None else None}
    if isinstance(value, tf.IndexedSlices):
        shape = value.dense_shape
        return {"t": "slices", "values": encode(value.values, table, depth + 1, budget),
                "indices": encode(value.indices, table, depth + 1, budget),
                "dense_shape": encode(shape, table, depth + 1, budget)}
    if _is_keras_variable(value):
        array = np.asarray(value.numpy())
        budget.take(1, array.nbytes)
        return {"t": "var", "v": _npy(array), "trainable": bool(value.trainable),
                "name": str(value.name)}
    if isinstance(value, tf.Variable) and not hasattr(value, "_variables"):
        try:
            array = value.numpy()
        except Exception:  # noqa: BLE001 - a variable on a remote device: a handle
            return table.handle(value)
        budget.take(1, array.nbytes)
        return {"t": "var", "v": _npy(array), "trainable": bool(value.trainable),
                "name": str(value.name)}
    if isinstance(value, tf.Tensor):
        try:
            array = value.numpy()
        except Exception:  # noqa: BLE001 - a symbolic tensor: a handle
            return table.handle(value)
        if value.dtype == tf.string:
            array = np.asarray(array, dtype=bytes)
        budget.take(1, array.nbytes)
        return {"t": "tensor", "v": _npy(array)}
    return None


# ---------------------------------------------------------------------------------------
# Decoding: fresh objects from a JSON tree
# ---------------------------------------------------------------------------------------

def decode(node, table, depth: int = 0, budget: Budget | None = None):
    """The value a tree describes, built fresh; references resolved through `table`."""
    budget = budget or Budget()
    budget.take()
    if depth > MAX_DEPTH:
        raise WireError("the message is nested too deeply")
    if not isinstance(node, dict) or not isinstance(node.get("t"), str):
        raise WireError("a malformed message")
    kind, value = node["t"], node.get("v")

    def sub(x):
        return decode(x, table, depth + 1, budget)

    if kind == "none":
        return None
    if kind == "ellipsis":
        return Ellipsis
    if kind == "bool" and isinstance(value, bool):
        return value
    if kind == "int" and isinstance(value, str) and len(value) <= 400:
        return int(value)
    if kind == "float" and isinstance(value, str) and len(value) <= 40:
        return float(value)
    if kind == "str" and isinstance(value, str) and len(value) <= MAX_TEXT:
        return value
    if kind == "bytes" and isinstance(value, str) and len(value) <= MAX_TEXT:
        return base64.b64decode(value)
    if kind == "npscalar":
        return _read_npy(value, budget)[()]
    if kind == "nd":
        return _read_npy(value, budget)
    if kind == "tensor":
        array = _read_npy(value, budget)
        tf = _tensorflow()
        return tf.constant(array) if array.dtype != object else tf.constant(array.tolist())
    if kind == "var":
        array = _read_npy(value, budget)
        name = node.get("name") if isinstance(node.get("name"), str) else "variable"
        name = name.split(":")[0][:200] or "variable"
        return table.variable(array, bool(node.get("trainable", True)), name, node)
    if kind == "dtype" and isinstance(value, str) and value in DTYPES | {"string"}:
        if "tensorflow" not in sys.modules and value != "string":  # a course without it
            return np.dtype(value)
        return _tensorflow().as_dtype(value)
    if kind == "shape":
        if value is None:
            return _tensorflow().TensorShape(None)
        if isinstance(value, list) and all(d is None or type(d) is int for d in value):
            return _tensorflow().TensorShape(value)
    if kind == "slices":
        shape = node.get("dense_shape")
        return _tensorflow().IndexedSlices(sub(node.get("values")), sub(node.get("indices")),
                                None if shape is None else sub(shape))
    if kind == "slice" and isinstance(value, list) and len(value) == 3:
        return slice(*[sub(x) for x in value])
    if kind in ("list", "tuple", "set") and isinstance(value, list):
        items = [sub(x) for x in value]
        return {"list": list, "tuple": tuple, "set": set}[kind](
            items if kind != "set" else [i for i in items if _hashable(i)])
    if kind == "dict" and isinstance(value, list) and isinstance(node.get("k"), list) \
            and len(value) == len(node["k"]):
        keys = [sub(k) for k in node["k"]]
        if not all(_hashable(k) for k in keys):
            raise WireError("a dict key that is not a plain value")
        return dict(zip(keys, [sub(v) for v in value], strict=True))
    if kind in ("handle", "ref", "callback"):
        return table.resolve(node)
    raise WireError(f"a malformed message part ({kind[:40]})")


def _tensorflow():
    """TensorFlow, loaded only for a message that holds a TensorFlow value."""
    import tensorflow as tf

    return tf


def _hashable(value) -> bool:
    return isinstance(value, (str, int, float, bool, bytes, tuple, type(None), np.generic))


class Table:
    """References of one side. Subclasses say what becomes a reference and back."""

    def reference(self, value):  # noqa: ARG002 - a value this side sends by reference
        return None

    def handle(self, value):
        raise WireError(f"a {type(value).__name__} cannot cross: only data can")

    def resolve(self, node):
        raise WireError("a reference this side does not hold")

    def variable(self, array, trainable, name, node):  # noqa: ARG002
        import tensorflow as tf

        return tf.Variable(array, trainable=trainable, name=name)
