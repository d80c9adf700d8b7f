# Mistake: pads with the <UNK> id instead of <PAD> = 0, so the mask sees no padding.
def encode_batch(sentences, vocab, tag_index):
    lengths = np.array([len(t) for t, _ in sentences], dtype=np.int32)
    width = max(lengths, default=0)
    ids = np.full((len(sentences), width), vocab["<UNK>"], dtype=np.int32)
    tag_ids = np.zeros((len(sentences), width), dtype=np.int32)
    for row, (tokens, tags) in enumerate(sentences):
        ids[row, :len(tokens)] = [vocab.get(t, vocab["<UNK>"]) for t in tokens]
        tag_ids[row, :len(tokens)] = [tag_index[t] for t in tags]
    return ids, tag_ids, lengths
