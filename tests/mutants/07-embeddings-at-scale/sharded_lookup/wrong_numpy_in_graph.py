# Mistake: finds each id's shard with shard_of, whose NumPy cannot read the symbolic ids
# inside the tf.function on the worker (TensorFlow raises NotImplementedError); called
# eagerly, it works.
def sharded_lookup(shards, ids):
    ids = tf.cast(tf.reshape(ids, [-1]), tf.int64)
    unique, position = tf.unique(ids)
    sizes = [int(shard.shape[0]) for shard in shards]
    starts = np.cumsum([0] + sizes)
    owner = shard_of(unique, sum(sizes), len(shards))
    local = tf.dynamic_partition(unique - starts[owner], owner.astype(np.int32), len(shards))
    slots = tf.dynamic_partition(tf.range(tf.size(unique)), owner.astype(np.int32),
                                 len(shards))
    pieces = [tf.gather(shard, rows) for shard, rows in zip(shards, local)]
    return tf.gather(tf.dynamic_stitch(slots, pieces), position)
