# Mistake: the mask is inverted: keeps the rows that should be frozen.
def select_rows(slices, keep_ids):
    keep_ids = tf.cast(tf.reshape(keep_ids, [-1]), slices.indices.dtype)
    keep = tf.reduce_any(tf.equal(slices.indices[:, None], keep_ids[None, :]), axis=1)
    return tf.IndexedSlices(tf.boolean_mask(slices.values, ~keep),
                            tf.boolean_mask(slices.indices, ~keep), dense_shape=slices.dense_shape)
