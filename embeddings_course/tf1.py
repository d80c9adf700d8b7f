"""Running TF 1 style graph code for notebook 04, and checking what it did.

The notebook's exercise `build_capped_train_op(loss, var, max_norm, optimizer=None)` builds a
training op in `tf.compat.v1` graph mode. `train_in_graph` gives it a graph of its own (a
variable, placeholders, a loss) and runs the op in a `Session` on some batches; it returns
the table after each step, the kinds of op the training op runs and the rows each sparse
update op was given, so checks can ask which rows moved, by how much, and whether the
update stayed sparse.

While a notebook is graded, the graph is built in the notebook's kernel
(`export_train_graph`, an observation) and only the graph crosses, as a `GraphDef`: the
observer (`autograder.engine.observer.tf1graph`) runs it with the test's table and batches,
which the kernel never sees, and computes every fact above itself. In JupyterLab the same
two steps run here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from embeddings_course import observe
from embeddings_course.checks import CheckFailed
from embeddings_course.observe import observation

# Kernels of tf.compat.v1.train optimizers for a dense gradient: one of these in the graph
# means the update reads and writes the whole table.
DENSE_APPLY_PREFIXES = ("ResourceApply", "Apply")
SPARSE_UPDATE_MARKERS = ("Scatter", "SparseApply")


@dataclass
class GraphRun:
    """What `train_in_graph` saw: the table before and after each step, the op types the
    training op runs, and per step the rows each sparse update op was given."""

    tables: list[np.ndarray]
    op_types: set[str]
    updates: list[list[dict]] = field(default_factory=list)  # per step: {"op", "rows"}
    batch_ids: list[list[int]] = field(default_factory=list)  # per step, sparse batches

    def moved_rows(self, step: int) -> list[int]:
        """Sorted ids of the rows that step `step` (1 = the first) changed at all."""
        before, after = self.tables[step - 1], self.tables[step]
        return np.flatnonzero((before != after).any(axis=1)).tolist()


# the TF 1 optimizers a test may pass, by name: (name, learning rate) crosses as data
OPTIMIZERS = {"GradientDescent": "GradientDescentOptimizer", "Adam": "AdamOptimizer",
              "Momentum": "MomentumOptimizer", "Adagrad": "AdagradOptimizer"}


def train_in_graph(build_train_op: Callable, table, batches: Sequence, max_norm: float,
                   optimizer: tuple[str, float] | None = None, dense: bool = False,
                   name: str = "build_capped_train_op") -> GraphRun:
    """Build `build_train_op(loss, var, max_norm[, optimizer=...])` in a new graph and run it.

    table: (n, d) initial values of the variable `var`.
    batches: for the sparse case, pairs (ids, upstream): the loss is
        `sum(tf.gather(var, ids) * upstream)`, whose gradient is an IndexedSlices that names
        `ids` with values `upstream`. With `dense=True`, pairs (x, upstream) with x (k, n):
        the loss is `sum((x @ var) * upstream)`, a dense gradient `x.T @ upstream`.
    optimizer: `(name, learning_rate)` of the `tf.compat.v1.train` optimizer made inside the
        graph and passed as `optimizer=` (names: `OPTIMIZERS`); None lets the function use
        its default.
    The graph is built by `export_train_graph` (in the notebook's kernel while it is graded)
    from the table's shape alone, and run by the observer on `table` and `batches`.
    """
    table = np.asarray(table, dtype=np.float32)
    if table.ndim != 2:
        raise ValueError(f"table must be 2-D (rows, dim); got shape {table.shape}")
    batches = [(np.asarray(x), np.asarray(up, dtype=np.float32)) for x, up in batches]
    if not batches:
        raise ValueError("batches is empty: give at least one (ids, upstream) pair")
    id_dtype = "int64" if batches[0][0].dtype == np.int64 else "int32"
    export = export_train_graph(build_train_op, list(table.shape), id_dtype=id_dtype,
                                max_norm=float(max_norm), optimizer=optimizer, dense=dense,
                                name=name)
    if not isinstance(export, dict):
        raise CheckFailed(f"{name}: got a {type(export).__name__}, expected the graph built "
                          "and sent.")
    seen = _observer_train(export, table, batches, dense)
    return GraphRun([np.asarray(t) for t in seen["tables"]], set(seen["op_types"]),
                    list(seen["updates"]),
                    [] if dense else [np.unique(ids).tolist() for ids, _ in batches])


def _observer_train(export: dict, table, batches, dense: bool) -> dict:
    """`autograder.engine.observer.tf1graph.train` in the grader's observer process while a
    notebook is graded (within the test's deadline), else here, by the same code."""
    request = {"export": export, "table": table, "batches": batches, "dense": dense}
    router = observe.router()
    if router is None:
        from autograder.engine.observer import tf1graph

        return tf1graph.train(**request)
    return router.observer_ask({"op": "tf1_train", "request": request})


@observation
def export_train_graph(build_train_op, shape, id_dtype="int32", max_norm=1.0,
                       optimizer=None, dense=False, name="build_capped_train_op") -> dict:
    """`train_in_graph`'s graph: `build_train_op` called in a new `tf.Graph` on a variable
    of `shape` (zeros: the test's values are set where the graph runs), returned as data:
    the `GraphDef`'s bytes and the names of the training op, the table variable, the
    initialiser and the two placeholders."""
    rows, dim = (int(n) for n in shape)
    graph = tf.Graph()
    with graph.as_default():
        var = tf.compat.v1.Variable(tf.zeros((rows, dim)), name="table")
        upstream = tf.compat.v1.placeholder(tf.float32, [None, dim], name="upstream")
        if dense:
            inputs = tf.compat.v1.placeholder(tf.float32, [None, rows], name="x")
            loss = tf.reduce_sum(tf.matmul(inputs, var) * upstream)
        else:
            inputs = tf.compat.v1.placeholder(tf.as_dtype(id_dtype), [None], name="ids")
            loss = tf.reduce_sum(tf.gather(var, inputs) * upstream)
        kwargs = {}
        if optimizer is not None:
            kind, learning_rate = optimizer
            make = getattr(tf.compat.v1.train, OPTIMIZERS[kind])
            kwargs["optimizer"] = make(float(learning_rate), **(
                {"momentum": 0.9} if kind == "Momentum" else {}))
        train_op = build_train_op(loss, var, max_norm, **kwargs)
        if not isinstance(train_op, (tf.Operation, tf.Tensor)) or train_op.graph is not graph:
            raise CheckFailed(
                f"{name}: got a {type(train_op).__name__}, expected the op that "
                "optimizer.apply_gradients(...) returns, built in the current graph.")
        init = tf.compat.v1.global_variables_initializer()
    op = train_op if isinstance(train_op, tf.Operation) else train_op.op
    data = graph.as_graph_def().SerializeToString()
    return {"graph": np.frombuffer(data, np.uint8).copy(), "train_op": op.name,
            "table": var.op.name, "init": init.name, "inputs": inputs.op.name,
            "upstream": upstream.op.name}


def capped_sgd_reference(table, ids, upstream, max_norm: float, lr: float = 1.0) -> np.ndarray:
    """NumPy: one SGD step whose gradient rows are summed per id, then capped to max_norm."""
    table = np.array(table, dtype=np.float64)
    grad = np.zeros_like(table)
    np.add.at(grad, np.asarray(ids), np.asarray(upstream, dtype=np.float64))
    norms = np.linalg.norm(grad, axis=1, keepdims=True)
    scale = np.where(norms > max_norm, max_norm / np.maximum(norms, 1e-30), 1.0)
    return table - lr * grad * scale


def check_sparse_update(run: GraphRun, name: str = "build_capped_train_op") -> None:
    """The op updates by scatter, not with a dense apply kernel, and each scatter names
    the rows the step's batch looked up, not the whole table."""
    dense = sorted(t for t in run.op_types if t.startswith(DENSE_APPLY_PREFIXES))
    sparse = sorted(t for t in run.op_types if any(m in t for m in SPARSE_UPDATE_MARKERS))
    if dense or not sparse:
        raise CheckFailed(
            f"{name}: got a dense update ({', '.join(dense) or 'no scatter op'}), expected a "
            "scatter into the batch's rows.\nThe gradient of tf.gather is an IndexedSlices "
            "and should stay one, so the optimizer scatters into the batch's rows instead of "
            "rewriting the whole table.\n"
            "Hint: did tf.convert_to_tensor or a multiplication by a tensor turn it dense? Cap "
            "grad.values and build a new tf.IndexedSlices from them.")
    for step, (ids, updates) in enumerate(zip(run.batch_ids, run.updates, strict=True), 1):
        if not updates:
            raise CheckFailed(f"{name}: got no scatter op given the rows of step {step}, "
                              "expected one (its ids were not found in the graph).")
        for update in updates:
            if update["rows"] != ids:
                rows = update["rows"]
                shown = str(rows) if len(rows) <= 12 else f"{rows[:12]} and {len(rows) - 12} more"
                raise CheckFailed(
                    f"{name}: got rows {shown} named by the update ({update['op']}) of step "
                    f"{step}, expected {ids}, the rows its batch looked up.\nA sparse update "
                    "names only the rows looked up, so a step costs the batch, not the table.\n"
                    "Hint: build the IndexedSlices from the gradient's own indices (after "
                    "summing duplicates), not from every row of the table.")


def dropout_places(model) -> dict[str, list[float]]:
    """Where a BiLSTM tagger drops units, as TF 1's `DropoutWrapper` does on an LSTM's
    inputs, states and outputs: {"inputs": the rates of the LSTMs' `dropout` and of the
    `Dropout` layers before the first recurrent layer, "states": the LSTMs'
    `recurrent_dropout`, "outputs": the rates of the `Dropout` layers after the last
    recurrent layer}, each a sorted list of the distinct rates above 0 (rounded to 6
    places), [] where none. The layers are taken in the model's order (a functional or
    Sequential model lists them from input to output), from the model rebuilt from its
    config (`observe.keras_model`): a model of the notebook's kernel is rebuilt first, and
    nothing runs there."""
    import keras

    from embeddings_course import observe

    if observe.is_remote(model):
        model = observe.keras_model(model)
    places = {"inputs": set(), "states": set(), "outputs": set()}
    layers = list(model.layers)
    recurrent = [i for i, layer in enumerate(layers)
                 if isinstance(layer, (keras.layers.RNN, keras.layers.Bidirectional))]
    for i, layer in enumerate(layers):
        if isinstance(layer, keras.layers.Dropout) and recurrent:
            if i < recurrent[0]:
                places["inputs"].add(layer.rate)
            elif i > recurrent[-1]:
                places["outputs"].add(layer.rate)
        if i in recurrent:
            for inner in layer._flatten_layers(include_self=True, recursive=True):
                if isinstance(inner, keras.layers.LSTM):
                    places["inputs"].add(inner.dropout)
                    places["states"].add(inner.recurrent_dropout)
    return {place: sorted({round(float(r), 6) for r in rates if r > 0})
            for place, rates in places.items()}
