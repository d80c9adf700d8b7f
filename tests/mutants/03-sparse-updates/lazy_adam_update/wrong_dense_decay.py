# Mistake: decays the moments of every row (as Keras' Adam does), so rows outside the
# batch keep their decayed moments and move.
def lazy_adam_update(var, m, v, slices, step, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    g = tf.convert_to_tensor(slices)
    m.assign(beta_1 * m + (1 - beta_1) * g)
    v.assign(beta_2 * v + (1 - beta_2) * g * g)
    alpha = lr * np.sqrt(1 - beta_2 ** step) / (1 - beta_1 ** step)
    var.assign_sub(alpha * m / (tf.sqrt(v) + epsilon))
    return var
