# Mistake: the paper's form of the bias correction (m_hat = m / (1 - beta_1^t), v_hat = v /
# (1 - beta_2^t), var -= lr m_hat / (sqrt(v_hat) + epsilon)), where the notebook asks for
# Keras' form: the two differ by where epsilon goes, which shows once epsilon is not tiny.
def lazy_adam_update(var, m, v, slices, step, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    merged = deduplicate(slices)
    ids, g = merged.indices, merged.values
    m_rows = beta_1 * tf.gather(m, ids) + (1 - beta_1) * g
    v_rows = beta_2 * tf.gather(v, ids) + (1 - beta_2) * g * g
    m.scatter_update(tf.IndexedSlices(m_rows, ids))
    v.scatter_update(tf.IndexedSlices(v_rows, ids))
    step = tf.cast(step, var.dtype)
    m_hat = m_rows / (1 - beta_1 ** step)
    v_hat = v_rows / (1 - beta_2 ** step)
    var.scatter_sub(tf.IndexedSlices(lr * m_hat / (tf.sqrt(v_hat) + epsilon), ids))
    return var
