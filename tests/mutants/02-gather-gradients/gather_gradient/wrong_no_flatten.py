# Mistake: passes ids and upstream through unflattened: right for 1-D ids only.
def gather_gradient(params, ids, upstream):
    params = tf.convert_to_tensor(params)
    return tf.IndexedSlices(tf.convert_to_tensor(upstream), tf.convert_to_tensor(ids),
                            dense_shape=tf.shape(params))
