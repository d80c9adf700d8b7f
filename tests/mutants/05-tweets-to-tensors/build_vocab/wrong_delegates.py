# Mistake: a helper of its own that calls the course library's version.
def _vocab_helper(sentences, glove_words, min_count):
    return ner.build_vocab(sentences, glove_words, min_count=min_count)


def build_vocab(sentences, glove_words, min_count=1):
    return _vocab_helper(sentences, glove_words, min_count)
