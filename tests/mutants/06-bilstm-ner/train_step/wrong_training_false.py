# Mistake: calls model(inputs) without training=True, so dropout never runs while training.
def train_step(model, optimizer, batch, clip_norm=5.0):
    inputs, tags, lengths = batch
    with tf.GradientTape() as tape:
        loss = masked_cross_entropy(tags, model(inputs), lengths)
    grads, _ = tf.clip_by_global_norm(tape.gradient(loss, model.trainable_variables),
                                      clip_norm)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
