# Mistake: the old answer as written: caps grad.values row by row without summing duplicate
# ids, so a row looked up twice moves by up to twice the cap.
def build_capped_train_op(loss, var, max_norm, optimizer=None):
    if optimizer is None:
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(1.0)
    ((grad, _),) = optimizer.compute_gradients(loss, [var])
    if isinstance(grad, tf.IndexedSlices):
        grad = tf.IndexedSlices(tf.clip_by_norm(grad.values, max_norm, axes=[1]), grad.indices,
                                grad.dense_shape)
    else:
        grad = tf.clip_by_norm(grad, max_norm, axes=[1])
    return optimizer.apply_gradients([(grad, var)])
