# Another correct answer: Keras' loss function with from_logits, on a batch whose padded
# positions were replaced by tf.where first, masked per sentence.
def masked_cross_entropy(tags, logits, lengths):
    real = tf.sequence_mask(lengths, tf.shape(logits)[1])
    tags = tf.where(real, tf.cast(tags, tf.int32), 0)
    logits = tf.where(real[..., None], logits, 0.0)
    per_token = keras.losses.sparse_categorical_crossentropy(tags, logits, from_logits=True)
    mask = tf.cast(real, per_token.dtype)
    sums = tf.reduce_sum(per_token * mask, axis=1)
    return tf.reduce_mean(sums / tf.reduce_sum(mask, axis=1))
