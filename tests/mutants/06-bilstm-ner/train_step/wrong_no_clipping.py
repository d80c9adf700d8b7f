# Mistake: the gradients are applied unclipped.
def train_step(model, optimizer, batch, clip_norm=5.0):
    inputs, tags, lengths = batch
    with tf.GradientTape() as tape:
        loss = masked_cross_entropy(tags, model(inputs, training=True), lengths)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
