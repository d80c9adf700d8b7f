# Another correct answer: ask a tape, with the upstream gradient as output_gradients.
def gather_gradient(params, ids, upstream):
    params = tf.convert_to_tensor(params)
    with tf.GradientTape() as tape:
        tape.watch(params)
        out = tf.gather(params, ids)
    return tape.gradient(out, params, output_gradients=upstream)
