# Mistake: trains on Keras' plain cross-entropy averaged over every position, padding
# included, instead of the masked loss.
def train_step(model, optimizer, batch, clip_norm=5.0):
    inputs, tags, lengths = batch
    with tf.GradientTape() as tape:
        logits = model(inputs, training=True)
        loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
            tags, logits, from_logits=True))
    grads, _ = tf.clip_by_global_norm(tape.gradient(loss, model.trainable_variables),
                                      clip_norm)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
