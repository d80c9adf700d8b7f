# Mistake: counts the rows and the gradient rows, but not the ids that go with them.
def step_traffic_bytes(ids, num_rows, dim, sparse=True, value_bytes=4, id_bytes=8):
    if not sparse:
        return 2 * num_rows * dim * value_bytes
    unique = len(np.unique(np.asarray(ids)))
    return int(2 * unique * dim * value_bytes)
