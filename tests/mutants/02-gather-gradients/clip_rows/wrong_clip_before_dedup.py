# Mistake: clips each entry before merging duplicates, so a row named twice can end up
# with twice the allowed norm.
def clip_rows(slices, max_norm):
    clipped = tf.IndexedSlices(tf.clip_by_norm(slices.values, max_norm, axes=[1]),
                               slices.indices, dense_shape=slices.dense_shape)
    return deduplicate(clipped)
