# Mistake: the course library's prediction of the same traffic.
def step_traffic_bytes(ids, num_rows, dim, sparse=True, value_bytes=4, id_bytes=8):
    return cl.predicted_traffic(ids, num_rows, dim, sparse=sparse, value_bytes=value_bytes,
                                id_bytes=id_bytes)
