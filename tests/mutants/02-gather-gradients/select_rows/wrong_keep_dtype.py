# Mistake: compares indices with keep_ids as given: int64 indices (ids from NumPy) against
# int32 or plain-list keep_ids make tf.equal fail.
def select_rows(slices, keep_ids):
    keep_ids = tf.reshape(tf.convert_to_tensor(keep_ids), [-1])
    keep = tf.reduce_any(tf.equal(slices.indices[:, None], keep_ids[None, :]), axis=1)
    return tf.IndexedSlices(tf.boolean_mask(slices.values, keep),
                            tf.boolean_mask(slices.indices, keep), dense_shape=slices.dense_shape)
