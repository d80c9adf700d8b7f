# Mistake: treats keep_ids as positions in values instead of row ids.
def select_rows(slices, keep_ids):
    keep_ids = tf.cast(tf.reshape(keep_ids, [-1]), tf.int32)
    positions = tf.boolean_mask(keep_ids, keep_ids < tf.shape(slices.indices)[0])
    return tf.IndexedSlices(tf.gather(slices.values, positions),
                            tf.gather(slices.indices, positions), dense_shape=slices.dense_shape)
