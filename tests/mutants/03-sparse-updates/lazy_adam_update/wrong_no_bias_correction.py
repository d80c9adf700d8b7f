# Mistake: no bias correction: the first steps are far too small.
def lazy_adam_update(var, m, v, slices, step, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    merged = deduplicate(slices)
    ids, g = merged.indices, merged.values
    m_rows = beta_1 * tf.gather(m, ids) + (1 - beta_1) * g
    v_rows = beta_2 * tf.gather(v, ids) + (1 - beta_2) * g * g
    m.scatter_update(tf.IndexedSlices(m_rows, ids))
    v.scatter_update(tf.IndexedSlices(v_rows, ids))
    var.scatter_sub(tf.IndexedSlices(lr * m_rows / (tf.sqrt(v_rows) + epsilon), ids))
    return var
