# Mistake: reshapes upstream to (ids.size, d), as for the visible 2-D tables: a table whose
# rows are matrices, shape (n, d1, d2), gets values cut into vectors.
# Only hidden tests catch it: tables of rank 3, whose rows are matrices
def gather_gradient(params, ids, upstream):
    params = tf.convert_to_tensor(params)
    flat = tf.reshape(ids, [-1])
    values = tf.reshape(upstream, [-1, params.shape[1]])
    return tf.IndexedSlices(values, flat, dense_shape=tf.shape(params))
