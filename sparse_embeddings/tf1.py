"""Running TF 1 style graph code for notebook 04, and checking what it did.

The notebook's exercise `build_capped_train_op(loss, var, max_norm, optimizer=None)` builds a
training op in `tf.compat.v1` graph mode. `train_in_graph` gives it a graph of its own (a
variable, placeholders, a loss), runs the op in a `Session` on some batches and returns the
table after each step and the kinds of op the exercise added, so checks can ask which rows
moved, by how much, and whether the update stayed sparse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from sparse_embeddings.checks import CheckFailed
from sparse_embeddings.observe import observation

# Kernels of tf.compat.v1.train optimizers for a dense gradient: one of these in the graph
# means the update reads and writes the whole table.
DENSE_APPLY_PREFIXES = ("ResourceApply", "Apply")
SPARSE_UPDATE_MARKERS = ("Scatter", "SparseApply")


@dataclass
class GraphRun:
    """What `train_in_graph` saw: the table before and after each step, and the op types
    that the exercise's function added to the graph."""

    tables: list[np.ndarray]
    op_types: set[str]

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
    An observation: while a notebook is graded, it runs in the notebook's kernel and only
    the tables and op types come back.
    """
    tables, op_types = run_in_graph(build_train_op, table, list(batches), max_norm,
                                    optimizer=optimizer, dense=dense, name=name)
    return GraphRun([np.asarray(t) for t in tables], set(op_types))


@observation
def run_in_graph(build_train_op, table, batches, max_norm, optimizer=None, dense=False,
                 name="build_capped_train_op"):
    """`train_in_graph`'s work: (the table after each step, the new op types, sorted)."""
    table = np.asarray(table, dtype=np.float32)
    if table.ndim != 2:
        raise ValueError(f"table must be 2-D (rows, dim); got shape {table.shape}")
    if not batches:
        raise ValueError("batches is empty: give at least one (ids, upstream) pair")
    first = np.asarray(batches[0][0])
    graph = tf.Graph()
    with graph.as_default():
        var = tf.compat.v1.Variable(table, name="table")
        upstream = tf.compat.v1.placeholder(tf.float32, [None, table.shape[1]], name="upstream")
        if dense:
            inputs = tf.compat.v1.placeholder(tf.float32, [None, table.shape[0]], name="x")
            loss = tf.reduce_sum(tf.matmul(inputs, var) * upstream)
        else:
            id_dtype = tf.int64 if first.dtype == np.int64 else tf.int32
            inputs = tf.compat.v1.placeholder(id_dtype, [None], name="ids")
            loss = tf.reduce_sum(tf.gather(var, inputs) * upstream)
        known = set(graph.get_operations())
        kwargs = {}
        if optimizer is not None:
            kind, learning_rate = optimizer
            make = getattr(tf.compat.v1.train, OPTIMIZERS[kind])
            kwargs["optimizer"] = make(float(learning_rate), **(
                {"momentum": 0.9} if kind == "Momentum" else {}))
        train_op = build_train_op(loss, var, max_norm, **kwargs)
        if not isinstance(train_op, (tf.Operation, tf.Tensor)) or train_op.graph is not graph:
            raise CheckFailed(
                f"{name} returned {type(train_op).__name__}; expected the op that "
                "optimizer.apply_gradients(...) returns, built in the current graph.")
        op_types = {op.type for op in graph.get_operations() if op not in known}
        init = tf.compat.v1.global_variables_initializer()
    tables = [table.copy()]
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        for step_inputs, step_upstream in batches:
            session.run(train_op, {inputs: np.asarray(step_inputs),
                                   upstream: np.asarray(step_upstream, dtype=np.float32)})
            tables.append(session.run(var))
    return tables, sorted(op_types)


def capped_sgd_reference(table, ids, upstream, max_norm: float, lr: float = 1.0) -> np.ndarray:
    """NumPy: one SGD step whose gradient rows are summed per id, then capped to max_norm."""
    table = np.array(table, dtype=np.float64)
    grad = np.zeros_like(table)
    np.add.at(grad, np.asarray(ids), np.asarray(upstream, dtype=np.float64))
    norms = np.linalg.norm(grad, axis=1, keepdims=True)
    scale = np.where(norms > max_norm, max_norm / np.maximum(norms, 1e-30), 1.0)
    return table - lr * grad * scale


def check_sparse_update(run: GraphRun, name: str = "build_capped_train_op") -> None:
    """The op updates by scatter (only the batch's rows), not with a dense apply kernel."""
    dense = sorted(t for t in run.op_types if t.startswith(DENSE_APPLY_PREFIXES))
    sparse = sorted(t for t in run.op_types if any(m in t for m in SPARSE_UPDATE_MARKERS))
    if dense or not sparse:
        raise CheckFailed(
            f"{name} built a dense update ({', '.join(dense) or 'no scatter op'}): the gradient "
            "of tf.gather is an IndexedSlices and should stay one, so the optimizer scatters "
            "into the batch's rows instead of rewriting the whole table.\n"
            "Hint: did tf.convert_to_tensor or a multiplication by a tensor turn it dense? Cap "
            "grad.values and build a new tf.IndexedSlices from them.")


@observation
def dropout_rates(model) -> list[float]:
    """Every dropout rate in a Keras model, nested layers included: `Dropout(rate)` layers
    and the `dropout` / `recurrent_dropout` of recurrent layers and their cells."""
    rates = []
    # Keras 3 has no public recursive walk over sublayers (Bidirectional's LSTMs, their cells).
    for layer in model._flatten_layers(include_self=True, recursive=True):
        for attribute in ("rate", "dropout", "recurrent_dropout"):
            value = getattr(layer, attribute, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                rates.append(float(value))
    return rates
