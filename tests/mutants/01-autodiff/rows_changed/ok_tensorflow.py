# Another correct answer, in TensorFlow: reduce "not equal" over every axis but the first.
def rows_changed(before, after):
    before, after = tf.convert_to_tensor(before), tf.convert_to_tensor(after)
    differs = tf.not_equal(before, after)
    if differs.shape.rank > 1:
        differs = tf.reduce_any(differs, axis=list(range(1, differs.shape.rank)))
    return tf.reshape(tf.where(differs), [-1]).numpy().tolist()
