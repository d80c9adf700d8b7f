# Mistake: turns the IndexedSlices into a dense tensor to cap its rows: the numbers are right,
# but every step now reads and writes the whole table.
def build_capped_train_op(loss, var, max_norm, optimizer=None):
    if optimizer is None:
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(1.0)
    ((grad, _),) = optimizer.compute_gradients(loss, [var])
    grad = tf.clip_by_norm(tf.convert_to_tensor(grad), max_norm, axes=[1])
    return optimizer.apply_gradients([(grad, var)])
