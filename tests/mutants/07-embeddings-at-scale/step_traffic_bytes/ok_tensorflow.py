# Another correct answer, in TensorFlow: tf.unique on the flattened ids.
def step_traffic_bytes(ids, num_rows, dim, sparse=True, value_bytes=4, id_bytes=8):
    if not sparse:
        return int(2 * num_rows * dim * value_bytes)
    unique, _ = tf.unique(tf.reshape(tf.cast(ids, tf.int64), [-1]))
    per_row = dim * value_bytes + id_bytes
    return int(unique.shape[0]) * per_row * 2
