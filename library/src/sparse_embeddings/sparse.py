"""Sparse updates of an embedding table, as plain functions.

These are the library versions of the exercises of notebooks 02 and 03: the
notebooks ask students to write them, and later notebooks (and the benchmark)
import these so that a student's unfinished exercise cannot break them.

Each function works on a `tf.IndexedSlices`, the gradient that autodiff gives a
`tf.gather` (and so a Keras `Embedding`), and touches only the rows it names:
the point of the course is that a step costs time in proportion to the batch,
not to the table.

    >>> var = tf.Variable(tf.zeros((4, 2)))
    >>> g = tf.IndexedSlices(tf.ones((3, 2)), tf.constant([1, 3, 1]), tf.constant([4, 2]))
    >>> _ = sparse_sgd_update(var, g, lr=0.5)  # row 1 moves by -1.0, row 3 by -0.5
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["deduplicate", "sum_duplicates", "sparse_sgd_update", "lazy_adam_update"]


def _as_tf_variable(var, name: str):
    """The `tf.Variable` behind `var` (a `keras.Variable` wraps one), so that
    `tf.gather` reads only the rows it names and scatter ops exist."""
    if isinstance(var, tf.Variable):
        return var
    inner = getattr(var, "value", None)
    if isinstance(inner, tf.Variable):
        return inner
    raise TypeError(
        f"{name} is a {type(var).__name__}; expected a tf.Variable (or a keras.Variable): "
        "a sparse update writes rows in place."
    )


def _check_slices(slices, name: str = "slices") -> None:
    if not isinstance(slices, tf.IndexedSlices):
        raise TypeError(
            f"{name} is a {type(slices).__name__}; expected a tf.IndexedSlices (a sparse "
            "gradient, such as the one tape.gradient gives for tf.gather)."
        )
    if not slices.indices.dtype.is_integer:
        raise TypeError(f"{name}.indices have dtype {slices.indices.dtype.name}; expected int32 "
                        "or int64.")


def deduplicate(slices: tf.IndexedSlices) -> tf.IndexedSlices:
    """The same gradient with each row named once: unique, sorted indices, summed values.

    Library version of notebook 02's exercise `deduplicate`.

    A batch names a row once per occurrence (a word used twice in a sentence);
    the gradient of that row is the sum of the pieces. Scatter-adding the raw
    slices gives the same sum, but anything nonlinear in the gradient (a norm
    cap, Adam's squared gradient) must see the sum, so it deduplicates first.
    Indices keep their dtype, and `dense_shape` is kept as it is.
    """
    _check_slices(slices)
    unique_ids, positions = tf.unique(slices.indices)
    summed = tf.math.unsorted_segment_sum(slices.values, positions, tf.size(unique_ids))
    # tf.unique keeps the order of first occurrence; sort so that results are canonical.
    order = tf.argsort(unique_ids)
    return tf.IndexedSlices(
        tf.gather(summed, order), tf.gather(unique_ids, order), slices.dense_shape
    )


def sum_duplicates(slices: tf.IndexedSlices) -> tf.IndexedSlices:
    """Each row named once, its pieces summed, in the order of first occurrence.

    `deduplicate` without the sort, for updates that scatter the result: the
    order of the rows does not matter to a scatter. The sum is `tf.scatter_nd`'s,
    which adds the pieces of a row in their order, as `unsorted_segment_sum`
    does, and was two to three times faster than it on 2 CPU cores (1,024 ids
    x 64, TF 2.21).
    """
    _check_slices(slices)
    unique_ids, positions = tf.unique(slices.indices)
    if _compiling_with_xla():
        # XLA needs scatter_nd's shape at compile time; it has its own segment sum.
        summed = tf.math.unsorted_segment_sum(slices.values, positions, tf.size(unique_ids))
    else:
        shape = tf.concat([tf.shape(unique_ids), tf.shape(slices.values)[1:]], axis=0)
        summed = tf.scatter_nd(tf.expand_dims(positions, 1), slices.values, shape)
    return tf.IndexedSlices(summed, unique_ids, slices.dense_shape)


def _compiling_with_xla() -> bool:
    """True while tracing a function compiled with XLA (`jit_compile=True`,
    as Keras's `model.fit` may choose). TensorFlow has no public test for it:
    this uses the private one Keras 2 used, and assumes XLA if it is gone."""
    try:
        from tensorflow.python.ops import control_flow_util  # noqa: PLC0415
    except ImportError:  # pragma: no cover - a TensorFlow that moved it
        return True
    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def sparse_sgd_update(var, slices: tf.IndexedSlices, lr):
    """One SGD step on the rows that `slices` names: `var[i] -= lr * g[i]`, in place.

    Library version of notebook 03's exercise `sparse_sgd_update`.

    `scatter_sub` adds every piece of a duplicate index, so duplicates need no
    deduplication here: the row moves by `lr` times the summed gradient. Other
    rows are not read or written. Returns the variable (the same object).
    """
    _check_slices(slices)
    variable = _as_tf_variable(var, "var")
    lr = tf.cast(lr, variable.dtype)
    step = tf.IndexedSlices(
        lr * tf.cast(slices.values, variable.dtype), slices.indices, slices.dense_shape
    )
    variable.scatter_sub(step)
    return var


def lazy_adam_update(var, m, v, slices: tf.IndexedSlices, step, lr, beta_1=0.9, beta_2=0.999,
                     epsilon=1e-7):
    """One "lazy" Adam step: moments and values of only the touched rows change.

    Library version of notebook 03's exercise `lazy_adam_update`.

    For each row `i` in the (deduplicated) gradient `g`:

        m[i] = beta_1 * m[i] + (1 - beta_1) * g[i]
        v[i] = beta_2 * v[i] + (1 - beta_2) * g[i] ** 2
        var[i] -= alpha * m[i] / (sqrt(v[i]) + epsilon)
        alpha = lr * sqrt(1 - beta_2 ** step) / (1 - beta_1 ** step)

    This is exactly Keras 3 Adam's formulation (bias correction folded into
    `alpha`, `epsilon` added to `sqrt(v)` uncorrected), restricted to the rows in
    the batch. Plain Adam decays `m` and `v` of every row at every step, so rows
    that left the batch keep moving; here rows outside the batch are neither
    read nor written, so they stay bit-identical and a step costs time in
    proportion to the batch, not the table.

    `step` is the 1-based number of this step (the bias correction of step 1
    divides by `1 - beta_1`). Duplicate indices are summed first, since `v`
    needs the square of the summed gradient. Returns `var`.

    Every table is written with `scatter_update`: the rows of `var` are read,
    changed and written back, since on CPU a `scatter_sub` of the same rows took
    four times as long (see `sparse_embeddings.optimizers`). `LazyAdam`'s sparse step
    is this function, so the two agree bit for bit.
    """
    _check_slices(slices)
    variable = _as_tf_variable(var, "var")
    m_var = _as_tf_variable(m, "m")
    v_var = _as_tf_variable(v, "v")
    dtype = variable.dtype
    unique = sum_duplicates(slices)
    ids = unique.indices
    grad = tf.cast(unique.values, dtype)

    lr = tf.cast(lr, dtype)
    step = tf.cast(step, dtype)
    # `1 - beta` is taken before the cast, as Keras Adam does: float32(1 - 0.9) is 0.1, but
    # 1 - float32(0.9) is 0.100000024, enough to differ by 1e-6 in a few steps.
    keep_1 = tf.cast(1 - beta_1, dtype)
    keep_2 = tf.cast(1 - beta_2, dtype)
    beta_1 = tf.cast(beta_1, dtype)
    beta_2 = tf.cast(beta_2, dtype)
    epsilon = tf.cast(epsilon, dtype)
    alpha = lr * tf.sqrt(1 - tf.pow(beta_2, step)) / (1 - tf.pow(beta_1, step))

    m_rows = tf.gather(m_var, ids)
    v_rows = tf.gather(v_var, ids)
    m_rows = m_rows + (grad - m_rows) * keep_1  # beta_1 * m + (1 - beta_1) * g, as Keras
    v_rows = v_rows + (tf.square(grad) - v_rows) * keep_2
    var_rows = tf.gather(variable, ids) - alpha * m_rows / (tf.sqrt(v_rows) + epsilon)
    m_var.scatter_update(tf.IndexedSlices(m_rows, ids))
    v_var.scatter_update(tf.IndexedSlices(v_rows, ids))
    # ids are unique, so each row is written once.
    variable.scatter_update(tf.IndexedSlices(var_rows, ids))
    return var
