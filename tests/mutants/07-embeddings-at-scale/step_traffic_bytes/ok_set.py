# Another correct answer: a set of the ids, and each id's bytes counted per direction.
def step_traffic_bytes(ids, num_rows, dim, sparse=True, value_bytes=4, id_bytes=8):
    table = num_rows * dim * value_bytes
    if not sparse:
        return table + table
    distinct = len(set(np.ravel(ids).tolist()))
    out = distinct * id_bytes                      # ids to the shards
    back = distinct * dim * value_bytes            # their rows to the worker
    update = distinct * (dim * value_bytes + id_bytes)  # gradient rows and their ids
    return out + back + update
