# Mistake: casts the indices to int32 first "to be safe", so int64 indices come back int32.
def deduplicate(slices):
    unique, positions = tf.unique(tf.cast(slices.indices, tf.int32))
    summed = tf.math.unsorted_segment_sum(slices.values, positions, tf.size(unique))
    order = tf.argsort(unique)
    return tf.IndexedSlices(tf.gather(summed, order), tf.gather(unique, order),
                            dense_shape=slices.dense_shape)
