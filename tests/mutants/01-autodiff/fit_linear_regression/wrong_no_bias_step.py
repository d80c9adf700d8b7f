# Mistake: takes the gradient of w only; the bias stays at zero.
def fit_linear_regression(X, y, lr, num_steps):
    X = tf.constant(X, tf.float32)
    y = tf.constant(y, tf.float32)
    w = tf.Variable(tf.zeros([X.shape[1]]))
    b = tf.Variable(0.0)
    for _ in range(num_steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.linalg.matvec(X, w) + b - y) ** 2)
        w.assign_sub(lr * tape.gradient(loss, w))
    return w, b
