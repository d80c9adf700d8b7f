# Mistake: min_count is ignored: every training token gets a row, even one seen once.
def build_vocab(sentences, glove_words, min_count=1):
    vocab = {"<PAD>": 0, "<UNK>": 1}
    for word in glove_words:
        vocab[word] = len(vocab)
    for sentence in sentences:
        for token in sentence:
            if token not in vocab:
                vocab[token] = len(vocab)
    return vocab
