# Mistake: the last layer applies a sigmoid, so the model returns numbers between 0 and 1
# where the loss expects logits (and applies its own softmax to them).
def build_tagger(pretrained, num_new_rows, num_tags, units=64):
    ids = keras.Input((None,), dtype="int32")
    x = PartiallyFrozenEmbedding(pretrained, num_new_rows, mask_zero=True)(ids)
    x = keras.layers.Bidirectional(keras.layers.LSTM(units, return_sequences=True))(x)
    return keras.Model(ids, keras.layers.Dense(num_tags, activation="sigmoid")(x))
