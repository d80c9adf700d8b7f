# Mistake: the two masks are swapped: the gradient flows where mask is 0.
def entry_stop_gradients(target, mask):
    mask = tf.cast(mask, target.dtype)
    return tf.stop_gradient(mask * target) + (1.0 - mask) * target
