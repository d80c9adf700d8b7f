# Another correct answer: scale each merged row by min(1, max_norm / norm) by hand.
def clip_rows(slices, max_norm):
    unique, positions = tf.unique(slices.indices)
    summed = tf.math.unsorted_segment_sum(slices.values, positions, tf.size(unique))
    order = tf.argsort(unique)
    rows, ids = tf.gather(summed, order), tf.gather(unique, order)
    norms = tf.norm(rows, axis=1, keepdims=True)
    scale = tf.minimum(1.0, max_norm / tf.maximum(norms, 1e-12))
    return tf.IndexedSlices(rows * scale, ids, dense_shape=slices.dense_shape)
