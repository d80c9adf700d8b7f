# Mistake: counts every id of the batch, repeats included; the step sends each distinct id once.
def step_traffic_bytes(ids, num_rows, dim, sparse=True, value_bytes=4, id_bytes=8):
    if not sparse:
        return 2 * num_rows * dim * value_bytes
    return np.size(ids) * (2 * dim * value_bytes + 2 * id_bytes)
