# Mistake: builds the table of zeros as (n, d) from the values' second axis, as if every
# row were a vector, then adds each value into its row.
def to_dense(slices):
    n, d = int(slices.dense_shape[0]), int(slices.values.shape[1])
    zeros = tf.zeros([n, d], slices.values.dtype)
    return tf.tensor_scatter_nd_add(zeros, slices.indices[:, None], slices.values)
