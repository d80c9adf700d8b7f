# Mistake (issue 39): caps the rows of the dense gradient and hands the optimizer an
# IndexedSlices that lists every row of the table. The numbers are right and the optimizer
# scatters, but each step writes the whole table: a sparse update that is dense in disguise.
def build_capped_train_op(loss, var, max_norm, optimizer=None):
    if optimizer is None:
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(1.0)
    ((grad, _),) = optimizer.compute_gradients(loss, [var])
    capped = tf.clip_by_norm(tf.convert_to_tensor(grad), max_norm, axes=[1])
    if isinstance(grad, tf.IndexedSlices):
        capped = tf.IndexedSlices(capped, tf.range(tf.shape(var)[0]), grad.dense_shape)
    return optimizer.apply_gradients([(capped, var)])
