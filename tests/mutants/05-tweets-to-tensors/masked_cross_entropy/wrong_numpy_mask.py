# Mistake: builds the mask in NumPy from the lengths: right in eager mode, but a
# tf.function (the training loop) passes symbolic tensors that have no NumPy value.
def masked_cross_entropy(tags, logits, lengths):
    logits = tf.convert_to_tensor(logits)
    real = np.arange(logits.shape[1])[None, :] < np.asarray(lengths)[:, None]
    per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.where(real, tf.cast(tags, tf.int32), 0),
        logits=tf.where(real[..., None], logits, tf.zeros_like(logits)))
    mask = tf.constant(real, logits.dtype)
    return tf.reduce_mean(tf.reduce_sum(per_token * mask, axis=1) / tf.reduce_sum(mask, axis=1))
