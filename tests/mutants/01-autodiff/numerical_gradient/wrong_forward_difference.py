# Mistake: a one-sided difference (f(x + eps) - f(x)) / eps, whose error grows like eps.
def numerical_gradient(f, x, eps=1e-3):
    x = tf.convert_to_tensor(x)
    flat = tf.reshape(x, [-1])
    n = int(flat.shape[0])
    base = f(x)
    out = []
    for i in range(n):
        step = eps * tf.one_hot(i, n, dtype=x.dtype)
        out.append((f(tf.reshape(flat + step, x.shape)) - base) / eps)
    return tf.reshape(tf.stack(out), x.shape)
