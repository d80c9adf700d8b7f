# Another correct answer: let keras.optimizers.SGD apply the same update.
def fit_linear_regression(X, y, lr, num_steps):
    X = tf.convert_to_tensor(X, tf.float32)
    y = tf.convert_to_tensor(y, tf.float32)
    w = tf.Variable(tf.zeros([X.shape[1]]))
    b = tf.Variable(tf.constant(0.0))
    optimizer = keras.optimizers.SGD(learning_rate=lr)
    for _ in range(num_steps):
        with tf.GradientTape() as tape:
            loss = keras.losses.MeanSquaredError()(y, tf.linalg.matvec(X, w) + b)
        grads = tape.gradient(loss, [w, b])
        optimizer.apply_gradients(zip(grads, [w, b]))
    return w, b
