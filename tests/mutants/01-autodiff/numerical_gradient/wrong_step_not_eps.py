# Mistake: steps by a fixed 1e-3 whatever eps is passed (the default looked good enough).
def numerical_gradient(f, x, eps=1e-3):
    x = tf.convert_to_tensor(x)
    flat = tf.reshape(x, [-1])
    size = int(flat.shape[0])
    estimates = []
    for i in range(size):
        step = 1e-3 * tf.one_hot(i, size, dtype=x.dtype)
        up = f(tf.reshape(flat + step, x.shape))
        down = f(tf.reshape(flat - step, x.shape))
        estimates.append((up - down) / 2e-3)
    return tf.reshape(tf.stack(estimates), x.shape)
