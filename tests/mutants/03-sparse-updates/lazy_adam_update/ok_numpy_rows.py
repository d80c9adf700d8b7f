# Another correct answer: do the row arithmetic in NumPy, write back the touched rows only.
def lazy_adam_update(var, m, v, slices, step, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    step = float(step)  # a Python int or a tensor
    ids, positions = np.unique(slices.indices.numpy(), return_inverse=True)
    g = np.zeros((len(ids), var.shape[1]), np.float32)
    np.add.at(g, positions, slices.values.numpy())
    m_rows = beta_1 * m.numpy()[ids] + (1 - beta_1) * g
    v_rows = beta_2 * v.numpy()[ids] + (1 - beta_2) * g ** 2
    alpha = lr * np.sqrt(1 - beta_2 ** step) / (1 - beta_1 ** step)
    var_rows = var.numpy()[ids] - alpha * m_rows / (np.sqrt(v_rows) + epsilon)
    for variable, rows in [(m, m_rows), (v, v_rows), (var, var_rows)]:
        variable.scatter_update(tf.IndexedSlices(tf.constant(rows, variable.dtype), ids))
    return var
