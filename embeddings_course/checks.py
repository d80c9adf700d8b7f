"""Check helpers that teach.

Every test cell of the course calls these. A failing check raises `CheckFailed`
(an `AssertionError`) whose message says what was expected, what came back (shape,
dtype, the largest error and where, which rows differ) and, where a common mistake
is known, a hint. They never only print.

    >>> check_close([1.0, 2.0], [1.0, 2.0])
    >>> check_shape(np.zeros((2, 3)), (2, 3), name="logits")
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
from collections.abc import Iterable, Sequence

import numpy as np
import tensorflow as tf

__all__ = [
    "CheckFailed",
    "as_numpy",
    "check_close",
    "check_shape",
    "check_dtype",
    "check_indexed_slices",
    "check_unchanged",
    "check_rows_changed",
    "rows_changed",
    "check_is_variable",
    "check_same_objects",
    "check_no_none",
    "check_same_slices",
    "check_finite",
    "check_equal",
    "check_instance",
    "hidden_seed",
]

# Rows listed in a message before it says "and N more".
MAX_LISTED = 8


class CheckFailed(AssertionError):
    """A check did not pass; the message explains what was expected and what came back."""


def _fail(message: str, hint: str | None = None) -> None:
    if hint:
        message = f"{message}\nHint: {hint}"
    raise CheckFailed(message)


def _listing(items: Sequence) -> str:
    items = list(items)
    shown = ", ".join(str(i) for i in items[:MAX_LISTED])
    if len(items) > MAX_LISTED:
        shown += f", ... ({len(items) - MAX_LISTED} more)"
    return f"[{shown}]"


def as_numpy(value, name: str = "result") -> np.ndarray:
    """A NumPy array of `value` (tensor, variable, array, list, number).

    An `IndexedSlices` is refused: say `tf.convert_to_tensor(x)` where a dense
    value is meant, so that no check densifies a sparse result by accident.
    """
    if value is None:
        _fail(f"{name} is None; expected a value.", "did the function forget to `return`?")
    if isinstance(value, tf.IndexedSlices):
        _fail(
            f"{name} is a tf.IndexedSlices; expected a dense tensor.",
            "convert it with tf.convert_to_tensor, or check it with check_indexed_slices.",
        )
    if isinstance(value, tf.Variable):
        value = value.read_value()
    if isinstance(value, tf.Tensor):
        return value.numpy()
    try:
        return np.asarray(value)
    except Exception as error:  # a ragged list, an object
        _fail(f"{name} cannot be read as an array: {error}")


def _shape(value) -> tuple:
    return tuple(np.shape(value))


def check_shape(actual, expected_shape: Iterable[int | None], name: str = "result",
                hint: str | None = None) -> None:
    """`actual` has `expected_shape`; `None` in the expected shape matches any size."""
    expected_shape = tuple(expected_shape)
    if isinstance(actual, tf.IndexedSlices):
        got = tuple(int(d) for d in actual.dense_shape) if actual.dense_shape is not None else ()
    elif isinstance(actual, (tf.Tensor, tf.Variable)):
        got = tuple(actual.shape.as_list())
    else:
        got = _shape(as_numpy(actual, name))
    matches = len(got) == len(expected_shape) and all(
        e is None or e == g for e, g in zip(expected_shape, got, strict=True)
    )
    if not matches:
        _fail(f"{name} has shape {got}; expected {expected_shape}.", hint)


def check_dtype(actual, expected_dtype, name: str = "result", hint: str | None = None) -> None:
    """`actual` has `expected_dtype` (a tf.DType, NumPy dtype or name such as "float32")."""
    expected = tf.as_dtype(expected_dtype)
    if isinstance(actual, (tf.Tensor, tf.Variable, tf.IndexedSlices)):
        got = actual.dtype
    else:
        got = tf.as_dtype(as_numpy(actual, name).dtype)
    if got != expected:
        _fail(f"{name} has dtype {got.name}; expected {expected.name}.", hint)


def check_close(actual, expected, atol: float = 1e-6, rtol: float = 1e-6, name: str = "result",
                hint: str | None = None) -> None:
    """`actual` equals `expected` elementwise within `atol + rtol * |expected|`.

    Checks the shape first (no silent broadcasting), then the values, and
    reports how many entries differ, the largest error and where it is.
    """
    expected_array = as_numpy(expected, "expected")
    actual_array = as_numpy(actual, name)
    if actual_array.shape != expected_array.shape:
        _fail(
            f"{name} has shape {actual_array.shape}; expected {expected_array.shape}.",
            hint,
        )
    if actual_array.dtype == object:
        _fail(f"{name} holds Python objects, not numbers: {actual_array!r:.200}", hint)
    a = actual_array.astype(np.float64)
    e = expected_array.astype(np.float64)
    bad_nan = np.isnan(a) & ~np.isnan(e)
    if bad_nan.any():
        where = tuple(int(i) for i in np.argwhere(bad_nan)[0])
        _fail(
            f"{name} has {int(bad_nan.sum())} NaN entries (the first at index {where}); "
            "expected finite numbers.",
            hint or "a learning rate too large, or a division by zero, gives NaN.",
        )
    error = np.abs(a - e)
    error = np.where(np.isnan(a) & np.isnan(e), 0.0, error)
    tolerance = atol + rtol * np.abs(e)
    wrong = ~(error <= tolerance)
    if wrong.any():
        flat = int(np.argmax(np.where(wrong, error, -1.0)))
        where = np.unravel_index(flat, a.shape) if a.shape else ()
        where = tuple(int(i) for i in where)
        location = f" at index {where}" if where else ""
        _fail(
            f"{name} differs from the expected value in {int(wrong.sum())} of {a.size} "
            f"entries; the largest error is {error[where]:.3g}{location} "
            f"(got {a[where]:.6g}, expected {e[where]:.6g}; tolerance atol={atol:g}, "
            f"rtol={rtol:g}).",
            hint,
        )


def check_finite(actual, name: str = "result", hint: str | None = None) -> None:
    """Every entry of `actual` is finite (no NaN or infinity)."""
    array = as_numpy(actual, name).astype(np.float64)
    bad = ~np.isfinite(array)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        _fail(
            f"{name} has {int(bad.sum())} entries that are NaN or infinite "
            f"(the first at index {where}).",
            hint or "training diverged: is the loss a mean, and the learning rate small enough?",
        )


def check_indexed_slices(actual, indices=None, values=None, dense_shape=None,
                         atol: float = 1e-6, rtol: float = 1e-6, name: str = "result",
                         hint: str | None = None) -> None:
    """`actual` is a `tf.IndexedSlices` with the given indices, values and dense shape.

    Indices are compared in order (call it on a deduplicated, sorted result when
    order matters); values within `atol` / `rtol`.
    """
    if not isinstance(actual, tf.IndexedSlices):
        kind = type(actual).__name__
        _fail(
            f"{name} is of type {kind}; expected a tf.IndexedSlices (a sparse gradient).",
            hint or "the result is dense: did you call tf.convert_to_tensor, tf.add_n, "
            "or multiply by a tensor?",
        )
    if indices is not None:
        got = np.asarray(actual.indices.numpy()).tolist()
        want = np.asarray(indices).tolist()
        if got != want:
            _fail(f"{name}.indices are {_listing(got)}; expected {_listing(want)}.", hint)
    if values is not None:
        check_close(actual.values, values, atol=atol, rtol=rtol, name=f"{name}.values",
                    hint=hint)
    if dense_shape is not None:
        got = None if actual.dense_shape is None else np.asarray(actual.dense_shape).tolist()
        want = list(dense_shape)
        if got != want:
            _fail(f"{name}.dense_shape is {got}; expected {want}.", hint)


def rows_changed(before, after) -> list[int]:
    """The library's version of notebook 01's exercise `rows_changed`: sorted ids of the
    rows (entries along the first axis) of `before` and `after`, arrays or tensors of
    one shape, that differ in any entry, compared exactly (NaN equals NaN)."""
    before, after = np.asarray(before), np.asarray(after)
    if before.ndim == 0:
        return [] if np.array_equal(before, after, equal_nan=True) else [0]
    differs = ~np.isclose(before, after, rtol=0.0, atol=0.0, equal_nan=True)
    # not reshape(len, -1): a table of no rows has no -1 to infer
    return np.flatnonzero(differs.reshape(len(before), int(np.prod(before.shape[1:])))
                          .any(axis=1)).tolist()


def _rows_changed_checked(before, after, name: str, hint: str | None) -> list[int]:
    """rows_changed, after checking that both are arrays of one shape."""
    b = as_numpy(before, f"{name} before")
    a = as_numpy(after, f"{name} after")
    if a.shape != b.shape:
        _fail(f"{name} changed shape from {b.shape} to {a.shape}.", hint)
    return rows_changed(b, a)


def check_unchanged(before, after, name: str = "variable", rows=None,
                    hint: str | None = None) -> None:
    """`after` is bit-identical to `before` (only in `rows`, when given)."""
    changed = _rows_changed_checked(before, after, name, hint)
    if rows is not None:
        keep = set(np.asarray(rows).ravel().tolist())
        changed = [r for r in changed if r in keep]
    if changed:
        _fail(f"{name} should not have changed, but rows {_listing(changed)} did.", hint)


def check_rows_changed(before, after, expected_rows, name: str = "variable",
                       hint: str | None = None) -> None:
    """Exactly `expected_rows` of `after` differ from `before`."""
    changed = _rows_changed_checked(before, after, name, hint)
    expected = sorted(set(np.asarray(expected_rows).ravel().tolist()))
    if changed != expected:
        extra = sorted(set(changed) - set(expected))
        missing = sorted(set(expected) - set(changed))
        parts = []
        if extra:
            parts.append(f"rows {_listing(extra)} changed but should not have")
        if missing:
            parts.append(f"rows {_listing(missing)} should have changed but did not")
        _fail(f"{name}: " + "; ".join(parts) + ".", hint)


def check_is_variable(actual, name: str = "result", hint: str | None = None) -> None:
    """`actual` is a `tf.Variable` (a Keras variable is accepted too)."""
    if isinstance(actual, tf.Variable):
        return
    value = getattr(actual, "value", None)
    if isinstance(value, tf.Variable):  # keras.Variable wraps a tf.Variable
        return
    _fail(
        f"{name} is of type {type(actual).__name__}; expected a tf.Variable.",
        hint or "tensors are immutable: keep the tf.Variable and update it with "
        "assign / assign_sub.",
    )


def check_same_objects(actual, expected, name: str = "result", hint: str | None = None) -> None:
    """`actual` holds the very objects of `expected`, in order (identity, not equality)."""
    actual = list(actual) if actual is not None else None
    if actual is None:
        _fail(f"{name} is None; expected the {len(expected)} original objects.", hint)
    if len(actual) != len(expected):
        _fail(f"{name} has {len(actual)} items; expected {len(expected)}.", hint)
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        if a is not e:
            _fail(
                f"{name}[{i}] is a new {type(a).__name__}, not the object passed in.",
                hint or "update the variables in place (assign_sub) instead of "
                "creating new ones: a model holds on to its own variables.",
            )


def check_no_none(values, name: str = "result", hint: str | None = None) -> None:
    """No entry of the list `values` is None."""
    values = list(values)
    missing = [i for i, v in enumerate(values) if v is None]
    if missing:
        _fail(f"{name}: None at positions {_listing(missing)}; expected a value for each.",
              hint)


def check_same_slices(actual, expected: tf.IndexedSlices, atol: float = 1e-6,
                      name: str = "result", hint: str | None = None) -> None:
    """`actual` is an IndexedSlices equal to `expected`: indices (values and dtype), values
    and dense shape, entry by entry in the same order."""
    check_indexed_slices(actual, indices=expected.indices.numpy(), values=expected.values,
                         dense_shape=np.asarray(expected.dense_shape).tolist(), atol=atol,
                         name=name, hint=hint)
    check_dtype(actual.indices, expected.indices.dtype, name=f"{name}.indices", hint=hint)


def _plain(value, name: str, hint: str | None):
    """`value` as built-in Python values only (numbers, strings, lists, tuples, dicts, None),
    so that no object of the code under test decides what `==` means."""
    if value is None or type(value) in (bool, int, float, str, bytes):
        return value
    if isinstance(value, (np.generic,)):
        return value.item()
    if isinstance(value, (np.ndarray, tf.Tensor, tf.Variable)):
        return _plain(as_numpy(value, name).tolist(), name, hint)
    if isinstance(value, (list, tuple)):
        items = [_plain(v, name, hint) for v in list.__iter__(value)] \
            if isinstance(value, list) else [_plain(v, name, hint) for v in tuple.__iter__(value)]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {_plain(k, name, hint): _plain(v, name, hint) for k, v in dict.items(value)}
    if isinstance(value, (bool, int, float, str)):  # a subclass: its plain value
        base = next(t for t in (bool, int, float, str) if isinstance(value, t))
        return base(value) if base is not str else str.__str__(value)
    _fail(f"{name} holds a {type(value).__name__}, where plain values (numbers, strings, "
          "lists, tuples, dicts) were expected.", hint)


def check_equal(actual, expected, name: str = "result", hint: str | None = None) -> None:
    """`actual == expected` for plain values (strings, lists, tuples, dicts, numbers).

    Both sides are first turned into built-in values (see `_plain`), so an object that
    says it equals anything does not pass. Lists and tuples are compared item by item (the
    first difference is named); dicts key by key (missing, extra and different keys are
    listed).
    """
    actual = _plain(actual, name, hint)
    expected = _plain(expected, "expected", hint)
    if isinstance(expected, dict) and isinstance(actual, dict):
        missing = [k for k in expected if k not in actual]
        extra = [k for k in actual if k not in expected]
        differ = [k for k in expected if k in actual and actual[k] != expected[k]]
        if missing or extra or differ:
            parts = []
            if missing:
                parts.append(f"keys missing: {_listing(missing)}")
            if extra:
                parts.append(f"unexpected keys: {_listing(extra)}")
            if differ:
                k = differ[0]
                parts.append(f"{len(differ)} keys differ, e.g. {k!r}: got {actual[k]!r}, "
                             f"expected {expected[k]!r}")
            _fail(f"{name}: " + "; ".join(parts) + ".", hint)
        return
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        for i, (a, e) in enumerate(zip(actual, expected, strict=False)):
            if a != e:
                _fail(f"{name}[{i}] is {a!r}; expected {e!r} (in {name} = {actual!r:.300}).",
                      hint)
        if len(actual) != len(expected):
            _fail(f"{name} has {len(actual)} items; expected {len(expected)}: got "
                  f"{actual!r:.300}, expected {expected!r:.300}.", hint)
        return
    if actual != expected or type(actual) is not type(expected) and not (
            isinstance(actual, (int, float)) and isinstance(expected, (int, float))):
        _fail(f"{name} is {actual!r:.300}; expected {expected!r:.300}.", hint)


def check_instance(actual, expected_type: type, name: str = "result",
                   hint: str | None = None) -> None:
    """`actual` is an instance of `expected_type`. While a notebook is graded its objects
    stay in its kernel, whose word for a type is not taken: a Keras model or layer type is
    checked on the model rebuilt from its config (`observe.keras_model`), and any other
    object of the kernel fails (a test checks the type of data, which crosses)."""
    import keras

    from embeddings_course import observe

    if observe.is_remote(actual) and issubclass(expected_type, keras.layers.Layer):
        actual = observe.keras_model(actual, name=name, hint=hint)
    if observe.is_remote(actual):
        _fail(f"{name} is an object that stays in the notebook's kernel ({actual!r}); "
              f"expected a {expected_type.__name__}, which the grader can check only on "
              "data.", hint)
    ok = isinstance(actual, expected_type)
    got = type(actual).__name__
    if not ok:
        _fail(f"{name} is a {got}; expected a {expected_type.__module__.split('.')[0]}."
              f"{expected_type.__name__}.", hint)


# -- the hidden tests' randomness -------------------------------------------------------

_SECRET: bytes | None = None  # the grading run's secret, while the grader runs a test


def hidden_seed(literal: int) -> int:
    """The seed a hidden test draws its inputs with: `literal` itself where no grader set a
    secret (the solution notebook run top to bottom, `make release`, the validation), else
    a seed made from `literal` and the grading run's secret (HMAC-SHA256, 31 bits), other
    at every grading, so that inputs a submission recorded at one grading are worth
    nothing at the next. Visible tests keep their literals: Validate has no secret."""
    if _SECRET is None:
        return int(literal)
    digest = hmac.new(_SECRET, str(int(literal)).encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@contextlib.contextmanager
def hidden_seeds(secret: bytes):
    """While this holds, `hidden_seed` draws from `secret`. The grader enters it around
    each test cell it runs, in its own process (the course's pyproject.toml names this
    module as the `seeds` the grader uses); the secret stays in that process's memory:
    not in an environment variable, which every process the grader starts would inherit,
    and never in the student's kernel, which imports this module too but never runs a
    test. This module imports nothing of the grader."""
    global _SECRET
    previous, _SECRET = _SECRET, bytes(secret)
    try:
        yield
    finally:
        _SECRET = previous
