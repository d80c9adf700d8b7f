# Mistake: builds the dense gradient (a full table of zeros with the rows added in),
# which is what autodiff avoids.
def gather_gradient(params, ids, upstream):
    params = tf.convert_to_tensor(params)
    flat = tf.reshape(ids, [-1])
    values = tf.reshape(upstream, tf.concat([tf.shape(flat), tf.shape(params)[1:]], 0))
    return tf.math.unsorted_segment_sum(values, flat, tf.shape(params)[0])
