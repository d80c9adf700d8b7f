"""Check helpers that teach.

Every test cell of the course calls these. A failing check raises `CheckFailed`
(an `AssertionError`) whose message starts with what came back and what was expected
("name: got ..., expected ...", on its first line), then the detail (shape, dtype, the
largest error and where, which rows differ) and, where a common mistake is known, a
hint. They never only print. The notebook's kernel shows each message whole, wrapped to
the width where Validate reads it (`messages`).

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
    "check_int_list",
    "check_rows_written",
    "check_logits",
    "draw_weights",
    "error_line",
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


def _sentence(parts: Sequence[str]) -> str:
    """`parts` as one sentence: joined by semicolons, its first letter a capital."""
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + "."


def _shown(value, limit: int) -> str:
    """`repr(value)`, or for a long one its first `limit` characters and how long it is:
    a message names a value, it does not print ten thousand numbers."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters in all)"


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
        _fail(f"{name}: got None, expected a value.", "did the function forget to `return`?")
    if isinstance(value, tf.IndexedSlices):
        _fail(
            f"{name}: got a tf.IndexedSlices, expected a dense tensor.",
            "convert it with tf.convert_to_tensor, or check it with check_indexed_slices.",
        )
    if isinstance(value, tf.Variable):
        value = value.read_value()
    if isinstance(value, tf.Tensor):
        return value.numpy()
    try:
        return np.asarray(value)
    except Exception as error:  # a ragged list, an object
        _fail(f"{name}: got a {type(value).__name__}, expected an array or a tensor.\n"
              f"It cannot be read as an array: {error}")


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
        _fail(f"{name}: got shape {got}, expected {expected_shape}.", hint)


def check_dtype(actual, expected_dtype, name: str = "result", hint: str | None = None) -> None:
    """`actual` has `expected_dtype` (a tf.DType, NumPy dtype or name such as "float32")."""
    expected = tf.as_dtype(expected_dtype)
    if isinstance(actual, (tf.Tensor, tf.Variable, tf.IndexedSlices)):
        got = actual.dtype
    else:
        got = tf.as_dtype(as_numpy(actual, name).dtype)
    if got != expected:
        _fail(f"{name}: got dtype {got.name}, expected {expected.name}.", hint)


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
            f"{name}: got shape {actual_array.shape}, expected {expected_array.shape}.",
            hint,
        )
    if actual_array.dtype == object:
        _fail(f"{name}: got Python objects, expected numbers: {_shown(actual_array, 200)}", hint)
    a = actual_array.astype(np.float64)
    e = expected_array.astype(np.float64)
    bad_nan = np.isnan(a) & ~np.isnan(e)
    if bad_nan.any():
        where = tuple(int(i) for i in np.argwhere(bad_nan)[0])
        _fail(
            f"{name}: got NaN at index {where}, expected {e[where]:.6g}.\n"
            f"{int(bad_nan.sum())} of {a.size} entries are NaN.",
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
            f"{name}: got {a[where]:.6g}{location}, expected {e[where]:.6g}.\n"
            f"{int(wrong.sum())} of {a.size} entries differ; the largest error is "
            f"{error[where]:.3g}{location} (tolerance atol={atol:g}, rtol={rtol:g}).",
            hint,
        )


def check_finite(actual, name: str = "result", hint: str | None = None) -> None:
    """Every entry of `actual` is finite (no NaN or infinity)."""
    array = as_numpy(actual, name).astype(np.float64)
    bad = ~np.isfinite(array)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        _fail(
            f"{name}: got {array[where]:g} at index {where}, expected finite numbers.\n"
            f"{int(bad.sum())} of {array.size} entries are NaN or infinite.",
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
            f"{name}: got a {kind}, expected a tf.IndexedSlices (a sparse gradient).",
            hint or "the result is dense: did you call tf.convert_to_tensor, tf.add_n, "
            "or multiply by a tensor?",
        )
    if indices is not None:
        got = np.asarray(actual.indices.numpy()).tolist()
        want = np.asarray(indices).tolist()
        if got != want:
            _fail(f"{name}.indices: got {_listing(got)}, expected {_listing(want)}.", hint)
    if values is not None:
        check_close(actual.values, values, atol=atol, rtol=rtol, name=f"{name}.values",
                    hint=hint)
    if dense_shape is not None:
        got = None if actual.dense_shape is None else np.asarray(actual.dense_shape).tolist()
        want = list(dense_shape)
        if got != want:
            _fail(f"{name}.dense_shape: got {got}, expected {want}.", hint)


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
        _fail(f"{name}: got shape {a.shape}, expected {b.shape}, the shape it had before.",
              hint)
    return rows_changed(b, a)


def check_unchanged(before, after, name: str = "variable", rows=None,
                    hint: str | None = None) -> None:
    """`after` is bit-identical to `before` (only in `rows`, when given)."""
    changed = _rows_changed_checked(before, after, name, hint)
    if rows is not None:
        keep = set(np.asarray(rows).ravel().tolist())
        changed = [r for r in changed if r in keep]
    if changed:
        _fail(f"{name}: got rows {_listing(changed)} changed, expected no change.", hint)


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
        _fail(f"{name}: got rows {_listing(changed)} changed, expected {_listing(expected)}.\n"
              + _sentence(parts), hint)


def check_is_variable(actual, name: str = "result", hint: str | None = None) -> None:
    """`actual` is a `tf.Variable` (a Keras variable is accepted too)."""
    if isinstance(actual, tf.Variable):
        return
    value = getattr(actual, "value", None)
    if isinstance(value, tf.Variable):  # keras.Variable wraps a tf.Variable
        return
    _fail(
        f"{name}: got a {type(actual).__name__}, expected a tf.Variable.",
        hint or "tensors are immutable: keep the tf.Variable and update it with "
        "assign / assign_sub.",
    )


def check_same_objects(actual, expected, name: str = "result", hint: str | None = None) -> None:
    """`actual` holds the very objects of `expected`, in order (identity, not equality)."""
    actual = list(actual) if actual is not None else None
    if actual is None:
        _fail(f"{name}: got None, expected the {len(expected)} original objects.", hint)
    if len(actual) != len(expected):
        _fail(f"{name}: got {len(actual)} items, expected {len(expected)}.", hint)
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        if a is not e:
            _fail(
                f"{name}[{i}]: got a new {type(a).__name__}, expected the object passed in.",
                hint or "update the variables in place (assign_sub) instead of "
                "creating new ones: a model holds on to its own variables.",
            )


def check_no_none(values, name: str = "result", hint: str | None = None) -> None:
    """No entry of the list `values` is None."""
    values = list(values)
    missing = [i for i, v in enumerate(values) if v is None]
    if missing:
        _fail(f"{name}: got None at positions {_listing(missing)}, expected a value for "
              "each.", hint)


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
    _fail(f"{name}: got a {type(value).__name__}, expected plain values (numbers, "
          "strings, lists, tuples, dicts).", hint)


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
            if differ:
                k = differ[0]
                first = (f"{name}[{k!r}]: got {_shown(actual[k], 200)}, expected "
                         f"{_shown(expected[k], 200)}.")
            elif missing:
                first = f"{name}: got no key {missing[0]!r}, expected one."
            else:
                first = f"{name}: got the key {extra[0]!r}, expected none of that name."
            parts = []
            if missing:
                parts.append(f"keys missing: {_listing(missing)}")
            if extra:
                parts.append(f"unexpected keys: {_listing(extra)}")
            if differ:
                parts.append(f"{len(differ)} keys differ")
            _fail(first + "\n" + _sentence(parts), hint)
        return
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        for i, (a, e) in enumerate(zip(actual, expected, strict=False)):
            if a != e:
                _fail(f"{name}[{i}]: got {_shown(a, 200)}, expected {_shown(e, 200)}.\n"
                      f"(in {name} = {_shown(actual, 300)})", hint)
        if len(actual) != len(expected):
            _fail(f"{name}: got {len(actual)} items, expected {len(expected)}.\n"
                  f"Got {_shown(actual, 300)}, expected {_shown(expected, 300)}.", hint)
        return
    if actual != expected or type(actual) is not type(expected) and not (
            isinstance(actual, (int, float)) and isinstance(expected, (int, float))):
        _fail(f"{name}: got {_shown(actual, 300)}, expected {_shown(expected, 300)}.", hint)


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
        _fail(f"{name}: got an object that stays in the notebook's kernel ({actual!r}), "
              f"expected a {expected_type.__name__}, which the grader can check only on "
              "data.", hint)
    ok = isinstance(actual, expected_type)
    got = type(actual).__name__
    if not ok:
        _fail(f"{name}: got a {got}, expected a {expected_type.__module__.split('.')[0]}."
              f"{expected_type.__name__}.", hint)


def check_rows_written(writes, expected_rows, name: str = "the update",
                       hint: str | None = None) -> None:
    """`writes` (`observe.variable_writes`: what an update's graph wrote) write the first
    variable's `expected_rows` and nothing else: no write of a whole variable, no row
    outside them, no other variable."""
    expected = sorted({int(i) for i in np.asarray(expected_rows).ravel().tolist()})
    if not writes:
        _fail(f"{name}: got no write of the variable, expected rows {_listing(expected)} "
              "written.", hint or "update the variable itself, in place (scatter_sub).")
    whole = [w for w in writes if w["rows"] is None]
    if whole:
        _fail(f"{name}: got a write of the whole variable ({whole[0]['op']}), expected "
              f"rows {_listing(expected)} only.",
              hint or "a dense update (the gradient made dense, then assign_sub) writes "
              "every row: scatter the batch's rows only (scatter_sub).")
    others = [w for w in writes if w["variable"] != 0]
    if others:
        _fail(f"{name}: got a write of another variable ({others[0]['op']}), expected "
              "writes of the variable passed in only.", hint)
    written = sorted({r for w in writes for r in w["rows"]})
    if written != expected:
        _fail(f"{name}: got rows {_listing(written)} written, expected "
              f"{_listing(expected)}.",
              hint or "name only the batch's rows in the update: an IndexedSlices that "
              "lists every row of the table is a dense update in disguise.")


def draw_weights(model, seed: int, scale: float = 1.0) -> None:
    """Give every floating-point weight of `model` new values drawn from a normal
    distribution of standard deviation `scale` (NumPy's generator seeded with `seed`).

    A model just built has small weights, and its logits can all fall between 0 and 1 by
    chance: with 2 tags and tokens alike, about 2 models in 100. Drawn at scale 1, each
    logit falls between 0 and 1 about 1 time in 4, so `check_logits` can tell them from
    probabilities; an activation keeps its outputs in [0, 1] whatever the weights."""
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        dtype = np.dtype(getattr(weight.dtype, "as_numpy_dtype", weight.dtype))
        if np.issubdtype(dtype, np.floating):
            weight.assign(rng.normal(0.0, scale, tuple(weight.shape)).astype(dtype))


def check_logits(actual, name: str = "the outputs", hint: str | None = None) -> None:
    """`actual` (at least 8 numbers, each position's scores along the last axis) are
    logits, not probabilities: not all in [0, 1] with each position's summing to 1 (a
    softmax), nor all in (0, 1) (a sigmoid). Give it the outputs of a model whose weights
    `draw_weights` drew, for tokens that differ: its logits then fall below 0 and above 1
    somewhere among that many, and only an activation makes them all look like
    probabilities."""
    values = as_numpy(actual, name).astype(np.float64)
    if values.size < 8:
        raise ValueError("check_logits needs at least 8 numbers to tell logits apart")
    if values.min() >= 0 and np.allclose(values.sum(-1), 1.0, atol=1e-3):
        _fail(f"{name}: got probabilities (each position's sum to 1, e.g. "
              f"{np.round(values.reshape(-1, values.shape[-1])[0], 3).tolist()}), "
              "expected logits.",
              hint or "the loss applies the softmax itself (from_logits=True): end with a "
              "Dense layer without an activation.")
    if values.min() > 0 and values.max() < 1:
        _fail(f"{name}: got values all between 0 and 1 (from {values.min():.3g} to "
              f"{values.max():.3g}), as a sigmoid gives, expected logits.",
              hint or "the loss takes logits: end with a Dense layer without an "
              "activation.")


def error_line(error: BaseException) -> str:
    """The line of `error`'s message that says what went wrong, whole: its first line, or
    for an error raised while tracing (TensorFlow's "in user code:", then the frames) its
    last line; "" for an error without a message."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[-1] if lines[0].endswith("in user code:") else lines[0]


def _type_name(value) -> str:
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else \
        f"{kind.__module__.split('.')[0]}.{kind.__name__}"


def check_int_list(actual, name: str = "result", hint: str | None = None) -> None:
    """`actual` is a Python list whose items are Python ints (not NumPy's integers, not
    bools): what a docstring promises with "returns a list of ints"."""
    if not isinstance(actual, list):
        _fail(f"{name}: got a {_type_name(actual)}, expected a list of ints.",
              hint or "build a list: [int(i) for i in ...], or .tolist() of an array.")
    for i, item in enumerate(list.__iter__(actual)):
        if type(item) is not int:
            _fail(f"{name}[{i}]: got a {_type_name(item)} ({_shown(item, 40)}), expected an "
                  "int.",
                  hint or "int(i) makes a Python int of a NumPy integer (.tolist() of an "
                  "array gives ints).")


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
