# Mistake: returns tape.gradient as it is, with None for the variables the loss misses.
def gradients_or_zeros(loss_fn, variables):
    with tf.GradientTape() as tape:
        loss = loss_fn()
    return tape.gradient(loss, variables)
