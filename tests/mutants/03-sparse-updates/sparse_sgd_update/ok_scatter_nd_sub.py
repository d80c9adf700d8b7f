# Another correct answer: scatter_nd_sub with one-element index rows (duplicates add up).
def sparse_sgd_update(var, slices, lr):
    var.scatter_nd_sub(tf.cast(slices.indices, tf.int64)[:, None], lr * slices.values)
    return var
