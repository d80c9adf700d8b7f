# Mistake: counts a token's occurrences within one sentence, not over all of them.
def build_vocab(sentences, glove_words, min_count=1):
    vocab = {"<PAD>": 0, "<UNK>": 1}
    for word in glove_words:
        vocab[word] = len(vocab)
    for sentence in sentences:
        for token in sentence:
            if token not in vocab and sentence.count(token) >= min_count:
                vocab[token] = len(vocab)
    return vocab
