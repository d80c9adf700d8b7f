# Mistake: for a dense step, counts a dense block of the batch's rows (no ids) instead of
# the whole table: the dense step reads every row and sends back a gradient for every row.
def step_traffic_bytes(ids, num_rows, dim, sparse=True, value_bytes=4, id_bytes=8):
    count = np.asarray(ids).size
    if not sparse:
        return 2 * count * dim * value_bytes
    unique = len(np.unique(np.asarray(ids)))
    return int(2 * unique * (dim * value_bytes + id_bytes))
