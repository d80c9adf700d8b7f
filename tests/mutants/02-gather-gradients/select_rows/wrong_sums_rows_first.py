# Mistake: adds up each row's entries first (tf.unique and tf.math.unsorted_segment_sum),
# then keeps the rows asked for: the dense result is right, but the entries are not those of
# slices, nor in their order.
def select_rows(slices, keep_ids):
    unique, position = tf.unique(slices.indices)
    summed = tf.math.unsorted_segment_sum(slices.values, position, tf.shape(unique)[0])
    keep_ids = tf.cast(tf.reshape(keep_ids, [-1]), unique.dtype)
    keep = tf.reduce_any(tf.equal(unique[:, None], keep_ids[None, :]), axis=1)
    return tf.IndexedSlices(tf.boolean_mask(summed, keep), tf.boolean_mask(unique, keep),
                            dense_shape=slices.dense_shape)
