# Mistake: one trainable table initialised with the pretrained rows: nothing is frozen.
class PartiallyFrozenEmbedding(keras.layers.Layer):
    def __init__(self, pretrained, num_new_rows, **kwargs):
        super().__init__(**kwargs)
        self.pretrained = np.asarray(pretrained, np.float32)
        self.num_new_rows = int(num_new_rows)

    def build(self, input_shape=None):
        dim = self.pretrained.shape[1]
        start = np.concatenate([self.pretrained,
                                np.random.uniform(-0.05, 0.05, (self.num_new_rows, dim))])
        self.table = self.add_weight(shape=start.shape, name="table",
                                     initializer=keras.initializers.Constant(start))
        self.frozen = self.table[: len(self.pretrained)]

    @property
    def new_rows(self):
        return self.table[len(self.pretrained):]

    def call(self, ids):
        return tf.gather(self.table, ids)
