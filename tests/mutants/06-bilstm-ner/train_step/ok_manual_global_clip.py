# Another correct answer: the global norm computed by hand, each gradient scaled, the
# IndexedSlices rebuilt from its scaled values.
def train_step(model, optimizer, batch, clip_norm=5.0):
    inputs, tags, lengths = batch
    with tf.GradientTape() as tape:
        loss = masked_cross_entropy(tags, model(inputs, training=True), lengths)
    grads = tape.gradient(loss, model.trainable_variables)
    norm = tf.linalg.global_norm(grads)
    scale = clip_norm / tf.maximum(norm, clip_norm)
    scaled = [tf.IndexedSlices(g.values * scale, g.indices, g.dense_shape)
              if isinstance(g, tf.IndexedSlices) else g * scale for g in grads]
    optimizer.apply_gradients(zip(scaled, model.trainable_variables))
    return loss
