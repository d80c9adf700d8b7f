# Mistake: writes Adam's default beta_1 and beta_2 into the formulas instead of the
# arguments: right for every visible example, which uses the default betas (the one that
# passes another epsilon uses the argument, as this answer does).
# Only hidden tests catch it: other beta_1 and beta_2 than Adam's defaults
def lazy_adam_update(var, m, v, slices, step, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    merged = deduplicate(slices)
    ids, g = merged.indices, merged.values
    m_rows = 0.9 * tf.gather(m, ids) + 0.1 * g
    v_rows = 0.999 * tf.gather(v, ids) + 0.001 * g * g
    m.scatter_update(tf.IndexedSlices(m_rows, ids))
    v.scatter_update(tf.IndexedSlices(v_rows, ids))
    step = tf.cast(step, var.dtype)
    alpha = lr * tf.sqrt(1 - 0.999 ** step) / (1 - 0.9 ** step)
    var.scatter_sub(tf.IndexedSlices(alpha * m_rows / (tf.sqrt(v_rows) + epsilon), ids))
    return var
