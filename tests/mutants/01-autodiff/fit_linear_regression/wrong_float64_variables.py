# Mistake: starts from NumPy zeros, which are float64, and casts X and y to float64 to
# match: w and b come back float64 variables.
def fit_linear_regression(X, y, lr, num_steps):
    X = tf.constant(X, tf.float64)
    y = tf.constant(y, tf.float64)
    w = tf.Variable(np.zeros(X.shape[1]))
    b = tf.Variable(np.float64(0.0))
    for _ in range(num_steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.linalg.matvec(X, w) + b - y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(lr * dw)
        b.assign_sub(lr * db)
    return w, b
