# Mistake: makes the tags safe, but zeroes the padded per-token losses with tf.where only
# after the loss: the loss is right, yet its gradient sends 0 * NaN = NaN back through the
# softmax of a NaN logit.
def masked_cross_entropy(tags, logits, lengths):
    logits = tf.convert_to_tensor(logits)
    real = tf.sequence_mask(lengths, tf.shape(logits)[1])
    per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.where(real, tf.cast(tags, tf.int32), 0), logits=logits)
    per_token = tf.where(real, per_token, tf.zeros_like(per_token))
    return tf.reduce_mean(tf.reduce_sum(per_token, axis=1) / tf.cast(lengths, logits.dtype))
