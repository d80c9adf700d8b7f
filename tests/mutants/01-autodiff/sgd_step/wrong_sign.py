# Mistake: climbs the gradient (assign_add) instead of descending it.
def sgd_step(variables, grads, lr):
    for v, g in zip(variables, grads):
        if g is not None:
            v.assign_add(lr * g)
    return variables
