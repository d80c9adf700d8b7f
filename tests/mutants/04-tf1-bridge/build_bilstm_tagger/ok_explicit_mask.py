# Another correct answer: the mask computed from the ids and passed to Bidirectional by hand,
# with a Dropout layer on the LSTMs' inputs instead of their dropout argument.
def build_bilstm_tagger(vocab_size, emb_dim, n_hidden, n_tags, keep_prob=1.0):
    rate = 1.0 - keep_prob
    ids = keras.Input((None,), dtype="int32")
    mask = keras.ops.not_equal(ids, 0)
    x = keras.layers.Embedding(vocab_size, emb_dim)(ids)
    x = keras.layers.Dropout(rate)(x)
    x = keras.layers.Bidirectional(keras.layers.LSTM(n_hidden, return_sequences=True,
                                                     recurrent_dropout=rate))(
        x, mask=mask)
    x = keras.layers.Dropout(rate)(x)
    return keras.Model(ids, keras.layers.Dense(n_tags)(x))
