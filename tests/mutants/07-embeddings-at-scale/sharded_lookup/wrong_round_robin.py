# Mistake: takes row i to live on shard i % num_shards (round robin), as row i of it;
# FixedShardsPartitioner cuts contiguous blocks.
def sharded_lookup(shards, ids):
    ids = tf.cast(tf.reshape(ids, [-1]), tf.int64)
    unique, position = tf.unique(ids)
    count = len(shards)
    owner = tf.cast(unique % count, tf.int32)
    local = tf.dynamic_partition(unique // count, owner, count)
    slots = tf.dynamic_partition(tf.range(tf.size(unique)), owner, count)
    pieces = [tf.gather(shard, rows) for shard, rows in zip(shards, local)]
    return tf.gather(tf.dynamic_stitch(slots, pieces), position)
