# Another correct answer: the library's deduplicate (sorted ids) and a cap written out by
# hand, through tf.gradients instead of compute_gradients.
def build_capped_train_op(loss, var, max_norm, optimizer=None):
    if optimizer is None:
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(1.0)
    (grad,) = tf.gradients(loss, [var])

    def cap(rows):
        norms = tf.norm(rows, axis=1, keepdims=True)
        return rows * tf.minimum(1.0, max_norm / tf.maximum(norms, 1e-12))

    if isinstance(grad, tf.IndexedSlices):
        grad = deduplicate(grad)
        grad = tf.IndexedSlices(cap(grad.values), grad.indices, grad.dense_shape)
    else:
        grad = cap(grad)
    return optimizer.apply_gradients([(grad, var)])
