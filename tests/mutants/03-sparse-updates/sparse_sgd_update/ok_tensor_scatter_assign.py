# Another correct answer: tensor_scatter_nd_sub adds duplicates; assign writes the result.
def sparse_sgd_update(var, slices, lr):
    var.assign(tf.tensor_scatter_nd_sub(var, tf.cast(slices.indices, tf.int64)[:, None],
                                        lr * slices.values))
    return var
