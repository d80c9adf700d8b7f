# Mistake: builds new variables instead of updating the ones passed in, so a model's own
# variables never move.
def sgd_step(variables, grads, lr):
    return [tf.Variable(v - lr * g) if g is not None else v for v, g in zip(variables, grads)]
