# Mistake: hands the shards to the course library's own lookup, dressed as a table.
def sharded_lookup(shards, ids):
    class Table:
        variables = shards

    rows, _ = cl.lookup(Table, ids)
    return rows
