# Another correct answer: Keras' loss function with from_logits, masked per sentence.
def masked_cross_entropy(tags, logits, lengths):
    per_token = keras.losses.sparse_categorical_crossentropy(tags, logits, from_logits=True)
    mask = tf.sequence_mask(lengths, tf.shape(per_token)[1], dtype=per_token.dtype)
    sums = tf.reduce_sum(per_token * mask, axis=1)
    return tf.reduce_mean(sums / tf.reduce_sum(mask, axis=1))
