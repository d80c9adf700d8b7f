"""The observer: facts computed from what the kernel sent as data, running no student Python.

The kernel traces a student's function to a graph and sends it as data (a serialized
`GraphDef` with its function library, the names of its inputs and outputs, its captured
variables' values). Here the graph is checked against an allow-list of op types and sizes
(`ops`), then imported and run with the grader's own inputs and variables in a process of
its own (`graphs`, run by `serve`: sandboxed like a cold kernel, memory-limited), which the
grader starts, asks and, past a deadline or a limit, kills and starts again (`client`).
Nothing the kernel sent is unpickled, imported or called as Python.
`keras_models` rebuilds a Keras model from its JSON config and weights, of Keras' own
layers only (notebooks 04 and 06), and `keras_layers` runs a custom layer from its traced
call and its weights and trains it with `fit` in a model of its own (notebook 03).
`shards` builds the request for a lookup over a table's shards (notebook 07) and reads
back the facts its tests assert. `tf1graph` runs notebook 04's TF 1 training op from the
graph the kernel built: the tables after each step, the op types the op runs and the rows
each sparse update was given.
"""
