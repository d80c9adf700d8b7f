# Mistake: one trainable keras Embedding initialised with GloVe plus random new rows: the
# optimizer can move the GloVe rows (AdamW's decay does, whatever the gradient).
def build_tagger(pretrained, num_new_rows, num_tags, units=64):
    pretrained = np.asarray(pretrained, np.float32)
    table = np.concatenate([pretrained, np.random.uniform(
        -0.05, 0.05, (num_new_rows, pretrained.shape[1])).astype(np.float32)])
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(len(table), table.shape[1], mask_zero=True,
                               embeddings_initializer=keras.initializers.Constant(table))(ids)
    x = keras.layers.Bidirectional(keras.layers.LSTM(units, return_sequences=True))(x)
    return keras.Model(ids, keras.layers.Dense(num_tags)(x))
