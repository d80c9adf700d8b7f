# Mistake: counts the forward pass only (ids out, rows in) and forgets the gradient that
# goes back to the servers; for a dense step, the table read but not the gradient.
def step_traffic_bytes(ids, num_rows, dim, sparse=True, value_bytes=4, id_bytes=8):
    if not sparse:
        return num_rows * dim * value_bytes
    unique = len(np.unique(np.asarray(ids)))
    return int(unique * (dim * value_bytes + id_bytes))
