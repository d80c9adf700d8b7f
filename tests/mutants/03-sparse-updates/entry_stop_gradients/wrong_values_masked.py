# Mistake: multiplies the stopped target by the mask, so frozen entries read as zero.
def entry_stop_gradients(target, mask):
    mask = tf.cast(mask, target.dtype)
    return tf.stop_gradient(target) * (1.0 - mask) * 0.0 + mask * target
