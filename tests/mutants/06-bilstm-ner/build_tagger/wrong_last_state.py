# Mistake: the LSTM returns only its last state (no return_sequences=True): one output per
# tweet, not one per token.
def build_tagger(pretrained, num_new_rows, num_tags, units=64):
    ids = keras.Input((None,), dtype="int32")
    x = PartiallyFrozenEmbedding(pretrained, num_new_rows, mask_zero=True)(ids)
    x = keras.layers.Bidirectional(keras.layers.LSTM(units))(x)
    return keras.Model(ids, keras.layers.Dense(num_tags)(x))
