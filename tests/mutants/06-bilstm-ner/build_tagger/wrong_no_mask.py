# Mistake: no mask_zero, so the backward LSTM reads the padding before each tweet.
def build_tagger(pretrained, num_new_rows, num_tags, units=64):
    ids = keras.Input((None,), dtype="int32")
    x = PartiallyFrozenEmbedding(pretrained, num_new_rows)(ids)
    x = keras.layers.Bidirectional(keras.layers.LSTM(units, return_sequences=True))(x)
    return keras.Model(ids, keras.layers.Dense(num_tags)(x))
