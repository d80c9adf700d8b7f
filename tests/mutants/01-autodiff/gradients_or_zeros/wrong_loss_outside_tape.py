# Mistake: computes the loss before the tape starts recording, so every gradient is zero.
def gradients_or_zeros(loss_fn, variables):
    loss = loss_fn()
    with tf.GradientTape() as tape:
        tape.watch(variables)
    return tape.gradient(loss, variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
