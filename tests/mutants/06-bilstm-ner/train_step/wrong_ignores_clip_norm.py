# Mistake: clips to a fixed global norm of 5.0, whatever the clip_norm argument says.
def train_step(model, optimizer, batch, clip_norm=5.0):
    inputs, tags, lengths = batch
    with tf.GradientTape() as tape:
        loss = masked_cross_entropy(tags, model(inputs, training=True), lengths)
    grads, _ = tf.clip_by_global_norm(tape.gradient(loss, model.trainable_variables), 5.0)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
