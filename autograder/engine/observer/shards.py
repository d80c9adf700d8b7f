"""A lookup over a table's shards, run by the observer: the facts notebook 07 grades.

The kernel traces the student's lookup `fn(shards, ids)` with `tf.function` over shard
variables of its own, zeros of the shapes the test names (it never sees the test's values),
and sends the graph as data (`embeddings_course.cluster.lookup_export`): the GraphDef's
bytes, the name of the ids' placeholder and of the output, and for each variable the graph
reads the placeholder it comes in by and which shard it is. `request` turns that into a
request of `autograder.engine.observer.graphs.run`: the test's ids fed, every shard bound to
a variable of the observer's own holding the test's values, and the gradient of the sum of
the rows taken with respect to each. `facts` reads back what the tests assert: the rows; the
rows each shard's gradient names, in the order it names them (a row read twice is named
twice; `None` for a shard the graph never reads, `[-1]` for a dense gradient); the rows the
graph reads from each shard, what crosses the network on a cluster, from the indices its
gathers were run with (every row for a `ReadVariableOp`, a read of the whole shard). A shard
may reach only those reads, at the graph's top level, where the grader sees them: a graph
that hands a shard to any other op (a function call, a loop) is refused. A graph made by
hand passes only by computing the rows from the test's values, each row read once.
"""

from __future__ import annotations

import numpy as np

from autograder.engine.observer import ops

READS = ("ResourceGather", "ResourceGatherNd", "ReadVariableOp")  # what a shard may reach
MAX_READS = 48  # gathers of the shards, all together (each adds an output to fetch)
MAX_CONSTANT_BYTES = 2**20  # tensors the traced function captured, sent by the kernel


class BadExport(ValueError):
    """An export that does not describe a lookup over the shards it was asked for."""


def _name(value, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 500:
        raise BadExport(f"the export's {what} is not a tensor name")
    return value


def request(export, shards, ids) -> dict:
    """The `graphs.run` request that runs `export` (see the module's docstring) with the
    test's `shards` (arrays, in order) and `ids`; `BadExport` where the export does not fit
    them."""
    if not isinstance(export, dict):
        raise BadExport("the export is not a dict")
    graph = export.get("graph")
    if not isinstance(graph, np.ndarray) or graph.dtype != np.uint8 or graph.ndim != 1:
        raise BadExport("the export's graph is not an array of bytes")
    outputs = export.get("outputs")
    if not isinstance(outputs, list) or len(outputs) != 1:
        raise BadExport("the lookup must return one tensor (the rows)")
    variables, seen_shards = [], set()
    for item in export.get("variables") or []:
        if not isinstance(item, list) or len(item) != 2 or type(item[1]) is not int or \
                not 0 <= item[1] < len(shards) or item[1] in seen_shards:
            raise BadExport("the export names a variable that is not one of the shards, "
                            "or a shard twice")
        seen_shards.add(item[1])
        variables.append([_name(item[0], "variable placeholder"),
                          np.asarray(shards[item[1]], np.float32), True])
    constants, size = [], 0
    for item in export.get("constants") or []:
        if not isinstance(item, list) or len(item) != 2 or not isinstance(item[1], np.ndarray):
            raise BadExport("the export's captured tensors are not (name, array) pairs")
        size += item[1].nbytes
        if size > MAX_CONSTANT_BYTES:
            raise BadExport(f"the lookup captured more than {MAX_CONSTANT_BYTES} bytes of "
                            "tensors from outside it")
        constants.append([_name(item[0], "captured tensor"), item[1]])
    reads = _reads(ops.check(graph.tobytes()), {name.split(":")[0]: k for name, k in
                                                  (item for item in export["variables"])})
    return {"graph": graph,
            "inputs": [[_name(export.get("ids"), "ids placeholder"), np.asarray(ids)],
                       *constants],
            "variables": variables,
            "outputs": [_name(outputs[0], "output")] + [r[2] for r in reads if r[2]],
            "wrt": [["variable", j] for j in range(len(variables))], "reduce": "sum",
            "reads": reads}


def _tensor(name: str) -> str:
    return name if ":" in name else f"{name}:0"


def _reads(graph_def, shard_of: dict) -> list:
    """[op, shard, tensor of the indices it gathers ("" for a whole read)] for each node of
    `graph_def` that takes a shard's placeholder; `BadExport` for any other such node."""
    reads = []
    for node in graph_def.node:
        for position, source in enumerate(node.input):
            if source.startswith("^") or source.split(":")[0] not in shard_of:
                continue
            shard = shard_of[source.split(":")[0]]
            if node.op not in READS or position != 0:
                raise BadExport(f"shard {shard} is given to a {node.op} op (node "
                                f"{node.name!r}), where the grader cannot see which rows "
                                "it reads: read the shards with tf.gather")
            if node.op == "ResourceGather" and node.attr["batch_dims"].i != 0:
                raise BadExport(f"node {node.name!r} gathers with batch_dims")
            reads.append([node.op, shard, "" if node.op == "ReadVariableOp"
                          else _tensor(node.input[1])])
    if len(reads) > MAX_READS:
        raise BadExport(f"the graph reads the shards {len(reads)} times; at most "
                        f"{MAX_READS} are followed")
    return reads


def facts(result: dict, request_: dict, export: dict, sizes) -> dict:
    """What the tests assert, from `graphs.run`'s `result` of `request_` (made by `request`
    from `export`, for shards of `sizes` rows): {"rows": array, "shard_rows": per shard,
    the rows its gradient names (list, in order) or [-1] (dense) or None (no gradient),
    "read": per shard, the rows the graph read from it (list, a row read twice is there
    twice), "whole_reads": how many times a shard was read whole, "op_types": the graph's
    op types}."""
    shard_rows: list = [None] * len(sizes)
    for (_, shard), grad in zip(export.get("variables") or [], result["grads"], strict=True):
        if grad is None:
            continue
        if isinstance(grad, dict):
            shard_rows[shard] = np.asarray(grad["indices"]).astype(np.int64).ravel().tolist()
        else:
            shard_rows[shard] = [-1]
    read: list = [[] for _ in sizes]
    fetched = iter(result["outputs"][1:])
    for op, shard, _ in request_["reads"]:
        if op == "ReadVariableOp":
            read[shard] += list(range(int(sizes[shard])))
            continue
        indices = np.asarray(next(fetched)).astype(np.int64)
        if op == "ResourceGatherNd":  # each index vector's first entry names the row
            indices = indices.reshape(-1, indices.shape[-1] if indices.ndim else 1)[:, :1]
        read[shard] += indices.reshape(-1).tolist()
    return {"rows": np.asarray(result["outputs"][0]), "shard_rows": shard_rows, "read": read,
            "whole_reads": sum(op == "ReadVariableOp" for op, *_ in request_["reads"]),
            "op_types": [str(t) for t in result["op_types"]]}
