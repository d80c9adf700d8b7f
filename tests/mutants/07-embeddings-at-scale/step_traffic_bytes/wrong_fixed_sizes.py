# Mistake: counts 4 bytes a value and 8 an id whatever value_bytes and id_bytes say.
def step_traffic_bytes(ids, num_rows, dim, sparse=True, value_bytes=4, id_bytes=8):
    if not sparse:
        return 2 * num_rows * dim * 4
    unique = len(np.unique(np.asarray(ids)))
    return int(2 * unique * (dim * 4 + 8))
