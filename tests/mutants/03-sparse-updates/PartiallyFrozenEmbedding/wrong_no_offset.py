# Mistake: looks up new rows with the id itself instead of id - P (clipped to stay in range).
class PartiallyFrozenEmbedding(keras.layers.Layer):
    def __init__(self, pretrained, num_new_rows, **kwargs):
        super().__init__(**kwargs)
        self.pretrained = np.asarray(pretrained, np.float32)
        self.num_new_rows = int(num_new_rows)

    def build(self, input_shape=None):
        self.frozen = self.add_weight(shape=self.pretrained.shape, trainable=False, name="frozen",
                                      initializer=keras.initializers.Constant(self.pretrained))
        self.new_rows = self.add_weight(shape=(self.num_new_rows, self.pretrained.shape[1]),
                                        name="new_rows",
                                        initializer=keras.initializers.RandomUniform(-0.05, 0.05))

    def call(self, ids):
        ids = tf.convert_to_tensor(ids)
        is_new = (ids >= self.pretrained.shape[0])[..., None]
        old = tf.gather(self.frozen, tf.minimum(ids, self.pretrained.shape[0] - 1))
        new = tf.gather(self.new_rows, tf.minimum(ids, self.num_new_rows - 1))
        return tf.where(is_new, new, old)
