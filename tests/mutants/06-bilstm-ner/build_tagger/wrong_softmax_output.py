# Mistake: the last layer applies a softmax, so the model returns probabilities, and the
# loss, which expects logits, applies a second softmax.
def build_tagger(pretrained, num_new_rows, num_tags, units=64):
    ids = keras.Input((None,), dtype="int32")
    x = PartiallyFrozenEmbedding(pretrained, num_new_rows, mask_zero=True)(ids)
    x = keras.layers.Bidirectional(keras.layers.LSTM(units, return_sequences=True))(x)
    return keras.Model(ids, keras.layers.Dense(num_tags, activation="softmax")(x))
