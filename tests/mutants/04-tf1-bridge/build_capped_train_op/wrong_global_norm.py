# Mistake: tf.clip_by_norm without axes caps the norm of the whole batch of rows, not of each
# row.
def build_capped_train_op(loss, var, max_norm, optimizer=None):
    if optimizer is None:
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(1.0)
    ((grad, _),) = optimizer.compute_gradients(loss, [var])
    if isinstance(grad, tf.IndexedSlices):
        ids, positions = tf.unique(grad.indices)
        summed = tf.math.unsorted_segment_sum(grad.values, positions, tf.shape(ids)[0])
        grad = tf.IndexedSlices(tf.clip_by_norm(summed, max_norm), ids, grad.dense_shape)
    else:
        grad = tf.clip_by_norm(grad, max_norm)
    return optimizer.apply_gradients([(grad, var)])
