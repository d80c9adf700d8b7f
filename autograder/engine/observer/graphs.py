"""One graph the kernel sent, imported and run with the grader's inputs and variables.

`run(request)` takes data only (see `run`): the GraphDef's bytes, checked by
`autograder.engine.observer.ops` before anything of it is built; the grader's values for
its input placeholders; values for its resource placeholders (the variables the traced
function read), each bound to a `tf.Variable` made here. It builds a graph of its own,
imports the student's into it, runs it in a session, and takes the gradients it is asked
for itself (`tf.gradients`: where the student's graph gathers rows of a variable, the
gradient is an `IndexedSlices`, as an optimizer would get it). It runs in the observer's
process (`serve`), never in the grader's.
"""

from __future__ import annotations

import numpy as np

from autograder.engine.observer import ops

REDUCTIONS = ("sum", "sum_squares")
MAX_OUTPUTS = 64


class Unusable(ValueError):
    """A request whose names or values do not fit its graph."""


def _names(graph) -> dict:
    """Placeholder name -> its node, at the graph's top level."""
    return {n.name: n for n in graph.node if n.op == "Placeholder"}


def _tensor_name(name: str) -> str:
    return name if ":" in name else f"{name}:0"


def _node_name(name: str) -> str:
    return name.split(":")[0].lstrip("^")


def _loss(tf, outputs, reduce, upstream):
    total = []
    for out in outputs:
        if not out.dtype.is_floating:
            continue
        if reduce == "sum_squares":
            total.append(tf.reduce_sum(tf.square(out)))
        elif upstream is not None:
            total.append(tf.reduce_sum(out * tf.cast(upstream, out.dtype)))
        else:
            total.append(tf.reduce_sum(out))
    if not total:
        raise Unusable("no floating-point output to differentiate")
    return tf.add_n(total)


def _result(value):
    """A fetched gradient as data: an array, or an IndexedSlices' parts."""
    if value is None:
        return None
    if hasattr(value, "indices"):
        return {"indexed_slices": True, "values": np.asarray(value.values),
                "indices": np.asarray(value.indices),
                "dense_shape": None if value.dense_shape is None
                else np.asarray(value.dense_shape)}
    return np.asarray(value)


def run(request: dict, timeout_s: float = 60.0) -> dict:
    """Run one graph. `request` (data only):

    - "graph": uint8 array, the serialized GraphDef (with its function library);
    - "inputs": [[placeholder, array], ...], what each input placeholder is fed;
    - "variables": [[placeholder, array, trainable], ...], resource placeholders each bound
      to a `tf.Variable` of that value, made here;
    - "outputs": tensor names to fetch ("name:0"), at most MAX_OUTPUTS;
    - "wrt": [["input", i] | ["variable", j], ...], what to differentiate with respect to
      (positions in "inputs" / "variables"); none: no gradient;
    - "reduce": "sum" (of the outputs times "upstream", where given) or "sum_squares";
    - "fetch": tensor names of the graph whose values to read in the same run (what a
      write op was given: `embeddings_course.graphwrites`), at most MAX_OUTPUTS;
    - "targets": names of ops of the graph to run in it too (writes no output depends on).

    Returns {"outputs": [arrays], "grads": [array | IndexedSlices' parts | None],
    "variables_after": [arrays], "op_types": [op types of the student's graph],
    "fetched": [arrays]}.
    """
    import tensorflow as tf

    graph_def = ops.check(np.asarray(request["graph"], np.uint8).tobytes())
    placeholders = _names(graph_def)
    inputs = [(str(name), np.asarray(value)) for name, value in request.get("inputs", [])]
    variables = [(str(name), np.asarray(value), bool(trainable))
                 for name, value, trainable in request.get("variables", [])]
    outputs = [_tensor_name(str(name)) for name in request.get("outputs", [])]
    extra = [_tensor_name(str(name)) for name in request.get("fetch", [])]
    targets = [_node_name(str(name)) for name in request.get("targets", [])]
    if not outputs or len(outputs) > MAX_OUTPUTS:
        raise Unusable(f"ask for 1 to {MAX_OUTPUTS} outputs")
    if len(extra) > MAX_OUTPUTS or len(targets) > MAX_OUTPUTS:
        raise Unusable(f"fetch and run at most {MAX_OUTPUTS} more tensors and ops")
    nodes = {n.name for n in graph_def.node}
    for name in outputs + extra + targets:
        if _node_name(name) not in nodes:
            raise Unusable(f"the graph has no tensor or op {name!r}")
    fed = [_node_name(name) for name, *_ in inputs + variables]
    for name in fed:
        if name not in placeholders:
            raise Unusable(f"{name!r} is not a placeholder of the graph")
    if len(set(fed)) != len(fed):
        raise Unusable("a placeholder is fed twice")
    reduce = str(request.get("reduce", "sum"))
    if reduce not in REDUCTIONS:
        raise Unusable(f"reduce must be one of {REDUCTIONS}")
    wrt = [(str(kind), int(i)) for kind, i in request.get("wrt", [])]

    graph = tf.Graph()
    with graph.as_default():
        fed_inputs = [tf.compat.v1.placeholder(tf.as_dtype(value.dtype), value.shape,
                                               name=f"grader_input_{k}")
                      for k, (_, value) in enumerate(inputs)]
        own = [tf.Variable(value, trainable=trainable, name=f"grader_variable_{k}")
               for k, (_, value, trainable) in enumerate(variables)]
        input_map = {_tensor_name(name): t for (name, _), t in zip(inputs, fed_inputs,
                                                                  strict=True)}
        input_map.update({_tensor_name(name): v.handle
                          for (name, *_), v in zip(variables, own, strict=True)})
        fetched = tf.graph_util.import_graph_def(graph_def, input_map=input_map,
                                                 return_elements=outputs, name="student")
        # an input of the graph is read where it is fed
        extra_tensors = [input_map[name] if name in input_map else
                         graph.get_tensor_by_name(f"student/{name}") for name in extra]
        target_ops = [graph.get_operation_by_name(f"student/{name}") for name in targets]
        grads = []
        if wrt:
            upstream = request.get("upstream")
            loss = _loss(tf, fetched, reduce, None if upstream is None
                         else tf.constant(np.asarray(upstream)))
            sources = []
            for kind, i in wrt:
                pool = fed_inputs if kind == "input" else own if kind == "variable" else None
                if pool is None or not 0 <= i < len(pool):
                    raise Unusable(f"no {kind} {i} to differentiate with respect to")
                sources.append(pool[i])
            grads = tf.gradients(loss, sources)
        init = [v.initializer for v in own]
        reads = [v.read_value() for v in own]
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1,
                                      inter_op_parallelism_threads=1)
    options = tf.compat.v1.RunOptions(timeout_in_ms=max(int(timeout_s * 1000), 1))
    with tf.compat.v1.Session(graph=graph, config=config) as session:
        session.run(init, options=options)
        feed = {t: value for t, (_, value) in zip(fed_inputs, inputs, strict=True)}
        got_outputs, got_grads, got_extra, _ = session.run(
            (list(fetched), [g for g in grads if g is not None], extra_tensors, target_ops),
            feed_dict=feed, options=options)
        after = session.run(reads, options=options) if own else []
    got = iter(got_grads)
    return {"outputs": [np.asarray(o) for o in got_outputs],
            "grads": [None if g is None else _result(next(got)) for g in grads],
            "variables_after": [np.asarray(a) for a in after],
            "op_types": ops.op_types(graph_def),
            "fetched": [np.asarray(value) for value in got_extra]}
