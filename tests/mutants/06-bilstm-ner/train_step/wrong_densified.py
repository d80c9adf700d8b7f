# Mistake: makes every gradient dense before clipping, so the optimizer gets a full-table
# gradient for the embedding (and LazyAdam's sparse path is never used).
def train_step(model, optimizer, batch, clip_norm=5.0):
    inputs, tags, lengths = batch
    with tf.GradientTape() as tape:
        loss = masked_cross_entropy(tags, model(inputs, training=True), lengths)
    grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, model.trainable_variables)]
    grads, _ = tf.clip_by_global_norm(grads, clip_norm)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
