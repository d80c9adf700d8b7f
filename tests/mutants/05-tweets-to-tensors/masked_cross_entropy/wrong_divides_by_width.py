# Mistake: zeroes the padding but divides each tweet's sum by the padded width, not its
# length: the loss still depends on how much padding the batch has.
def masked_cross_entropy(tags, logits, lengths):
    logits = tf.convert_to_tensor(logits)
    per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(tags, tf.int32), logits=logits)
    mask = tf.sequence_mask(lengths, tf.shape(logits)[1], dtype=logits.dtype)
    return tf.reduce_mean(tf.reduce_mean(per_token * mask, axis=1))
