# Mistake: computes the new table with tensor_scatter_nd_sub and assigns all of it: the
# values are right, but every row of the table is read and written at each step, as a
# dense update would (the docstring asks for a scatter into var).
def sparse_sgd_update(var, slices, lr):
    var.assign(tf.tensor_scatter_nd_sub(var, tf.cast(slices.indices, tf.int64)[:, None],
                                        lr * slices.values))
    return var
