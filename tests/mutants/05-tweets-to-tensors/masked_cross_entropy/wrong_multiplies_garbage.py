# Mistake: multiplies the loss by the mask after computing it on padding too: a NaN logit
# there makes 0 * NaN = NaN, and a tag id out of range there stops the loss altogether.
def masked_cross_entropy(tags, logits, lengths):
    logits = tf.convert_to_tensor(logits)
    per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(tags, tf.int32), logits=logits)
    mask = tf.sequence_mask(lengths, tf.shape(logits)[1], dtype=logits.dtype)
    return tf.reduce_mean(tf.reduce_sum(per_token * mask, axis=1) / tf.cast(lengths, logits.dtype))
