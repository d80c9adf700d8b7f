"""Which rows of its variables a traced graph writes.

A sparse update changes only the rows of its batch, and its values alone cannot show that
it is sparse: subtracting a densified gradient from the whole table, or scattering zeros
into every row, leaves the other rows' values as they were. What shows it is the update's
own ops: an assign writes the whole variable; a scatter (a sparse apply kernel, a
strided-slice assign) writes the rows its inputs name, which the run that writes them also
reads out.

`plan(graph_def, variables)` reads the GraphDef (data: no op of it runs) and lists every
top-level node that writes one of the resource placeholders named in `variables`, or
another variable, or calls a library function that writes one, with the names of the
tensors that say which rows (to fetch in the run that writes). `report(plan, fetched, rows)`
turns the plan and the fetched values into data: one dict per write,
{"op": type, "variable": position in `variables` (-1: another), "rows": sorted row ids, or
None where the whole variable, or a part the graph does not show, is written}.

The observation `observe.variable_writes` uses both: in the grader the observer runs the
graph on its own variables and fetches the tensors (`autograder.engine.observer.graphs`,
its "fetch" and "targets"); in Validate the kernel runs it the same way.
"""

from __future__ import annotations

import numpy as np

# ops that write a whole resource variable
DENSE_WRITES = frozenset({"AssignVariableOp", "AssignSubVariableOp", "AssignAddVariableOp"})
SLICE_WRITE = "ResourceStridedSliceAssign"


def _input_names(op_type: str) -> list[str]:
    from tensorflow.python.framework import op_def_registry

    op_def = op_def_registry.get(op_type)
    return [arg.name for arg in op_def.input_arg] if op_def is not None else []


def _writes_rows(op_type: str) -> bool:
    """A write of the rows an `indices` input names (a scatter, a sparse apply kernel)."""
    return op_type.startswith("Resource") and ("Scatter" in op_type or
                                               "SparseApply" in op_type)


def _functions_named(attr) -> list[str]:
    if attr.HasField("func"):
        return [attr.func.name]
    return [f.name for f in attr.list.func] if attr.HasField("list") else []


def _writes(op_type: str) -> bool:
    return op_type in DENSE_WRITES or op_type == SLICE_WRITE or _writes_rows(op_type)


def writing_functions(graph_def) -> set[str]:
    """The library functions of `graph_def` that write a variable, themselves or through a
    function they call."""
    library = {f.signature.name: f for f in graph_def.library.function}
    calls = {name: {n.op for n in f.node_def if n.op in library}
             | {g for n in f.node_def for a in n.attr.values() for g in _functions_named(a)}
             for name, f in library.items()}
    writing = {name for name, f in library.items() if any(_writes(n.op) for n in f.node_def)}
    while True:
        more = {name for name, called in calls.items()
                if name not in writing and called & writing}
        if not more:
            return writing
        writing |= more


def _tensor(name: str) -> str:
    name = name.lstrip("^")
    return name if ":" in name else f"{name}:0"


def plan(graph_def, variables: list[str]) -> list[dict]:
    """Each top-level write of `graph_def`: {"node", "op", "variable" (position of its
    resource input among the placeholder names `variables`, -1: another), "fetch" (the
    tensor names to fetch for its rows: indices, or begin, end and strides; none: the
    whole variable or a part the graph does not show), and for a strided-slice assign its
    masks}."""
    position = {name.split(":")[0]: k for k, name in enumerate(variables)}
    writing = writing_functions(graph_def)
    found = []
    for node in graph_def.node:
        called = {node.op} | {g for a in node.attr.values() for g in _functions_named(a)}
        if not _writes(node.op):
            if called & writing:
                found.append({"node": node.name, "op": node.op, "variable": -1, "fetch": []})
            continue
        inputs = [i for i in node.input if not i.startswith("^")]
        target = position.get(inputs[0].split(":")[0], -1) if inputs else -1
        names = _input_names(node.op)
        entry = {"node": node.name, "op": node.op, "variable": target, "fetch": []}
        if _writes_rows(node.op) and "indices" in names:
            entry["fetch"] = [_tensor(inputs[names.index("indices")])]
            entry["nd"] = "ScatterNd" in node.op
        elif node.op == SLICE_WRITE:
            entry["fetch"] = [_tensor(inputs[names.index(part)])
                              for part in ("begin", "end", "strides")]
            entry["masks"] = {m: int(node.attr[m].i) for m in
                              ("begin_mask", "end_mask", "shrink_axis_mask",
                               "ellipsis_mask", "new_axis_mask")}
        found.append(entry)
    return found


def _slice_rows(begin, end, strides, masks: dict, rows: int) -> list[int] | None:
    """The rows (first axis) a strided-slice assign writes, for a variable of `rows` rows;
    None where the slice's first axis is not a plain one."""
    if masks["ellipsis_mask"] & 1 or masks["new_axis_mask"] & 1 or not len(begin):
        return None
    start, stop, step = int(begin[0]), int(end[0]), int(strides[0])
    if masks["shrink_axis_mask"] & 1:
        return [start % rows] if -rows <= start < rows else []
    whole = slice(None if masks["begin_mask"] & 1 else start,
                  None if masks["end_mask"] & 1 else stop, step)
    return list(range(rows))[whole]


def report(found: list[dict], fetched: list, rows: list[int]) -> list[dict]:
    """The writes as data. `fetched` holds the values of every write's "fetch" names, in
    order; `rows[k]` is the number of rows of variable k."""
    values = iter(fetched)
    out = []
    for entry in found:
        got = [np.asarray(next(values)) for _ in entry["fetch"]]
        written = None
        if entry.get("masks") is not None and entry["variable"] >= 0:
            written = _slice_rows(*got, entry["masks"], rows[entry["variable"]])
        elif got and "masks" not in entry:
            ids = got[0]
            if entry.get("nd"):
                ids = ids.reshape(-1, ids.shape[-1])[:, 0] if ids.ndim and ids.shape[-1] \
                    else None
            written = None if ids is None else np.asarray(ids).ravel().tolist()
        out.append({"op": entry["op"], "variable": int(entry["variable"]),
                    "rows": None if written is None else sorted({int(i) for i in written})})
    return out
