# Mistake: fills each None with tf.zeros of the variable's shape, which is float32 whatever
# the variable's dtype (a float64 variable gets float32 zeros).
def gradients_or_zeros(loss_fn, variables):
    with tf.GradientTape() as tape:
        total = loss_fn()
    grads = list(tape.gradient(total, variables))
    for k in range(len(grads)):
        if grads[k] is None:
            grads[k] = tf.zeros(tf.shape(variables[k]))
    return grads
