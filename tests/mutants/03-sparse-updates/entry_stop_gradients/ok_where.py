# Another correct answer: choose, entry by entry, the target or its stopped copy.
def entry_stop_gradients(target, mask):
    keep = tf.broadcast_to(tf.cast(mask, tf.bool), tf.shape(target))
    return tf.where(keep, target, tf.stop_gradient(target))
