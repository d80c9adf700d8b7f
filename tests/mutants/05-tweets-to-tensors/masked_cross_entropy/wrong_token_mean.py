# Mistake: masks padding but averages over all real tokens of the batch at once, so long
# tweets weigh more than short ones (not the mean of each tweet's mean).
def masked_cross_entropy(tags, logits, lengths):
    logits = tf.convert_to_tensor(logits)
    per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(tags, tf.int32), logits=logits)
    mask = tf.sequence_mask(lengths, tf.shape(logits)[1], dtype=logits.dtype)
    return tf.reduce_sum(per_token * mask) / tf.reduce_sum(mask)
