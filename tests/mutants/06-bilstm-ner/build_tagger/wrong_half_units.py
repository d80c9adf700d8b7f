# Mistake: splits units between the two directions (LSTM(units // 2) each), so the tagger
# has half the units per direction that the docstring asks for.
def build_tagger(pretrained, num_new_rows, num_tags, units=64):
    ids = keras.Input((None,), dtype="int32")
    x = PartiallyFrozenEmbedding(pretrained, num_new_rows, mask_zero=True)(ids)
    x = keras.layers.Bidirectional(keras.layers.LSTM(units // 2, return_sequences=True))(x)
    return keras.Model(ids, keras.layers.Dense(num_tags)(x))
