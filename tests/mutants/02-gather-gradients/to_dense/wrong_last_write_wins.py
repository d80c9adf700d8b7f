# Mistake: a scatter *update*: a duplicate index overwrites the row instead of adding to it.
def to_dense(slices):
    zeros = tf.zeros(slices.dense_shape, slices.values.dtype)
    return tf.tensor_scatter_nd_update(zeros, slices.indices[:, None], slices.values)
