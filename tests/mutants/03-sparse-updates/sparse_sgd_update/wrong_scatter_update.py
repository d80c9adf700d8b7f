# Mistake: reads the rows, subtracts, and writes them back with scatter_update: a row named
# twice is written twice from the same stale value, so one of its entries is lost.
def sparse_sgd_update(var, slices, lr):
    rows = tf.gather(var, slices.indices) - lr * slices.values
    var.scatter_update(tf.IndexedSlices(rows, slices.indices))
    return var
