# Mistake: returns the loss as a NumPy value: fine eagerly, but in a tf.function (the
# training loop) the loss is a symbolic tensor, which has no .numpy().
def train_step(model, optimizer, batch, clip_norm=5.0):
    inputs, tags, lengths = batch
    with tf.GradientTape() as tape:
        loss = masked_cross_entropy(tags, model(inputs, training=True), lengths)
    grads = tape.gradient(loss, model.trainable_variables)
    grads, _ = tf.clip_by_global_norm(grads, clip_norm)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss.numpy()
