# Mistake: collects the entries keep id by keep id, so they come in the order of keep_ids,
# not in their order in slices (the dense result is the same).
def select_rows(slices, keep_ids):
    keep_ids = tf.cast(tf.reshape(keep_ids, [-1]), slices.indices.dtype)
    values, indices = [], []
    for row in tf.unstack(keep_ids, num=int(keep_ids.shape[0])):
        mask = tf.equal(slices.indices, row)
        values.append(tf.boolean_mask(slices.values, mask))
        indices.append(tf.boolean_mask(slices.indices, mask))
    if not values:
        return tf.IndexedSlices(slices.values[:0], slices.indices[:0], slices.dense_shape)
    return tf.IndexedSlices(tf.concat(values, 0), tf.concat(indices, 0),
                            dense_shape=slices.dense_shape)
