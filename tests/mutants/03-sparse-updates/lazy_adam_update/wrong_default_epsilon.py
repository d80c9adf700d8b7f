# Mistake: writes Adam's default epsilon, 1e-7, into the update instead of the argument:
# right wherever epsilon is left at its default.
def lazy_adam_update(var, m, v, slices, step, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    merged = deduplicate(slices)
    ids, g = merged.indices, merged.values
    m_rows = beta_1 * tf.gather(m, ids) + (1 - beta_1) * g
    v_rows = beta_2 * tf.gather(v, ids) + (1 - beta_2) * g * g
    m.scatter_update(tf.IndexedSlices(m_rows, ids))
    v.scatter_update(tf.IndexedSlices(v_rows, ids))
    step = tf.cast(step, var.dtype)
    alpha = lr * tf.sqrt(1 - beta_2 ** step) / (1 - beta_1 ** step)
    var.scatter_sub(tf.IndexedSlices(alpha * m_rows / (tf.sqrt(v_rows) + 1e-7), ids))
    return var
