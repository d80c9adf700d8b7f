# Mistake: multiplies the sizes with np.prod, so the bytes come back a NumPy integer
# (numpy.int64), not the int the docstring promises.
def step_traffic_bytes(ids, num_rows, dim, sparse=True, value_bytes=4, id_bytes=8):
    if not sparse:
        return 2 * np.prod([num_rows, dim, value_bytes])
    unique = np.unique(np.asarray(ids)).size
    return 2 * (unique * id_bytes + np.prod([unique, dim, value_bytes]))
