# Another correct answer: keras.Sequential, concatenating the two directions explicitly.
def build_tagger(pretrained, num_new_rows, num_tags, units=64):
    return keras.Sequential([
        keras.Input((None,), dtype="int32"),
        PartiallyFrozenEmbedding(pretrained, num_new_rows, mask_zero=True),
        keras.layers.Bidirectional(keras.layers.LSTM(units, return_sequences=True),
                                   merge_mode="concat"),
        keras.layers.Dense(num_tags),
    ])
