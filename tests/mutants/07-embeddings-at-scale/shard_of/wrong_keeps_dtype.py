# Mistake: returns the ids' own dtype (int32 ids give int32 shards); the contract is an
# int64 NumPy array.
def shard_of(row_ids, num_rows, num_shards):
    ids = np.asarray(row_ids)
    if ids.size and (ids.min() < 0 or ids.max() >= num_rows):
        raise ValueError(f"row ids must lie in [0, {num_rows})")
    num_shards = min(num_shards, num_rows)
    base, extra = divmod(num_rows, num_shards)
    boundary = extra * (base + 1)
    return np.where(ids < boundary, ids // (base + 1),
                    extra + (ids - boundary) // max(base, 1)).astype(ids.dtype)
