# Mistake: deals the rows out in turn (id % num_shards), as a "mod" partition strategy
# would; FixedShardsPartitioner cuts contiguous blocks.
def shard_of(row_ids, num_rows, num_shards):
    ids = np.asarray(row_ids).astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= num_rows):
        raise ValueError(f"row ids must lie in [0, {num_rows})")
    return ids % min(num_shards, num_rows)
