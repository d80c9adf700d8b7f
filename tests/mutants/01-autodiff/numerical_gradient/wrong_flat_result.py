# Mistake: returns the estimates as a flat vector instead of in the shape of x.
def numerical_gradient(f, x, eps=1e-3):
    x = tf.convert_to_tensor(x)
    flat = tf.reshape(x, [-1])
    n = int(flat.shape[0])
    out = []
    for i in range(n):
        step = eps * tf.one_hot(i, n, dtype=x.dtype)
        up = f(tf.reshape(flat + step, x.shape))
        down = f(tf.reshape(flat - step, x.shape))
        out.append((up - down) / (2 * eps))
    return tf.stack(out)
