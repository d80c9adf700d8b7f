# Mistake: keeps the pretrained rows in a trainable weight and stops their gradient:
# AdamW's weight decay still shrinks them.
class PartiallyFrozenEmbedding(keras.layers.Layer):
    def __init__(self, pretrained, num_new_rows, **kwargs):
        super().__init__(**kwargs)
        self.pretrained = np.asarray(pretrained, np.float32)
        self.num_new_rows = int(num_new_rows)

    def build(self, input_shape=None):
        self.frozen = self.add_weight(shape=self.pretrained.shape, name="frozen",
                                      initializer=keras.initializers.Constant(self.pretrained))
        self.new_rows = self.add_weight(shape=(self.num_new_rows, self.pretrained.shape[1]),
                                        name="new_rows",
                                        initializer=keras.initializers.RandomUniform(-0.05, 0.05))

    def call(self, ids):
        table = tf.concat([tf.stop_gradient(self.frozen), self.new_rows], axis=0)
        return tf.gather(table, ids)
