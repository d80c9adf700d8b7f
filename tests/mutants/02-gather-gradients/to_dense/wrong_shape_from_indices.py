# Mistake: sizes the result by the largest index, not by dense_shape: rows after it vanish.
def to_dense(slices):
    rows = tf.reduce_max(slices.indices) + 1
    return tf.math.unsorted_segment_sum(slices.values, slices.indices, rows)
