# Another correct answer: collections.Counter keeps the order of first occurrence.
from collections import Counter


def build_vocab(sentences, glove_words, min_count=1):
    words = ["<PAD>", "<UNK>"] + list(glove_words)
    known = set(words)
    counts = Counter(t for s in sentences for t in s)
    words += [t for t, n in counts.items() if n >= min_count and t not in known]
    return {w: i for i, w in enumerate(words)}
