# Mistake: the lengths come from np.array of Python ints, which is int64, not the stated int32.
def encode_batch(sentences, vocab, tag_index):
    lengths = np.array([len(tokens) for tokens, _ in sentences])
    width = max(lengths, default=0)
    ids = np.zeros((len(sentences), width), dtype=np.int32)
    tag_ids = np.zeros((len(sentences), width), dtype=np.int32)
    for row, (tokens, tags) in enumerate(sentences):
        ids[row, :len(tokens)] = [vocab.get(t, vocab["<UNK>"]) for t in tokens]
        tag_ids[row, :len(tokens)] = [tag_index[t] for t in tags]
    return ids, tag_ids, lengths
