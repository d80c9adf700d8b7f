"""Notebook 04's TF 1 training op, run by the observer from the graph the kernel built.

The kernel builds the exercise's op in a `tf.Graph` of its own and sends that graph as a
`GraphDef`, with the names of its parts (`embeddings_course.tf1.export_train_graph`): the
table variable, the placeholders of the batch, the op that initialises the variables, the
training op. `train` checks every op against the allow-list (`ops.check`), imports the
graph into a graph and `Session` of its own, initialises the variables, sets the table to
the test's values itself, feeds the test's batches and returns what it saw:

- the table after each step, read by an op of its own;
- the types of the ops the training op runs: its ancestors in the graph, through inputs and
  control inputs, and the ops of every function they call (the variables' initialisers,
  which the training op does not run, are not among them);
- for each step, the row ids each sparse update op among those ancestors (a scatter into a
  variable, a sparse apply kernel) was given, fetched in the same run.

Nothing the kernel sent runs as Python: the graph is data, its names are looked up and
checked (a name that points at the wrong kind of op is `Refused`), and a graph made by hand
passes a test only where the tables it leaves are the right ones.
"""

from __future__ import annotations

import numpy as np

from autograder.engine.observer import ops

PARTS = ("train_op", "table", "init", "inputs", "upstream")
SPARSE_UPDATE_MARKERS = ("Scatter", "SparseApply")
STEP_TIMEOUT_MS = 30_000  # one step of a 04 test takes milliseconds


def _node(nodes: dict, export: dict, part: str, kinds: tuple[str, ...] = ()):
    name = export.get(part)
    if not isinstance(name, str) or name not in nodes:
        raise ops.Refused(f"the graph has no node {name!r} for its {part}")
    node = nodes[name]
    if kinds and node.op not in kinds:
        raise ops.Refused(f"the graph's {part} {name!r} is a {node.op}; expected "
                          f"{' or '.join(kinds)}")
    return node


def _dtype(node) -> str:
    from tensorflow.python.framework import dtypes

    return dtypes.as_dtype(node.attr["dtype"].type).name


def _check_parts(graph_def, export: dict, shape: tuple[int, int], id_dtype: str,
                 dense: bool) -> None:
    """The named parts are what the test built: a float32 table variable of `shape`,
    placeholders of the batch's dtypes, and existing init and train ops."""
    nodes = {n.name: n for n in graph_def.node}
    table = _node(nodes, export, "table", ("VarHandleOp",))
    dims = [d.size for d in table.attr["shape"].shape.dim]
    if _dtype(table) != "float32" or dims != list(shape):
        raise ops.Refused(f"the graph's table is {_dtype(table)} of shape {dims}; expected "
                          f"float32 of shape {list(shape)}")
    inputs = _node(nodes, export, "inputs", ("Placeholder",))
    upstream = _node(nodes, export, "upstream", ("Placeholder",))
    want = "float32" if dense else id_dtype
    if _dtype(inputs) != want or _dtype(upstream) != "float32":
        raise ops.Refused(f"the graph's placeholders are {_dtype(inputs)} and "
                          f"{_dtype(upstream)}; expected {want} and float32")
    _node(nodes, export, "init")
    _node(nodes, export, "train_op")


def _ancestors(op) -> list:
    """`op` and every op it depends on, through inputs and control inputs."""
    seen, stack, found = set(), [op], []
    while stack:
        current = stack.pop()
        if current.name in seen:
            continue
        seen.add(current.name)
        found.append(current)
        stack.extend(tensor.op for tensor in current.inputs)
        stack.extend(current.control_inputs)
    return found


def _functions_named(attr) -> list[str]:
    if attr.HasField("func"):
        return [attr.func.name]
    return [f.name for f in attr.list.func] if attr.HasField("list") else []


def _op_types(graph_def, reached) -> set[str]:
    """The types of the `reached` ops and of the ops inside the library functions they call
    (a node whose type is a function, attrs naming one: a PartitionedCall's `f`, a While's
    body, an If's branches), recursively."""
    library = {f.signature.name: f for f in graph_def.library.function}
    found = {op.type for op in reached if op.type not in library}
    pending = [op.type for op in reached if op.type in library]
    pending += [name for op in reached for attr in op.node_def.attr.values()
                for name in _functions_named(attr)]
    done = set()
    while pending:
        name = pending.pop()
        if name in done or name not in library:
            continue
        done.add(name)
        for node in library[name].node_def:
            if node.op in library:
                pending.append(node.op)
            else:
                found.add(node.op)
            pending.extend(f for attr in node.attr.values() for f in _functions_named(attr))
    return found


def _indices_input(op):
    """The tensor a sparse update op takes as its row ids (its `indices` argument)."""
    names = [arg.name for arg in op.op_def.input_arg]
    if "indices" not in names or any(arg.number_attr or arg.type_list_attr
                                     for arg in op.op_def.input_arg):
        return None
    return op.inputs[names.index("indices")]


def train(export: dict, table, batches, dense: bool = False) -> dict:
    """Run the exported training op on `table` (n, d) and the test's `batches` of (ids or
    x, upstream); returns {"tables", "op_types", "updates"} (see the module's docstring:
    `updates[step]` lists, per sparse update op, {"op": its type, "rows": sorted ids})."""
    import tensorflow as tf

    table = np.asarray(table, dtype=np.float32)
    first = np.asarray(batches[0][0])
    id_dtype = "int64" if first.dtype == np.int64 else "int32"
    graph_def = ops.check(np.asarray(export.get("graph", ()), np.uint8).tobytes())
    _check_parts(graph_def, export, table.shape, id_dtype, dense)
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="student")

        def part(name: str):
            return graph.get_operation_by_name(f"student/{export[name]}")

        handle = part("table").outputs[0]
        value = tf.compat.v1.placeholder(tf.float32, table.shape)
        assign = tf.raw_ops.AssignVariableOp(resource=handle, value=value)
        read = tf.raw_ops.ReadVariableOp(resource=handle, dtype=tf.float32)
        train_op = part("train_op")
        reached = _ancestors(train_op)
        op_types = _op_types(graph_def, reached)
        sparse = [op for op in reached if any(m in op.type for m in SPARSE_UPDATE_MARKERS)]
        sparse = [(op, _indices_input(op)) for op in sorted(sparse, key=lambda o: o.name)]
        sparse = [(op, indices) for op, indices in sparse if indices is not None]
        feeds = (part("inputs").outputs[0], part("upstream").outputs[0])
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1,
                                      inter_op_parallelism_threads=1)
    options = tf.compat.v1.RunOptions(timeout_in_ms=STEP_TIMEOUT_MS)
    tables, updates = [table.copy()], []
    with tf.compat.v1.Session(graph=graph, config=config) as session:
        session.run(part("init"), options=options)
        session.run(assign, {value: table}, options=options)
        for step_inputs, step_upstream in batches:
            fed = {feeds[0]: np.asarray(step_inputs, dtype=np.float32 if dense else id_dtype),
                   feeds[1]: np.asarray(step_upstream, dtype=np.float32)}
            ran = session.run([train_op] + [indices for _, indices in sparse], fed,
                              options=options)
            updates.append([{"op": op.type, "rows": np.unique(rows).tolist()}
                            for (op, _), rows in zip(sparse, ran[1:], strict=True)])
            tables.append(session.run(read, options=options))
    return {"tables": tables, "op_types": sorted(op_types), "updates": updates}
