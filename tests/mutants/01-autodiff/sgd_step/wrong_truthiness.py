# Mistake: `if g:` tests the tensor's value, not whether it is None: a zero scalar gradient
# is skipped and a gradient with several entries raises.
def sgd_step(variables, grads, lr):
    for v, g in zip(variables, grads):
        if g:
            v.assign_sub(lr * g)
    return variables
