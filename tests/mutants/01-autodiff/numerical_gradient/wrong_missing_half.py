# Mistake: divides the central difference by eps instead of 2 * eps.
def numerical_gradient(f, x, eps=1e-3):
    x = tf.convert_to_tensor(x)
    flat = tf.reshape(x, [-1])
    n = int(flat.shape[0])
    out = []
    for i in range(n):
        step = eps * tf.one_hot(i, n, dtype=x.dtype)
        up = f(tf.reshape(flat + step, x.shape))
        down = f(tf.reshape(flat - step, x.shape))
        out.append((up - down) / eps)
    return tf.reshape(tf.stack(out), x.shape)
