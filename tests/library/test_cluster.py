"""The localhost cluster of notebook 06: starts, stops without leftovers, fails clearly,
and its partitioner arithmetic and byte counts agree with a real ShardedVariable."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest

from conftest import ROOT
from embeddings_course import cluster


def test_shard_of_blocks_with_the_remainder_on_the_first_shards():
    assert cluster.shard_of(range(10), 10, 3).tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert cluster.shard_sizes(10, 4) == [3, 3, 2, 2]
    assert cluster.shard_of([0, 1], 2, 5).tolist() == [0, 1]  # no more shards than rows
    assert cluster.shard_of(np.array([[5, 0]]), 6, 2).shape == (1, 2)


def test_predicted_traffic_counts_each_distinct_id_once():
    assert cluster.predicted_traffic([[0, 3], [3, 9]], 10, 4) == 2 * 3 * (4 * 4 + 8)
    assert cluster.predicted_traffic([1], 10, 4, sparse=False) == 2 * 10 * 4 * 4


def test_a_port_in_use_is_named():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        c = cluster.LocalCluster(num_ps=1, num_workers=1, ports={"ps": [taken]})
        with pytest.raises(RuntimeError, match=f"port {taken} .*in use"):
            c.start()
        assert c.processes == {}


def _gone(pids, within=10.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [p for p in pids if psutil.pid_exists(p)
                 and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        if not alive:
            return True
        time.sleep(0.1)
    return False


def _descendants():
    return [p.pid for p in psutil.Process().children(recursive=True)]


@pytest.mark.slow  # TensorFlow in a process of its own: 9 s on a slow machine
def test_start_stop_and_a_dead_server_is_named():
    before = set(_descendants())
    c = cluster.LocalCluster(num_ps=2, num_workers=1)
    with c:
        pids = c.pids
        assert sorted(pids) == ["ps:0", "ps:1", "worker:0"]
        assert all(psutil.pid_exists(p) for p in pids.values())
        for _job, _i, port in c.tasks():
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        os.kill(pids["ps:1"], signal.SIGKILL)
        assert _gone([pids["ps:1"]])
        with pytest.raises(RuntimeError, match="ps:1"):
            deadline = time.monotonic() + 10  # the forkserver reports the exit a bit later
            while time.monotonic() < deadline:
                c.check()
                time.sleep(0.1)
        started = set(_descendants()) - before
    assert c.processes == {}
    assert _gone(list(pids.values()) + list(started)), "a server process outlived stop()"


@pytest.mark.slow  # TensorFlow in a process of its own: 9 s on a slow machine
def test_the_end_of_the_process_stops_the_cluster():
    code = ("from embeddings_course import cluster\n"
            "if __name__ == '__main__':\n"
            "    c = cluster.LocalCluster(num_ps=1, num_workers=1).start()\n"
            "    print(list(c.pids.values()), flush=True)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    pids = json.loads(out.stdout.strip().splitlines()[-1])
    assert _gone(pids), pids


STRATEGY_SCRIPT = r"""
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf
from embeddings_course import cluster
from sparse_embeddings.optimizers import LazyAdam

if __name__ == "__main__":
    out = {"sizes": {}}
    with cluster.LocalCluster(num_ps=3, num_workers=1) as c:
        partitioner = tf.distribute.experimental.partitioners.FixedShardsPartitioner(3)
        strategy = tf.distribute.ParameterServerStrategy(c.resolver(),
                                                         variable_partitioner=partitioner)
        coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        with strategy.scope():
            for rows in (2, 3, 10, 11, 100):
                var = tf.Variable(tf.zeros((rows, 2)))
                out["sizes"][rows] = [int(v.shape[0]) for v in var.variables]
            table = tf.Variable(tf.random.normal((50, 4), seed=1))
            optimizer = LazyAdam(0.05)
            optimizer.build(table.variables)
        out["devices"] = [v.device for v in table.variables]
        pairs = tf.constant([[0, 3], [3, 49], [20, 0], [33, 34]], tf.int64)
        before = tf.concat(table.variables, 0).numpy()
        for sparse in (True, False):
            step = cluster.make_train_step(strategy, table, optimizer, sparse=sparse)
            result = coordinator.schedule(step, args=(pairs, tf.ones(4)))
            coordinator.join()
            loss, traffic = result.fetch()
            out["sparse" if sparse else "dense"] = {k: int(v) for k, v in traffic.items()}
            if sparse:
                after = tf.concat(table.variables, 0).numpy()
                out["changed"] = np.flatnonzero((before != after).any(axis=1)).tolist()
        out["pids"] = list(c.pids.values())
    print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def strategy_run(tmp_path_factory):
    script = tmp_path_factory.mktemp("cluster") / "run.py"
    script.write_text(STRATEGY_SCRIPT)
    done = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_shard_of_matches_the_partitioner(strategy_run):
    for rows, sizes in strategy_run["sizes"].items():
        assert sizes == cluster.shard_sizes(int(rows), 3), rows
        starts = np.cumsum([0] + sizes)
        owner = np.repeat(np.arange(len(sizes)), sizes)
        assert cluster.shard_of(np.arange(int(rows)), int(rows), 3).tolist() == owner.tolist()
        assert starts[-1] == int(rows)
    # shards go to the parameter servers in turn (the turn carries over between variables)
    assert all("/job:ps/" in d for d in strategy_run["devices"])
    tasks = [int(d.split("/task:")[1][0]) for d in strategy_run["devices"]]
    assert sorted(tasks) == [0, 1, 2] and tasks[1] == (tasks[0] + 1) % 3, tasks


@pytest.mark.slow
def test_measured_bytes_equal_the_arithmetic(strategy_run):
    dim, unique = 4, 6  # ids 0, 3, 3, 49, 20, 0, 33, 34: 6 distinct
    sparse, dense = strategy_run["sparse"], strategy_run["dense"]
    assert sparse == {"ids": unique * 8, "rows": unique * dim * 4,
                      "grad": unique * (dim * 4 + 8)}
    assert sum(sparse.values()) == cluster.predicted_traffic(
        [[0, 3], [3, 49], [20, 0], [33, 34]], 50, dim)
    assert dense == {"ids": 0, "rows": 50 * dim * 4, "grad": 50 * dim * 4}
    assert strategy_run["changed"] == [0, 3, 20, 33, 34, 49]
    # what the grader measures for notebook 07's tests, in its own process with no cluster
    pairs = [[0, 3], [3, 49], [20, 0], [33, 34]]
    assert cluster.measured_traffic(pairs, 50, dim, num_shards=3) == sparse
    assert cluster.measured_traffic(pairs, 50, dim, sparse=False, num_shards=3) == dense
    assert _gone(strategy_run["pids"])


QUIET_SCRIPT = r"""
import sys
sys.ps1 = ">>> "  # as in Jupyter: TensorFlow then logs INFO lines to stdout
import embeddings_course.runtime  # noqa: F401
import logging
logging.basicConfig()  # a handler on the root logger too, as a Jupyter kernel has
import tensorflow as tf
from embeddings_course import cluster

if __name__ == "__main__":
    with cluster.LocalCluster(num_ps=1, num_workers=1) as c:
        strategy = tf.distribute.ParameterServerStrategy(
            c.resolver(),
            variable_partitioner=tf.distribute.experimental.partitioners.FixedShardsPartitioner(2))
        coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        with strategy.scope():
            table = tf.Variable(tf.zeros((4, 2)))

        @tf.function
        def read(ids):
            return strategy.run(lambda i: tf.gather(table.variables[0], i), args=(ids,))

        rows = coordinator.schedule(read, args=(tf.constant([0, 1]),)).fetch()
        print("a worker read", rows.shape)
"""


@pytest.mark.slow
def test_a_cluster_in_a_notebook_prints_only_the_course_output(tmp_path):
    """No server start-up log (the forkserver imports TensorFlow), no INFO lines of the
    strategy (twice, in Jupyter), around a step a worker ran."""
    script = tmp_path / "quiet.py"
    script.write_text(QUIET_SCRIPT)
    done = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["a worker read (2, 2)"], done.stdout[-3000:]
    assert done.stderr == "", done.stderr[-3000:]
