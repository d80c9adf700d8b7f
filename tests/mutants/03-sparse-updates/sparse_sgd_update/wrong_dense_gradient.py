# Mistake: makes the gradient dense and subtracts it from the whole table: the rows outside
# the batch get zeros, so their values stay, but every row is written.
def sparse_sgd_update(var, slices, lr):
    var.assign_sub(lr * tf.convert_to_tensor(slices))
    return var
