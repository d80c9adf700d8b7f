# Mistake: keeps tf.unique's first-appearance order instead of sorting the indices.
def deduplicate(slices):
    unique, positions = tf.unique(slices.indices)
    summed = tf.math.unsorted_segment_sum(slices.values, positions, tf.size(unique))
    return tf.IndexedSlices(summed, unique, dense_shape=slices.dense_shape)
