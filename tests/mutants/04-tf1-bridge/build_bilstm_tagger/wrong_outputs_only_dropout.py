# Mistake: one Dropout layer on the BiLSTM's outputs: the rate is right, but DropoutWrapper
# also dropped the LSTMs' inputs and states, which this model never does.
def build_bilstm_tagger(vocab_size, emb_dim, n_hidden, n_tags, keep_prob=1.0):
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(vocab_size, emb_dim, mask_zero=True)(ids)
    x = keras.layers.Bidirectional(keras.layers.LSTM(n_hidden, return_sequences=True))(x)
    x = keras.layers.Dropout(1.0 - keep_prob)(x)
    return keras.Model(ids, keras.layers.Dense(n_tags)(x))
