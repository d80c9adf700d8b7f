# Mistake: casts the ids to int32, so int64 ids come back with another dtype than autodiff's.
def gather_gradient(params, ids, upstream):
    params = tf.convert_to_tensor(params)
    flat = tf.cast(tf.reshape(ids, [-1]), tf.int32)
    values = tf.reshape(upstream, tf.concat([tf.shape(flat), tf.shape(params)[1:]], 0))
    return tf.IndexedSlices(values, flat, dense_shape=tf.shape(params))
