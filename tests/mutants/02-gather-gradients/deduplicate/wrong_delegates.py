# Mistake: hands the exercise to the course library's own version, imported inside.
def deduplicate(slices):
    from sparse_embeddings import sparse

    return sparse.deduplicate(slices)
