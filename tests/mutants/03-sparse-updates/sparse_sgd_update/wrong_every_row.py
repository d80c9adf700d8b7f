# Mistake: a scatter, but of an IndexedSlices that names every row of the table (the dense
# gradient, zeros included): sparse in form, dense in cost.
def sparse_sgd_update(var, slices, lr):
    dense = tf.convert_to_tensor(slices)
    var.scatter_sub(tf.IndexedSlices(lr * dense, tf.range(tf.shape(dense)[0])))
    return var
