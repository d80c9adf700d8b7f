# Mistake: GloVe word i gets id i, so the first GloVe word ("the") shares id 0 with <PAD>
# (and the second id 1 with <UNK>).
def build_vocab(sentences, glove_words, min_count=1):
    vocab = {"<PAD>": 0, "<UNK>": 1}
    for i, word in enumerate(glove_words):
        vocab[word] = i
    counts = {}
    for sentence in sentences:
        for token in sentence:
            counts[token] = counts.get(token, 0) + 1
    next_id = len(glove_words) + 2
    for token, count in counts.items():
        if token not in vocab and count >= min_count:
            vocab[token] = next_id
            next_id += 1
    return vocab
