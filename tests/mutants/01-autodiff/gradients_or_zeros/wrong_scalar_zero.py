# Mistake: replaces None by a scalar 0.0 instead of zeros of the variable's shape.
def gradients_or_zeros(loss_fn, variables):
    with tf.GradientTape() as tape:
        loss = loss_fn()
    grads = tape.gradient(loss, variables)
    return [tf.constant(0.0) if g is None else g for g in grads]
