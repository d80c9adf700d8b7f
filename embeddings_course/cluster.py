"""A parameter-server cluster on localhost, and what a step of a sharded table sends.

Notebook 07 trains an embedding table sharded across parameter servers with
`tf.distribute.ParameterServerStrategy`. Starting and stopping the servers is not
the lesson, so it lives here:

    >>> with LocalCluster(num_ps=2, num_workers=1) as cluster:
    ...     strategy = tf.distribute.ParameterServerStrategy(cluster.resolver(), ...)

Each `tf.distribute.Server` runs in its own child process (a server cannot be shut
down inside a process), so `stop()` really ends it and nothing stays behind; an
`atexit` hook stops a cluster its owner forgot. The children are forked from a
`forkserver` that imported TensorFlow once: three spawned children importing
TensorFlow each took 19 s to come up on 2 cores, forked ones 6 s. Their output goes
to a log file (nbgrader fails a test cell that writes to stderr), whose last lines a
failure message quotes. As with any `multiprocessing` code, a script that starts a
cluster keeps its top level under `if __name__ == "__main__":`.

The rest is the arithmetic of notebook 07: `shard_sizes` and `shard_of` (the row
layout of `tf.distribute.experimental.partitioners.FixedShardsPartitioner`),
`lookup` (a table read shard by shard, unique ids only, counting the bytes of the
tensors that cross to and from the parameter servers), `make_train_step` and
`predicted_traffic`, the library version of the notebook's `step_traffic_bytes`.

What 07's tests rest on is computed outside the learner's Python: `measured_traffic` runs
the library's own step where the test runs, on shards of its own, and `lookup_facts` runs
the graph of a learner's lookup (traced in the kernel by `lookup_export`) in the grader's
observer, on the test's values (`autograder.engine.observer.shards`).
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from embeddings_course.observe import observation

__all__ = [
    "LocalCluster",
    "free_port",
    "port_in_use",
    "shard_sizes",
    "shard_of",
    "sharded_lookup",
    "lookup",
    "make_train_step",
    "predicted_traffic",
    "measured_traffic",
    "lookup_export",
    "lookup_facts",
]

HOST = "localhost"
ID_BYTES = 8  # int64 ids
VALUE_BYTES = 4  # float32 rows


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_in_use(port: int) -> bool:
    """Whether something already holds `port` on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
    except OSError:
        return False
    return True


def _watch_owner(owner: int) -> None:
    """End this server when the process that started the cluster is gone (a kernel that was
    killed runs no atexit hook), so that no server outlives its notebook."""
    import threading

    def watch():
        while True:
            time.sleep(1.0)
            try:
                os.kill(owner, 0)
            except ProcessLookupError:
                os._exit(0)
            except PermissionError:
                pass

    threading.Thread(target=watch, daemon=True).start()


def _serve(spec: dict, job: str, index: int, log_path: str, owner: int) -> None:
    """The child process: one `tf.distribute.Server`, output to `log_path`, until killed
    or until the `owner` process is gone."""
    _watch_owner(owner)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    server = tf.distribute.Server(tf.train.ClusterSpec(spec), job_name=job, task_index=index,
                                  protocol="grpc", start=True)
    print(f"{job}:{index} serving at {server.target}", flush=True)
    server.join()


def _context():
    methods = multiprocessing.get_all_start_methods()
    if sys.platform.startswith("linux") and "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["tensorflow", __name__])
        return ctx
    return multiprocessing.get_context("spawn")


def _start_helpers_quietly(ctx, log_path: Path) -> None:
    """Start the forkserver (and the resource tracker) with their output in `log_path`.

    They inherit the notebook's stdout and stderr, and the forkserver imports TensorFlow,
    whose C++ start-up lines ("oneDNN custom operations are on", "Could not find cuda
    drivers") go to stderr before any log level applies: Jupyter would show them under the
    cell that starts the cluster."""
    if ctx.get_start_method() != "forkserver":
        return  # spawned servers send their output to their own log files
    from multiprocessing import forkserver, resource_tracker

    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(log, 1)
        os.dup2(log, 2)
        resource_tracker.ensure_running()
        forkserver.ensure_running()
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, log):
            os.close(fd)


def _running_process(process) -> bool:
    """Alive and not a zombie: a killed child can still look alive to `is_alive()` until
    the forkserver has reported its exit."""
    if not process.is_alive():
        return False
    import psutil

    try:
        return psutil.Process(process.pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class LocalCluster:
    """Workers and parameter servers on localhost, each in its own process.

    num_ps, num_workers: how many of each; ports: optional {"ps": [...], "worker": [...]}
        (free ports are picked otherwise); start_timeout: seconds to wait for a server.
    `start()` raises `RuntimeError` naming the port when one is in use and naming the task
    when a server dies while starting; `check()` does the same for a server that died later.
    """

    def __init__(self, num_ps: int = 2, num_workers: int = 1, ports: dict | None = None,
                 start_timeout: float = 90.0):
        if num_ps < 1 or num_workers < 1:
            raise ValueError(f"a cluster needs at least one ps and one worker, "
                             f"got num_ps={num_ps}, num_workers={num_workers}")
        ports = dict(ports or {})
        for job, count in (("worker", num_workers), ("ps", num_ps)):
            given = list(ports.get(job, []))
            if given and len(given) != count:
                raise ValueError(f"{len(given)} {job} ports given for {count} {job} tasks")
            ports[job] = given or [free_port() for _ in range(count)]
        self.ports = ports
        self.spec = {job: [f"{HOST}:{p}" for p in ports[job]] for job in ("worker", "ps")}
        self.start_timeout = start_timeout
        self.log_dir = Path(tempfile.mkdtemp(prefix="course-cluster-"))
        self.processes: dict[str, multiprocessing.Process] = {}

    def tasks(self) -> list[tuple[str, int, int]]:
        """(job, index, port) of every server."""
        return [(job, i, port) for job in ("worker", "ps") for i, port in
                enumerate(self.ports[job])]

    def log(self, task: str) -> str:
        """The last lines a server wrote (`task` like "ps:0")."""
        path = self.log_dir / f"{task.replace(':', '-')}.log"
        if not path.exists():
            return ""
        lines = path.read_text(errors="replace").strip().splitlines()
        return "\n".join(lines[-8:])

    def start(self) -> LocalCluster:
        """Start every server and wait until each accepts connections."""
        if self.processes:
            return self
        for job, i, port in self.tasks():
            if port_in_use(port):
                raise RuntimeError(
                    f"port {port} on localhost is in use: cannot start {job}:{i} there. "
                    "Stop what holds it, or leave the ports out so free ones are picked.")
        from multiprocessing import resource_tracker

        if not _running:
            _tracker_was_running[0] = resource_tracker._resource_tracker._pid is not None
        ctx = _context()
        _start_helpers_quietly(ctx, self.log_dir / "forkserver.log")
        for job, i, _ in self.tasks():
            log_path = self.log_dir / f"{job}-{i}.log"
            process = ctx.Process(target=_serve,
                                  args=(self.spec, job, i, str(log_path), os.getpid()),
                                  name=f"course-{job}-{i}", daemon=True)
            process.start()
            self.processes[f"{job}:{i}"] = process
        _running.add(self)
        deadline = time.monotonic() + self.start_timeout
        waiting = {f"{job}:{i}": port for job, i, port in self.tasks()}
        while waiting:
            for task, port in list(waiting.items()):
                if not _running_process(self.processes[task]):
                    message = self._died(task, port, "while starting")
                    self.stop()
                    raise RuntimeError(message)
                if _accepts(port):
                    del waiting[task]
            if waiting and time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"servers {sorted(waiting)} did not listen within "
                                   f"{self.start_timeout:.0f} s")
            time.sleep(0.1)
        return self

    def _died(self, task: str, port: int, when: str) -> str:
        process = self.processes[task]
        process.join(1)
        message = (f"server {task} (pid {process.pid}, port {port}) died {when}".rstrip()
                   + f", exit code {process.exitcode}")
        log = self.log(task)
        if "in use" in log or "Could not start" in log:
            message += f": is port {port} in use?"

        return message + (f"\nits last lines:\n{log}" if log else "")

    def check(self) -> None:
        """Raise `RuntimeError` naming the first server that is no longer running."""
        if not self.processes:
            raise RuntimeError("the cluster is not running: call start() first")
        for job, i, port in self.tasks():
            task = f"{job}:{i}"
            if not _running_process(self.processes[task]):
                raise RuntimeError(self._died(task, port, "") + "; restart the cluster "
                                   "(a parameter server's variables are gone with it)")

    def stop(self) -> None:
        """End every server process (terminate, then kill) and wait for it."""
        for process in self.processes.values():
            if process.is_alive():
                process.terminate()
        for process in self.processes.values():
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join(5)
        self.processes = {}
        _running.discard(self)
        if not _running:
            _stop_helpers()

    @property
    def pids(self) -> dict[str, int]:
        """{"ps:0": pid, ...} of the running servers."""
        return {task: p.pid for task, p in self.processes.items()}

    def resolver(self):
        """A `SimpleClusterResolver` for `tf.distribute.ParameterServerStrategy`."""
        import tensorflow as tf

        return tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec(self.spec), rpc_layer="grpc")

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.processes else "stopped"
        return f"LocalCluster({self.spec}, {state})"


_running: set[LocalCluster] = set()
_tracker_was_running = [False]


def _stop_helpers() -> None:
    """End the forkserver (and the resource tracker, if starting a cluster started it), so
    that a stopped cluster leaves no process behind; the next start makes new ones."""
    from multiprocessing import forkserver, resource_tracker

    forkserver._forkserver._stop()
    if not _tracker_was_running[0]:
        resource_tracker._resource_tracker._stop()


@atexit.register
def _stop_all() -> None:
    for cluster in list(_running):
        cluster.stop()


def shard_sizes(num_rows: int, num_shards: int) -> list[int]:
    """Rows per shard under `FixedShardsPartitioner(num_shards)`: the first
    `num_rows % num_shards` shards hold one row more; never more shards than rows."""
    num_shards = min(num_shards, num_rows)
    base, extra = divmod(num_rows, num_shards)
    return [base + (1 if k < extra else 0) for k in range(num_shards)]


def shard_of(row_ids, num_rows: int, num_shards: int) -> np.ndarray:
    """Which shard holds each row (the library version of notebook 07's exercise).

    Library version of notebook 07's exercise `shard_of`.

    row_ids: ints (list, NumPy array or tensor, any integer dtype); returns an int64
    NumPy array of the same shape. Ids outside [0, num_rows) raise ValueError.
    """
    ids = np.asarray(row_ids.numpy() if hasattr(row_ids, "numpy") else row_ids).astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= num_rows):
        raise ValueError(f"row ids must lie in [0, {num_rows}), got {ids.min()}..{ids.max()}")
    starts = np.cumsum([0] + shard_sizes(num_rows, num_shards))
    return np.searchsorted(starts, ids, side="right").astype(np.int64) - 1


def _nbytes(tensor):
    import tensorflow as tf

    return tf.cast(tf.size(tensor, out_type=tf.int64), tf.int64) * tensor.dtype.size


def sharded_lookup(shards, ids):
    """Rows `ids` (any shape, flattened) of a table cut into `shards` (a `ShardedVariable`'s
    `.variables`), each unique id read once, with one gather per shard.

    Library version of notebook 07's exercise `sharded_lookup`.
    """
    import tensorflow as tf

    ids = tf.cast(tf.reshape(ids, [-1]), tf.int64)
    unique, position = tf.unique(ids)
    starts = tf.constant(np.cumsum([0] + [int(s.shape[0]) for s in shards]), tf.int64)
    owner = tf.searchsorted(starts[1:], unique, side="right")
    parts = tf.dynamic_partition(unique - tf.gather(starts, owner),
                                 tf.cast(owner, tf.int32), len(shards))
    slots = tf.dynamic_partition(tf.range(tf.size(unique)), tf.cast(owner, tf.int32),
                                 len(shards))
    # each gather runs on its shard's parameter server
    pieces = [tf.gather(shard, local) for shard, local in zip(shards, parts, strict=True)]
    return tf.gather(tf.dynamic_stitch(slots, pieces), position)


def lookup(table, ids):
    """Rows `ids` of a `ShardedVariable`, read shard by shard, each unique id once
    (`sharded_lookup` of the unique ids).

    Returns (rows, traffic): rows (len(ids), dim) and {"ids": bytes of the ids sent to the
    parameter servers, "rows": bytes of the rows they sent back}, counted from those tensors.
    """
    import tensorflow as tf

    unique, position = tf.unique(tf.cast(tf.reshape(ids, [-1]), tf.int64))
    rows = sharded_lookup(table.variables, unique)
    return tf.gather(rows, position), {"ids": _nbytes(unique), "rows": _nbytes(rows)}


def make_train_step(strategy, table, optimizer, sparse: bool = True):
    """A `tf.function` for `ClusterCoordinator.schedule`: one step of a factorization model
    (a pair's score is the dot product of its two rows) on a worker.

    It takes (pairs (batch, 2) int64, scores (batch,) float32) and returns the loss and the
    bytes of the tensors that crossed to and from the parameter servers: "ids" and "rows"
    in the forward pass, "grad" (values and indices) sent back for the update. Sparse:
    `lookup` of the unique ids, a `tf.IndexedSlices` gradient per shard. Dense: every
    shard read whole, the gradient made dense (what an optimizer that densifies sends).
    """
    import tensorflow as tf

    shards = table.variables

    def replica_step(pairs, scores):
        with tf.GradientTape() as tape:
            if sparse:
                rows, traffic = lookup(table, pairs)
            else:
                whole = [tf.identity(shard) for shard in shards]  # each shard read whole
                traffic = {"ids": tf.constant(0, tf.int64),
                           "rows": tf.add_n([_nbytes(w) for w in whole])}
                rows = tf.gather(tf.concat(whole, axis=0), tf.reshape(pairs, [-1]))
            rows = tf.reshape(rows, [-1, 2, rows.shape[-1]])
            predicted = tf.reduce_sum(rows[:, 0] * rows[:, 1], axis=-1)
            loss = tf.reduce_mean(tf.square(predicted - scores))
        grads = tape.gradient(loss, shards)
        if sparse:
            sent = [_nbytes(g.values) + _nbytes(g.indices) for g in grads]
        else:
            grads = [tf.convert_to_tensor(g) for g in grads]
            sent = [_nbytes(g) for g in grads]
        optimizer.apply_gradients(zip(grads, shards, strict=True))
        return loss, {**traffic, "grad": tf.add_n(sent)}

    @tf.function
    def step(pairs, scores):
        return strategy.run(replica_step, args=(pairs, scores))

    return step


def predicted_traffic(ids, num_rows: int, dim: int, sparse: bool = True,
                      value_bytes: int = VALUE_BYTES, id_bytes: int = ID_BYTES) -> int:
    """Bytes a step of `make_train_step` moves between worker and parameter servers
    (the library version of notebook 07's `step_traffic_bytes`).

    Sparse: each unique id goes out once (id_bytes), its row comes back (dim values), and
    its gradient row goes out with its index: 2 * unique * (dim * value_bytes + id_bytes).
    Dense: the whole table comes in, a dense gradient of the same size goes out.
    """
    if not sparse:
        return 2 * num_rows * dim * value_bytes
    ids = np.asarray(ids.numpy() if hasattr(ids, "numpy") else ids)
    unique = len(np.unique(ids.reshape(-1)))
    return 2 * unique * (dim * value_bytes + id_bytes)


class _Shards:
    """The shards of a table as `make_train_step` reads them (`.variables`), made here."""

    def __init__(self, variables):
        self.variables = variables


_MEASURING: dict = {}  # (num_rows, dim, num_shards, sparse) -> a step of make_train_step


def measured_traffic(pairs, num_rows: int, dim: int, sparse: bool = True,
                     num_shards: int = 4) -> dict[str, int]:
    """The bytes each kind of tensor moved in one step of `make_train_step` of `pairs`
    (batch, 2), run in this process on a table of its own: `num_rows` x `dim` zeros cut
    into `num_shards` shards as `FixedShardsPartitioner` cuts them, with `LazyAdam`.
    {"ids": ..., "rows": ..., "grad": ...}, counted from the tensors the step passes.

    No cluster is started: the tensors a worker sends to and receives from the parameter
    servers are the same wherever the shards live (tests/library/test_cluster.py holds
    these counts equal to a step's on a real cluster). The tests of notebook 07 measure
    with it in the grader, on variables the notebook's code never reaches.
    """
    import tensorflow as tf

    from sparse_embeddings.optimizers import LazyAdam

    key = (int(num_rows), int(dim), int(num_shards), bool(sparse))
    if key not in _MEASURING:
        shards = _Shards([tf.Variable(tf.zeros([size, key[1]]))
                          for size in shard_sizes(key[0], key[2])])
        optimizer = LazyAdam(0.01)
        optimizer.build(shards.variables)
        step = make_train_step(tf.distribute.get_strategy(), shards, optimizer,
                               sparse=key[3])
        _MEASURING[key] = step.get_concrete_function(  # traced once, for any batch size
            tf.TensorSpec([None, 2], tf.int64), tf.TensorSpec([None], tf.float32))
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    _, traffic = _MEASURING[key](tf.constant(pairs), tf.ones([len(pairs)], tf.float32))
    return {name: int(value) for name, value in traffic.items()}


# ---------------------------------------------------------------------------------------
# Notebook 07's tests: a learner's lookup traced to a graph, run by the observer
# ---------------------------------------------------------------------------------------

@observation
def lookup_export(lookup_fn, shapes, dtype: str = "int64", rank: int = 1) -> dict:
    """`lookup_fn(shards, ids)` traced by `tf.function` over shards made here (float32
    zeros of `shapes`) for ids of `dtype` and `rank` (any sizes), as data: {"graph": the
    GraphDef's bytes (uint8 array), "ids": its ids' placeholder, "outputs": [the rows'
    tensor], "variables": [[placeholder, shard index], ...] for each shard it reads,
    "constants": [[placeholder, array], ...] for tensors it captured from outside}.
    While a notebook is graded, the kernel runs this; the values of the test's shards
    never reach it (`autograder.engine.observer.shards`)."""
    import tensorflow as tf

    shards = [tf.Variable(tf.zeros([int(n) for n in shape]), name=f"shard_{k}")
              for k, shape in enumerate(shapes)]
    traced = tf.function(lambda ids: lookup_fn(shards, ids)).get_concrete_function(
        tf.TensorSpec([None] * int(rank), tf.as_dtype(dtype)))
    which = {id(shard.handle): k for k, shard in enumerate(shards)}
    variables, constants = [], []
    for external, internal in traced.graph.captures:
        if external.dtype == tf.resource:
            if id(external) not in which:
                raise ValueError("the lookup reads a variable other than the shards it is "
                                 "given; read only the shards")
            variables.append([internal.name, which[id(external)]])
        else:
            constants.append([internal.name, np.asarray(external)])
    if len(traced.outputs) != 1:
        raise ValueError(f"the lookup returned {len(traced.outputs)} tensors; expected one, "
                         "the rows")
    graph = traced.graph.as_graph_def().SerializeToString()
    return {"graph": np.frombuffer(graph, np.uint8), "ids": traced.inputs[0].name,
            "outputs": [traced.outputs[0].name], "variables": variables,
            "constants": constants}


def _run_graph(request: dict) -> dict:
    """`graphs.run(request)`: in the observer's process while a notebook is graded (within
    the test's deadline), here otherwise (JupyterLab)."""
    from embeddings_course import observe

    router = observe.router()
    if router is None:
        from autograder.engine.observer import graphs

        return graphs.run(request)
    from autograder.engine.observer import client

    return client.shared().run(request, router.bridge.deadline)


def lookup_facts(lookup_fn, shards, ids) -> dict:
    """What notebook 07's tests assert of a learner's `lookup_fn(shards, ids)`: it is
    traced by `tf.function` (as a worker runs it) over shards of the shapes of `shards`
    (variables or arrays, in order), and the graph is run on the values of `shards` with
    `ids`, outside the learner's Python (`autograder.engine.observer.shards`).

    Returns {"rows": the rows it returned, "shard_rows": per shard, the rows its gradient
    names, in order ([-1]: a dense gradient; None: no gradient), "read": per shard, the
    rows read from it (a row read twice is there twice; a shard read whole gives all its
    rows), "whole_reads": how many times a shard is read whole, "op_types": the graph's
    op types}.
    """
    from autograder.engine.observer import shards as observed

    values = [np.asarray(s.numpy() if hasattr(s, "numpy") else s, np.float32) for s in shards]
    ids = np.asarray(ids.numpy() if hasattr(ids, "numpy") else ids)
    export = lookup_export(lookup_fn, [list(v.shape) for v in values], ids.dtype.name,
                           ids.ndim)
    try:
        request = observed.request(export, values, ids)
    except observed.BadExport as error:
        raise ValueError(f"the traced lookup cannot be run: {error}") from None
    return observed.facts(_run_graph(request), request, export, [len(v) for v in values])
