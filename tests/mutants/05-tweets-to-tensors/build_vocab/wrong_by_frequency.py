# Mistake: numbers the new tokens by frequency (Counter.most_common), not in order of
# first occurrence.
from collections import Counter


def build_vocab(sentences, glove_words, min_count=1):
    vocab = {"<PAD>": 0, "<UNK>": 1}
    for word in glove_words:
        vocab[word] = len(vocab)
    counts = Counter(t for s in sentences for t in s)
    for token, count in counts.most_common():
        if token not in vocab and count >= min_count:
            vocab[token] = len(vocab)
    return vocab
