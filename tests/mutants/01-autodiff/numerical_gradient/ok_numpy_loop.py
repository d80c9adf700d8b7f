# Another correct answer: walk the entries of a NumPy copy with np.ndindex.
def numerical_gradient(f, x, eps=1e-3):
    x = np.array(x)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[index] += eps
        down[index] -= eps
        grad[index] = (float(f(tf.constant(up))) - float(f(tf.constant(down)))) / (2 * eps)
    return tf.constant(grad)
