# Mistake: blocks of num_rows // num_shards rows, the remainder rows all on the last shard.
def shard_of(row_ids, num_rows, num_shards):
    ids = np.asarray(row_ids).astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= num_rows):
        raise ValueError(f"row ids must lie in [0, {num_rows})")
    num_shards = min(num_shards, num_rows)
    return np.minimum(ids // (num_rows // num_shards), num_shards - 1)
