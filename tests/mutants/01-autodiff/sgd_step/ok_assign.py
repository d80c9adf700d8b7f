# Another correct answer: assign the new value rather than subtract in place.
def sgd_step(variables, grads, lr):
    for variable, grad in zip(variables, grads):
        if grad is None:
            continue
        variable.assign(variable - lr * grad)
    return variables
