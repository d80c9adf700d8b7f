# Another correct answer: keras.utils.pad_sequences, padding at the end.
def encode_batch(sentences, vocab, tag_index):
    ids = [[vocab.get(t, vocab["<UNK>"]) for t in tokens] for tokens, _ in sentences]
    tags = [[tag_index[t] for t in tag_list] for _, tag_list in sentences]
    lengths = np.array([len(x) for x in ids], dtype="int32")
    return (keras.utils.pad_sequences(ids, padding="post", dtype="int32"),
            keras.utils.pad_sequences(tags, padding="post", dtype="int32"), lengths)
