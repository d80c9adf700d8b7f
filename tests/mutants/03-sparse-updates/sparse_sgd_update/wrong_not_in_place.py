# Mistake: computes the updated table as a new tensor and returns it; var never changes.
def sparse_sgd_update(var, slices, lr):
    return tf.tensor_scatter_nd_sub(var, slices.indices[:, None], lr * slices.values)
