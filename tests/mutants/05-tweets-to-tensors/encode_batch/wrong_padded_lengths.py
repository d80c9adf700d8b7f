# Mistake: every length is the padded width, so the loss counts padding as real tokens.
def encode_batch(sentences, vocab, tag_index):
    width = max((len(t) for t, _ in sentences), default=0)
    ids = np.zeros((len(sentences), width), dtype=np.int32)
    tag_ids = np.zeros((len(sentences), width), dtype=np.int32)
    for row, (tokens, tags) in enumerate(sentences):
        ids[row, :len(tokens)] = [vocab.get(t, vocab["<UNK>"]) for t in tokens]
        tag_ids[row, :len(tokens)] = [tag_index[t] for t in tags]
    return ids, tag_ids, np.full(len(sentences), width, dtype=np.int32)
