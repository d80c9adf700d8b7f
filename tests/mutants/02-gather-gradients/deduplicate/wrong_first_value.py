# Mistake: keeps the first value of each index instead of the sum of its values.
def deduplicate(slices):
    unique, positions = tf.unique(slices.indices)
    first = tf.math.unsorted_segment_min(tf.range(tf.size(positions)), positions, tf.size(unique))
    order = tf.argsort(unique)
    return tf.IndexedSlices(tf.gather(slices.values, tf.gather(first, order)),
                            tf.gather(unique, order), dense_shape=slices.dense_shape)
