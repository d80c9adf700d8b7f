# Mistake: numbers the new tokens in sorted order (a set, then sorted), not in order of
# first occurrence.
def build_vocab(sentences, glove_words, min_count=1):
    vocab = {"<PAD>": 0, "<UNK>": 1}
    for word in glove_words:
        vocab[word] = len(vocab)
    counts = {}
    for sentence in sentences:
        for token in sentence:
            counts[token] = counts.get(token, 0) + 1
    for token in sorted({t for t, n in counts.items() if n >= min_count} - set(vocab)):
        vocab[token] = len(vocab)
    return vocab
