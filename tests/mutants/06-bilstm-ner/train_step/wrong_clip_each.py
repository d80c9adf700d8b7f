# Mistake: clips each gradient by its own norm, so the global norm can reach
# sqrt(number of variables) * clip_norm.
def train_step(model, optimizer, batch, clip_norm=5.0):
    inputs, tags, lengths = batch
    with tf.GradientTape() as tape:
        loss = masked_cross_entropy(tags, model(inputs, training=True), lengths)
    grads = [tf.clip_by_norm(g, clip_norm)
             for g in tape.gradient(loss, model.trainable_variables)]
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
