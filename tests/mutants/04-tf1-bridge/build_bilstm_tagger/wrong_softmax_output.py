# Mistake: ends with a softmax, so the model returns probabilities where the docstring asks
# for logits (the training loss takes logits: from_logits=True).
def build_bilstm_tagger(vocab_size, emb_dim, n_hidden, n_tags, keep_prob=1.0):
    rate = 1.0 - keep_prob
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(vocab_size, emb_dim, mask_zero=True)(ids)
    x = keras.layers.Bidirectional(keras.layers.LSTM(
        n_hidden, return_sequences=True, dropout=rate, recurrent_dropout=rate))(x)
    x = keras.layers.Dropout(rate)(x)
    return keras.Model(ids, keras.layers.Dense(n_tags, activation="softmax")(x))
