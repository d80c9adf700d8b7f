# Mistake: averages over every position, padding included (the loss depends on padding).
def masked_cross_entropy(tags, logits, lengths):
    per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(tags, tf.int32), logits=tf.convert_to_tensor(logits))
    return tf.reduce_mean(per_token)
