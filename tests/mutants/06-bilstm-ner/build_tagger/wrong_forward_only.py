# Mistake: a one-directional LSTM: a token's tag cannot depend on the words after it.
def build_tagger(pretrained, num_new_rows, num_tags, units=64):
    ids = keras.Input((None,), dtype="int32")
    x = PartiallyFrozenEmbedding(pretrained, num_new_rows, mask_zero=True)(ids)
    x = keras.layers.LSTM(2 * units, return_sequences=True)(x)
    return keras.Model(ids, keras.layers.Dense(num_tags)(x))
