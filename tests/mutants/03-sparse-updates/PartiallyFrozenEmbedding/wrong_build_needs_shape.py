# Mistake: build() requires input_shape, so layer.build() (the notebook's comparison
# cell) raises, though calling the layer works.
class PartiallyFrozenEmbedding(keras.layers.Layer):
    def __init__(self, pretrained, num_new_rows, **kwargs):
        super().__init__(**kwargs)
        self.pretrained = np.asarray(pretrained, np.float32)
        self.num_new_rows = int(num_new_rows)

    def build(self, input_shape):
        self.frozen = self.add_weight(shape=self.pretrained.shape, trainable=False, name="frozen",
                                      initializer=keras.initializers.Constant(self.pretrained))
        self.new_rows = self.add_weight(shape=(self.num_new_rows, self.pretrained.shape[1]),
                                        name="new_rows",
                                        initializer=keras.initializers.RandomUniform(-0.05, 0.05))

    def call(self, ids):
        ids = tf.convert_to_tensor(ids)
        num_frozen = self.pretrained.shape[0]
        is_new = ids >= num_frozen
        old = tf.gather(self.frozen, tf.where(is_new, 0, ids))
        new = tf.gather(self.new_rows, tf.where(is_new, ids - num_frozen, 0))
        return tf.where(is_new[..., None], new, old)
