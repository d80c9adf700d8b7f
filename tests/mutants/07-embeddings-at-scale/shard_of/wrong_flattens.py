# Mistake: flattens the ids, so a (2, 3) array of ids gets 6 shards in a row instead of a
# (2, 3) array.
def shard_of(row_ids, num_rows, num_shards):
    ids = np.asarray(row_ids).astype(np.int64).ravel()
    if ids.size and (ids.min() < 0 or ids.max() >= num_rows):
        raise ValueError(f"row ids must lie in [0, {num_rows})")
    num_shards = min(num_shards, num_rows)
    sizes = [num_rows // num_shards + (k < num_rows % num_shards) for k in range(num_shards)]
    return np.searchsorted(np.cumsum(sizes), ids, side="right").astype(np.int64)
