"""`PartiallyFrozenEmbedding`: pretrained rows frozen, new rows trainable.

The first question of the course asks how to train only part of a pretrained
embedding matrix: keep the GloVe rows as they are and learn rows for the words
GloVe lacks. Masking the gradient is not enough once the optimizer has momentum
or weight decay (AdamW decays every trainable row, frozen or not). This layer
holds the two parts as two weights: the pretrained rows in a *non-trainable*
weight, which no optimizer is given, and the new rows in a trainable one.

    >>> layer = PartiallyFrozenEmbedding(glove_matrix, num_new_rows=1000)
    >>> vectors = layer(ids)  # ids < len(glove_matrix) read GloVe, the rest new rows

Its gradient reaches only the new rows, as a `tf.IndexedSlices` naming exactly
the new-row ids looked up, so a lazy optimizer (`LazyAdam`) moves nothing else.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

__all__ = ["PartiallyFrozenEmbedding"]


@keras.saving.register_keras_serializable(package="sparse_embeddings")
class PartiallyFrozenEmbedding(keras.layers.Layer):
    """An embedding whose rows `0..P-1` are a frozen pretrained matrix, and `P..P+N-1` trainable.

    Library version of notebook 03's exercise `PartiallyFrozenEmbedding`.

    Args:
        pretrained: a matrix of shape `(P, dim)` (NumPy array, tensor or nested
            list): the frozen rows, in order. It is copied into the layer's
            weight `pretrained` (non-trainable).
        num_new_rows: `N >= 0`, the number of trainable rows after them (the
            weight `new_rows`, of shape `(N, dim)`).
        mask_zero: when true, id 0 is padding and `compute_mask` returns
            `ids != 0`, as for `keras.layers.Embedding`.
        new_rows_initializer: initializer of the new rows. The default,
            `RandomUniform(-0.05, 0.05)`, is Keras Embedding's; pick a scale
            close to the pretrained vectors' when it matters.
        pretrained_shape: instead of `pretrained`, only its shape `(P, dim)`:
            the rows start as zeros. `from_config` uses it, since the config
            stores sizes and a .keras file brings the weights back.
        **kwargs: passed to `keras.layers.Layer` (`name`, `dtype`, ...).

    `call(ids)` takes integer ids of any shape and returns `ids.shape + (dim,)`.
    Ids are split into pretrained and new ones and each part is gathered from
    its own weight, then stitched back in order: the gradient of the new rows is
    then a `tf.IndexedSlices` over only the new ids in the batch. (Gathering
    clipped ids and zeroing the unwanted rows would be simpler, but it names row
    `P` in every gradient, with a zero value that a lazy optimizer or weight
    decay would still act on.) The split has a data-dependent size, so the
    layer tells Keras it does not support XLA (`supports_jit = False`).

    Raises `ValueError` for a `pretrained` of rank other than 2, a negative
    `num_new_rows`, non-integer ids, and (when running eagerly) ids outside
    `[0, P + N)`.
    """

    def __init__(self, pretrained=None, num_new_rows=0, mask_zero=False,
                 new_rows_initializer=None, pretrained_shape=None, **kwargs):
        super().__init__(**kwargs)
        if pretrained is None and pretrained_shape is None:
            raise ValueError(
                "PartiallyFrozenEmbedding needs the pretrained matrix (or its shape, "
                "pretrained_shape=(rows, dim)); got neither."
            )
        if pretrained is not None:
            matrix = np.asarray(pretrained)
            if matrix.ndim != 2:
                raise ValueError(
                    f"pretrained must be a matrix of shape (rows, dim); got shape {matrix.shape} "
                    f"(rank {matrix.ndim})."
                )
            if not np.issubdtype(matrix.dtype, np.number):
                raise ValueError(
                    f"pretrained must hold numbers; got dtype {matrix.dtype}."
                )
            shape = matrix.shape
        else:
            matrix = None
            shape = tuple(pretrained_shape)
            if len(shape) != 2:
                raise ValueError(
                    f"pretrained_shape must be (rows, dim); got {shape} (rank {len(shape)})."
                )
        num_new_rows_int = int(num_new_rows)
        if num_new_rows_int != num_new_rows or num_new_rows_int < 0:
            raise ValueError(
                f"num_new_rows must be an integer >= 0; got {num_new_rows!r}."
            )
        self.pretrained_rows = int(shape[0])
        self.output_dim = int(shape[1])
        self.num_new_rows = num_new_rows_int
        self.mask_zero = bool(mask_zero)
        if new_rows_initializer is None:
            new_rows_initializer = keras.initializers.RandomUniform(-0.05, 0.05)
        self.new_rows_initializer = keras.initializers.get(new_rows_initializer)
        self._pretrained_value = matrix  # copied into the weight by build(), then dropped
        # Like keras.layers.Embedding: never cast the whole table to a compute dtype.
        self.autocast = False
        # tf.where / tf.dynamic_stitch have data-dependent sizes.
        self.supports_jit = False

    @property
    def input_dim(self) -> int:
        """Rows in all: `P + N`, the ids accepted are `0 .. input_dim - 1`."""
        return self.pretrained_rows + self.num_new_rows

    def build(self, input_shape=None):
        """Create the frozen `pretrained` and the trainable `new_rows` weights."""
        if self.built:
            return
        self.pretrained = self.add_weight(
            shape=(self.pretrained_rows, self.output_dim),
            initializer="zeros",
            trainable=False,
            name="pretrained",
        )
        if self._pretrained_value is not None:
            self.pretrained.assign(self._pretrained_value.astype(self.pretrained.dtype))
            self._pretrained_value = None
        self.new_rows = self.add_weight(
            shape=(self.num_new_rows, self.output_dim),
            initializer=self.new_rows_initializer,
            trainable=True,
            name="new_rows",
        )
        self.built = True

    def _check_ids(self, ids) -> None:
        if not ids.dtype.is_integer:
            raise ValueError(
                f"PartiallyFrozenEmbedding takes integer ids; got dtype {ids.dtype.name}. "
                "Cast them (tf.cast(ids, 'int32')), or give keras.Input dtype='int32'."
            )
        if tf.executing_eagerly() and tf.size(ids) > 0:
            flat = tf.reshape(ids, [-1]).numpy()
            bad = flat[(flat < 0) | (flat >= self.input_dim)]
            if bad.size:
                raise ValueError(
                    f"id {int(bad[0])} is out of range: valid ids are 0 to {self.input_dim - 1} "
                    f"({self.pretrained_rows} pretrained rows, then {self.num_new_rows} new "
                    f"rows); {bad.size} of the {flat.size} ids are outside it."
                )

    def call(self, inputs):
        """Embeddings of `inputs` (integer ids, any shape): shape `inputs.shape + (dim,)`."""
        ids = tf.convert_to_tensor(inputs)
        self._check_ids(ids)
        flat = tf.reshape(ids, [-1])
        is_new = flat >= self.pretrained_rows
        positions = tf.range(tf.size(flat))
        old_positions = tf.boolean_mask(positions, ~is_new)
        new_positions = tf.boolean_mask(positions, is_new)
        old_ids = tf.boolean_mask(flat, ~is_new)
        new_ids = tf.boolean_mask(flat, is_new) - tf.cast(self.pretrained_rows, flat.dtype)
        # Gather from the tf.Variables themselves (a sparse read, and an IndexedSlices
        # gradient), not from the keras.Variable wrappers.
        old_vectors = tf.gather(self.pretrained.value, old_ids)
        new_vectors = tf.gather(self.new_rows.value, new_ids)
        vectors = tf.dynamic_stitch([old_positions, new_positions], [old_vectors, new_vectors])
        out_shape = tf.concat([tf.shape(ids), [self.output_dim]], axis=0)
        outputs = tf.reshape(vectors, out_shape)
        return tf.cast(outputs, self.compute_dtype)

    def compute_mask(self, inputs, mask=None):
        """`inputs != 0` when `mask_zero`, else no mask."""
        if not self.mask_zero:
            return None
        return keras.ops.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        """`input_shape + (dim,)`."""
        return tuple(input_shape) + (self.output_dim,)

    def get_config(self):
        """Sizes and options, not the matrix: a .keras file restores the weights."""
        config = super().get_config()
        config.update(
            {
                "pretrained_shape": [self.pretrained_rows, self.output_dim],
                "num_new_rows": self.num_new_rows,
                "mask_zero": self.mask_zero,
                "new_rows_initializer": keras.initializers.serialize(
                    self.new_rows_initializer
                ),
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        """Rebuild from `get_config()`; the pretrained rows start as zeros until weights load."""
        config = dict(config)
        config["new_rows_initializer"] = keras.initializers.deserialize(
            config["new_rows_initializer"]
        )
        return cls(**config)
