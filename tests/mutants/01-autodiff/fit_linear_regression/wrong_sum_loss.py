# Mistake: the loss is the sum of squared errors, so the step grows with n and diverges.
def fit_linear_regression(X, y, lr, num_steps):
    X = tf.constant(X, tf.float32)
    y = tf.constant(y, tf.float32)
    w = tf.Variable(tf.zeros([X.shape[1]]))
    b = tf.Variable(0.0)
    for _ in range(num_steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum((tf.linalg.matvec(X, w) + b - y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(lr * dw)
        b.assign_sub(lr * db)
    return w, b
