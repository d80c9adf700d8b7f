# Mistake: splits the target in two parts but stops neither: the gradient flows everywhere.
def entry_stop_gradients(target, mask):
    mask = tf.cast(mask, target.dtype)
    return (1.0 - mask) * target + mask * target
