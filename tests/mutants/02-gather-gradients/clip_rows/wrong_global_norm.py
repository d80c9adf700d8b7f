# Mistake: clips all of values as one tensor (its global norm), not each row.
def clip_rows(slices, max_norm):
    merged = deduplicate(slices)
    return tf.IndexedSlices(tf.clip_by_norm(merged.values, max_norm), merged.indices,
                            dense_shape=merged.dense_shape)
