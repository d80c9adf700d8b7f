# Mistake: assumes every gradient is an IndexedSlices; a densely read variable's gradient has
# no .values.
def build_capped_train_op(loss, var, max_norm, optimizer=None):
    if optimizer is None:
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(1.0)
    ((grad, _),) = optimizer.compute_gradients(loss, [var])
    ids, positions = tf.unique(grad.indices)
    summed = tf.math.unsorted_segment_sum(grad.values, positions, tf.shape(ids)[0])
    grad = tf.IndexedSlices(tf.clip_by_norm(summed, max_norm, axes=[1]), ids, grad.dense_shape)
    return optimizer.apply_gradients([(grad, var)])
