# Mistake: passes the work to the course library's own version.
def encode_batch(sentences, vocab, tag_index):
    return ner.encode_batch(sentences, vocab, tag_index)
