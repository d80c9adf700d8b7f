# Mistake: blocks of ceil(num_rows / num_shards) rows: the last shards come out short
# (10 rows on 4 shards gives 3, 3, 3, 1 instead of 3, 3, 2, 2).
def shard_of(row_ids, num_rows, num_shards):
    ids = np.asarray(row_ids).astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= num_rows):
        raise ValueError(f"row ids must lie in [0, {num_rows})")
    return ids // -(-num_rows // min(num_shards, num_rows))
