"""`LazyAdam`: Adam that, for sparse gradients, updates only the rows in the batch.

Keras 3 has no lazy Adam (TF Addons, which had one, reached end of life in
2024), and `keras.optimizers.Adam` applied to a `tf.IndexedSlices` gradient is
dense in cost and in effect: it decays the moments of every row at every step,
so rows that left the batch keep moving, and a step over a 1,000,000-row table
costs hundreds of milliseconds. `LazyAdam` applies Adam to the touched rows only
(their moments, their values), and leaves every other row, and its moments,
bit-identical. For dense gradients it is Keras Adam.

    >>> model.compile(optimizer=LazyAdam(learning_rate=1e-3), loss="mse")

What "lazy" changes: a row's moments decay only at the steps its row is in the
batch, so a rare word keeps its momentum until it comes back. That is the
usual, deliberate trade (TF 1's `LazyAdamOptimizer`, PyTorch's `SparseAdam`).

What the speed depends on, measured on TF 2.21 / Keras 3.15, 2 CPU cores, a
1,000,000 x 64 table and 1,024 ids (`benchmarks/bench_sparse_step.py`, and per-op
times from a TF 1 session's `RunMetadata` trace):
- `tf.gather` on a `keras.Variable` reads the whole table before gathering, so
  rows are gathered from the `tf.Variable` behind it (`variable.value`); the
  optimizer's `assign` scatters a `tf.IndexedSlices` into that `tf.Variable`.
- On CPU, `ResourceScatterSub` took about 360 us for 768 rows, while gathering
  the same rows and writing them back with `ResourceScatterUpdate` took about
  90 us together; so the parameter rows are read, changed and written back.
- Summing duplicates with `tf.scatter_nd` took about 95 us where
  `tf.math.unsorted_segment_sum` took about 290 us.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from sparse_embeddings.sparse import lazy_adam_update, sum_duplicates

__all__ = ["LazyAdam"]


def _tf_variable(variable):
    """The `tf.Variable` behind a `keras.Variable` (or the variable itself).

    Under the TensorFlow backend, `update_step` already receives `tf.Variable`s
    (the backend unwraps them for tf.distribute); optimizer slots are
    `keras.Variable`s.
    """
    inner = getattr(variable, "value", None)
    return inner if isinstance(inner, tf.Variable) else variable


@keras.saving.register_keras_serializable(package="sparse_embeddings")
class LazyAdam(keras.optimizers.Optimizer):
    """Adam that updates only the rows named by a sparse (`tf.IndexedSlices`) gradient.

    Args:
        learning_rate: a float, a `keras.optimizers.schedules.LearningRateSchedule`
            or a callable, as for `keras.optimizers.Adam`. Defaults to 0.001.
        beta_1: decay rate of the first moment. Defaults to 0.9.
        beta_2: decay rate of the second moment. Defaults to 0.999.
        epsilon: added to `sqrt(v)`, as in Keras Adam. Defaults to 1e-7.
        **kwargs: passed to `keras.optimizers.Optimizer`: `name`, `clipnorm`,
            `clipvalue`, `global_clipnorm`, `weight_decay`, `use_ema`, ...

    For a `tf.IndexedSlices` gradient, duplicate indices are summed first, then
    for each touched row `i`, at step `t` (1-based, `iterations + 1`):

        m[i] += (1 - beta_1) * (g[i] - m[i])
        v[i] += (1 - beta_2) * (g[i] ** 2 - v[i])
        var[i] -= lr * sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t) * m[i] / (sqrt(v[i]) + epsilon)

    which is Keras Adam's update written for those rows. A dense gradient gets
    Keras Adam's update exactly.

    Clipping keeps gradients sparse: with `clipnorm`, `global_clipnorm` or
    `clipvalue`, sparse gradients are deduplicated first, so that the norm (or
    the cap) is that of the gradient as a dense tensor would have it; Keras's own
    clipping counts a duplicate index once per piece, or densifies.

    Caveats: `weight_decay` (inherited) decays every row of every variable, as
    AdamW does, which is exactly what a lazy optimizer is chosen to avoid; and
    `gradient_accumulation_steps` accumulates into dense buffers.
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def build(self, var_list):
        """Create the first- and second-moment slots, one pair per variable, zeros."""
        if self.built:
            return
        super().build(var_list)
        self._momentums = []
        self._velocities = []
        for variable in var_list:
            self._momentums.append(
                self.add_variable_from_reference(variable, name="momentum")
            )
            self._velocities.append(
                self.add_variable_from_reference(variable, name="velocity")
            )

    def _clip_gradients(self, grads):
        """Clip as Keras does, but keep `tf.IndexedSlices` sparse and count duplicates once."""
        clipping = (
            (self.clipnorm and self.clipnorm > 0)
            or (self.global_clipnorm and self.global_clipnorm > 0)
            or (self.clipvalue and self.clipvalue > 0)
        )
        if not clipping:
            return grads
        grads = [sum_duplicates(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]

        def values(g):
            return g.values if isinstance(g, tf.IndexedSlices) else g

        def rebuild(g, new_values):
            if isinstance(g, tf.IndexedSlices):
                return tf.IndexedSlices(new_values, g.indices, g.dense_shape)
            return new_values

        if self.clipnorm and self.clipnorm > 0:
            return [
                None if g is None else rebuild(g, tf.clip_by_norm(values(g), self.clipnorm))
                for g in grads
            ]
        if self.global_clipnorm and self.global_clipnorm > 0:
            present = [values(g) for g in grads if g is not None]
            clipped, _ = tf.clip_by_global_norm(present, self.global_clipnorm)
            clipped = iter(clipped)
            return [None if g is None else rebuild(g, next(clipped)) for g in grads]
        cap = self.clipvalue
        return [
            None if g is None else rebuild(g, tf.clip_by_value(values(g), -cap, cap))
            for g in grads
        ]

    def update_step(self, gradient, variable, learning_rate):
        """One Adam step on `variable`: lazy (touched rows only) for a `tf.IndexedSlices`."""
        if isinstance(gradient, tf.IndexedSlices):
            # the touched rows only: the library's lazy_adam_update (notebook 03's
            # exercise), on the tf.Variables behind the slots (gathering from a
            # keras.Variable reads the whole table); read, change, write back with a
            # scatter_update of unique ids, not a scatter_sub, 4 times slower on CPU
            index = self._get_variable_index(variable)
            lazy_adam_update(_tf_variable(variable), _tf_variable(self._momentums[index]),
                             _tf_variable(self._velocities[index]), gradient,
                             self.iterations + 1, learning_rate, self.beta_1, self.beta_2,
                             self.epsilon)
            return

        dtype = variable.dtype
        lr = tf.cast(learning_rate, dtype)
        step = tf.cast(self.iterations + 1, dtype)
        beta_1 = tf.cast(self.beta_1, dtype)
        beta_2 = tf.cast(self.beta_2, dtype)
        # `1 - beta` is taken before the cast, as Keras Adam does: float32(1 - 0.9) is
        # 0.1, but 1 - float32(0.9) is 0.100000024, enough to differ by 1e-6 in a few steps.
        keep_1 = tf.cast(1 - self.beta_1, dtype)
        keep_2 = tf.cast(1 - self.beta_2, dtype)
        epsilon = tf.cast(self.epsilon, dtype)
        alpha = lr * tf.sqrt(1 - tf.pow(beta_2, step)) / (1 - tf.pow(beta_1, step))

        index = self._get_variable_index(variable)
        m = self._momentums[index]
        v = self._velocities[index]
        g = tf.cast(gradient, dtype)
        self.assign_add(m, (g - m) * keep_1)
        self.assign_add(v, (tf.square(g) - v) * keep_2)
        self.assign_sub(variable, (m * alpha) / (tf.sqrt(v) + epsilon))

    def get_config(self):
        """The constructor's arguments, so that `from_config` (and a .keras file) rebuilds it."""
        config = super().get_config()
        config.update(
            {"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}
        )
        return config
