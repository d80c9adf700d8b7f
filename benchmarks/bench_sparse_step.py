"""Time one update step of a large embedding table, sparse and dense, side by side.

    python benchmarks/bench_sparse_step.py                      # 100,000 and 1,000,000 rows x 64
    python benchmarks/bench_sparse_step.py --rows 2000 --repeats 3 --out /tmp/s.json

For each table size, up to 64 batches of `--batch` ids (uniform, plus repeats
of some of them, as real batches have) and gradients for them are fixed in
advance; each method then applies its update, the batches taken in turn, for
a warm-up of `WARMUP` steps and then up to `--repeats` timed steps, or fewer
when the method has used up `--budget` seconds (the dense ones, hundreds of
milliseconds a step, stop early; at least `MIN_TIMED` steps are timed). The
number of steps matters for the sparse methods on a large table: at 1,000,000
rows, the median of 20 steps of TF sparse SGD or LazyAdam was 15-35 % above the
median of 200 (later steps run faster; warmer caches of the table's page
tables are a likely cause, not established). It reports the median
milliseconds per step,
the ratio to Keras Adam (how many times faster) and to sparse SGD (how many
times slower), and how much memory the process's resident set grew above its
level before the steps, at its peak during them: a sparse step should allocate
batch-sized temporaries, a dense one table-sized ones.

Methods: dense SGD (the gradient as a dense tensor), sparse SGD (`scatter_sub`,
and the same step with duplicates summed and the rows read and written back with
`scatter_update`, as LazyAdam writes them),
`keras.optimizers.Adam` given an `IndexedSlices`, the library's `LazyAdam` and
its plain function `sparse.lazy_adam_update`; and, when PyTorch is importable
(an optional peer, not a dependency), PyTorch SGD on a sparse gradient,
`torch.optim.SparseAdam` and dense `torch.optim.Adam`. The update step alone is
timed: the gradient is given, not computed by a backward pass.

Prints a table and writes JSON (default `benchmarks/results/sparse_step.json`).
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import keras  # noqa: E402

from sparse_embeddings import sparse  # noqa: E402
from sparse_embeddings.optimizers import LazyAdam  # noqa: E402

DEFAULT_ROWS = [100_000, 1_000_000]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "sparse_step.json"
WARMUP = 10
MIN_TIMED = 5
MAX_BATCHES = 64
LEARNING_RATE = 1e-3
SEED = 0
# The fraction of each batch that repeats ids already in it.
DUPLICATE_FRACTION = 0.25

# name, label, framework
METHODS = [
    ("tf_dense_sgd", "TF dense SGD (dense gradient)", "tf"),
    ("tf_sparse_sgd", "TF sparse SGD (scatter_sub)", "tf"),
    ("tf_sparse_sgd_rw", "TF sparse SGD (read, scatter_update)", "tf"),
    ("keras_adam", "keras.optimizers.Adam on IndexedSlices", "tf"),
    ("lazy_adam", "sparse_embeddings LazyAdam", "tf"),
    ("lazy_adam_update", "sparse.lazy_adam_update", "tf"),
    ("torch_sparse_sgd", "PyTorch SGD, sparse gradient", "torch"),
    ("torch_sparse_adam", "PyTorch SparseAdam", "torch"),
    ("torch_dense_adam", "PyTorch Adam, dense gradient", "torch"),
]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _parse_rows(values) -> list[int]:
    if not values:
        return list(DEFAULT_ROWS)
    rows = []
    for value in values:
        for part in str(value).replace("_", "").split(","):
            if part.strip():
                rows.append(int(part))
    return rows


def make_batches(rows: int, batch: int, dim: int, count: int, seed: int = SEED):
    """`count` fixed (ids, gradient values) pairs, with about a quarter of each batch repeats."""
    rng = np.random.default_rng(seed)
    batches = []
    repeats = int(batch * DUPLICATE_FRACTION)
    for _ in range(count):
        fresh = rng.integers(0, rows, size=batch - repeats)
        again = rng.choice(fresh, size=repeats)
        ids = rng.permutation(np.concatenate([fresh, again])).astype(np.int64)
        values = rng.standard_normal((batch, dim)).astype(np.float32)
        batches.append((ids, values))
    return batches


class Memory:
    """Peak growth of the resident set during a block, above its level when it began.

    On Linux, writing 5 to /proc/self/clear_refs resets the peak (VmHWM) to the
    current size, so the peak after the block is the block's own. Elsewhere it
    falls back to `getrusage` (a lifetime peak: growth shows only above it).
    """

    def __init__(self):
        self.method = "VmHWM" if self._proc_works() else "ru_maxrss"

    @staticmethod
    def _status() -> dict[str, int]:
        fields = {}
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    key, value = line.split(":")
                    fields[key] = int(value.split()[0]) * 1024
        return fields

    def _proc_works(self) -> bool:
        try:
            with open("/proc/self/clear_refs", "w") as clear:
                clear.write("5")
            return "VmHWM" in self._status()
        except OSError:
            return False

    def start(self) -> None:
        if self.method == "VmHWM":
            with open("/proc/self/clear_refs", "w") as clear:
                clear.write("5")
            self._base = self._status()["VmRSS"]
        else:
            self._base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def peak_growth_bytes(self) -> int:
        if self.method == "VmHWM":
            return max(0, self._status()["VmHWM"] - self._base)
        return max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - self._base)


def _tf_step(update, batches):
    """A compiled step without arguments that applies `update` to the next batch.

    The batches live in the graph as constants, and a counter picks one: calling
    a tf.function with tensor arguments costs about 0.3-0.5 ms on 2 cores, more
    than a sparse update itself, and would hide the differences measured here.
    The step returns nothing: returning a variable would copy the whole table.
    """
    all_ids = tf.constant(np.stack([ids for ids, _ in batches]))
    all_values = tf.constant(np.stack([values for _, values in batches]))
    counter = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def step():
        i = counter.assign_add(1) - 1
        i = i % tf.cast(tf.shape(all_ids)[0], tf.int64)
        update(tf.gather(all_ids, i), tf.gather(all_values, i))

    step.prepare = step.get_concrete_function
    return step


def build_tf(method: str, rows: int, dim: int, batches):
    """(step(), state): a compiled update step for one TF method."""
    shape = tf.constant([rows, dim], tf.int64)

    def slices(ids, values):
        return tf.IndexedSlices(values, ids, shape)

    if method == "tf_dense_sgd":
        var = tf.Variable(tf.zeros((rows, dim)))

        def update(ids, values):
            var.assign_sub(LEARNING_RATE * tf.convert_to_tensor(slices(ids, values)))

        return _tf_step(update, batches), [var]
    if method == "tf_sparse_sgd":
        var = tf.Variable(tf.zeros((rows, dim)))

        def update(ids, values):
            sparse.sparse_sgd_update(var, slices(ids, values), LEARNING_RATE)

        return _tf_step(update, batches), [var]
    if method == "tf_sparse_sgd_rw":
        # The same step as LazyAdam writes its rows: duplicates summed, the rows read,
        # changed and written back with scatter_update instead of scatter_sub.
        var = tf.Variable(tf.zeros((rows, dim)))

        def update(ids, values):
            unique = sparse.sum_duplicates(slices(ids, values))
            rows_now = tf.gather(var, unique.indices)
            var.scatter_update(tf.IndexedSlices(rows_now - LEARNING_RATE * unique.values,
                                                unique.indices))

        return _tf_step(update, batches), [var]
    if method in ("keras_adam", "lazy_adam"):
        var = keras.Variable(np.zeros((rows, dim), np.float32))
        if method == "keras_adam":
            optimizer = keras.optimizers.Adam(LEARNING_RATE)
        else:
            optimizer = LazyAdam(LEARNING_RATE)
        optimizer.build([var])

        def update(ids, values):
            optimizer.apply([slices(ids, values)], [var])

        return _tf_step(update, batches), [var, optimizer]
    if method == "lazy_adam_update":
        var, m, v = (tf.Variable(tf.zeros((rows, dim))) for _ in range(3))
        step_number = tf.Variable(0.0)

        def update(ids, values):
            sparse.lazy_adam_update(var, m, v, slices(ids, values),
                                    step_number.assign_add(1.0), LEARNING_RATE)

        return _tf_step(update, batches), [var, m, v]
    raise ValueError(f"unknown TensorFlow method {method!r}")


def build_torch(torch, method: str, rows: int, dim: int, batches):
    """(step(), state) for one PyTorch method: set the gradient of the next batch, step()."""
    weight = torch.nn.Parameter(torch.zeros(rows, dim))
    weight.data.fill_(0.0)  # write every page now, not at the first steps that touch it
    if method == "torch_sparse_sgd":
        optimizer = torch.optim.SGD([weight], lr=LEARNING_RATE)
    elif method == "torch_sparse_adam":
        optimizer = torch.optim.SparseAdam([weight], lr=LEARNING_RATE)
    elif method == "torch_dense_adam":
        optimizer = torch.optim.Adam([weight], lr=LEARNING_RATE)
    else:
        raise ValueError(f"unknown PyTorch method {method!r}")
    dense = method == "torch_dense_adam"
    torch_batches = [(torch.from_numpy(ids), torch.from_numpy(values))
                     for ids, values in batches]
    counter = [0]

    def step():
        ids, values = torch_batches[counter[0] % len(torch_batches)]
        counter[0] += 1
        grad = torch.sparse_coo_tensor(ids.unsqueeze(0), values, (rows, dim),
                                       check_invariants=False)
        # A backward pass through nn.Embedding(sparse=False) gives this dense gradient.
        weight.grad = grad.to_dense() if dense else grad
        optimizer.step()
        weight.grad = None

    def prepare():
        """Create the optimizer's state (PyTorch does it at the first step), moving no row."""
        empty = torch.sparse_coo_tensor(torch.zeros((1, 0), dtype=torch.int64),
                                        torch.zeros((0, dim)), (rows, dim))
        weight.grad = empty.to_dense() if dense else empty
        optimizer.step()
        weight.grad = None
        for state in optimizer.state.values():
            for value in state.values():
                if torch.is_tensor(value) and value.dim() > 0:
                    value.fill_(0.0)  # touch its pages too

    step.prepare = prepare
    return step, [weight, optimizer]


def time_method(step, repeats: int, memory: Memory, budget_s: float = float("inf")) -> dict:
    """Median (and spread) of up to `repeats` timed steps after `WARMUP` untimed ones.

    The warm-up stops early after a third of `budget_s`, and the timed steps once
    `budget_s` has passed in all, but at least `MIN_TIMED` steps are timed.

    Memory is measured from before the first step runs (a tf.function is traced
    first, a PyTorch optimizer gets its state from a step on an empty gradient)
    over the warm-up and the timed steps: TensorFlow's CPU allocator keeps the
    buffers it frees, so a table-sized temporary shows at the first step only.
    """
    prepare = getattr(step, "prepare", None)
    if prepare is not None:
        prepare()
    gc.collect()
    memory.start()
    began = time.perf_counter()
    for _ in range(WARMUP):
        step()
        if time.perf_counter() - began > budget_s / 3:
            break
    times = []
    while len(times) < repeats:
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
        if len(times) >= MIN_TIMED and time.perf_counter() - began > budget_s:
            break
    peak = memory.peak_growth_bytes()
    times_ms = sorted(t * 1e3 for t in times)
    return {
        "median_ms": statistics.median(times_ms),
        "min_ms": times_ms[0],
        "p90_ms": times_ms[min(len(times_ms) - 1, int(0.9 * len(times_ms)))],
        "peak_growth_mb": peak / 1e6,
        "timed_steps": len(times),
    }


def run(rows_list, dim, batch, repeats, use_torch=True, methods=None, threads=None,
        budget_s=float("inf")):
    """Time every method at every size; returns the JSON-ready result."""
    torch = None
    torch_note = "not requested (--no-torch)"
    if use_torch:
        try:
            import torch  # noqa: PLC0415 (an optional peer)

            torch.manual_seed(SEED)
            if threads is not None:
                torch.set_num_threads(threads)
            torch_note = f"torch {torch.__version__}, {torch.get_num_threads()} threads"
        except ImportError:
            torch_note = "PyTorch is not installed: its rows are skipped"
    memory = Memory()
    results = []
    for rows in rows_list:
        batches = make_batches(rows, batch, dim, count=min(WARMUP + repeats, MAX_BATCHES))
        unique = statistics.mean(len(np.unique(ids)) for ids, _ in batches)
        for name, label, framework in METHODS:
            if methods and name not in methods:
                continue
            if framework == "torch" and torch is None:
                continue
            log(f"[{rows:,} rows x {dim}] {label}: {WARMUP} warm-up + up to {repeats} "
                f"steps ...")
            if framework == "tf":
                step, state = build_tf(name, rows, dim, batches)
            else:
                step, state = build_torch(torch, name, rows, dim, batches)
            measured = time_method(step, repeats, memory, budget_s)
            del step, state
            gc.collect()
            results.append({
                "rows": rows, "dim": dim, "batch": batch, "method": name, "label": label,
                "framework": framework, "repeats": repeats, "unique_ids_per_batch": unique,
                "table_mb": rows * dim * 4 / 1e6, **measured,
            })
            log(f"    {measured['median_ms']:.3f} ms ({measured['timed_steps']} steps)")
    _add_ratios(results)
    return {
        "benchmark": "sparse_step",
        "config": {"rows": rows_list, "dim": dim, "batch": batch, "repeats": repeats,
                   "warmup": WARMUP, "min_timed": MIN_TIMED,
                   "budget_s": None if budget_s == float("inf") else budget_s,
                   "learning_rate": LEARNING_RATE, "seed": SEED,
                   "threads": threads,
                   "duplicate_fraction": DUPLICATE_FRACTION},
        "environment": {
            "python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count(), "tensorflow": tf.__version__, "keras": keras.__version__,
            "numpy": np.__version__, "torch": torch.__version__ if torch is not None else None,
            "memory_measure": memory.method,
        },
        "torch": torch_note,
        "results": results,
        "targets": targets(results),
    }


def _add_ratios(results) -> None:
    for row in results:
        same = {r["method"]: r["median_ms"] for r in results if r["rows"] == row["rows"]}
        adam, sgd = same.get("keras_adam"), same.get("tf_sparse_sgd")
        row["speedup_vs_keras_adam"] = adam / row["median_ms"] if adam else None
        row["ratio_to_sparse_sgd"] = row["median_ms"] / sgd if sgd else None


def targets(results) -> list[dict]:
    """The course's targets for LazyAdam, at the largest table measured."""
    if not results:
        return []
    rows = max(r["rows"] for r in results)
    ms = {r["method"]: r["median_ms"] for r in results if r["rows"] == rows}
    if "lazy_adam" not in ms:
        return []
    checks = []
    if "keras_adam" in ms:
        checks.append({"target": f"LazyAdam >= 100x faster than Keras Adam at {rows:,} rows",
                       "value": ms["keras_adam"] / ms["lazy_adam"],
                       "met": ms["keras_adam"] / ms["lazy_adam"] >= 100})
    if "tf_sparse_sgd" in ms:
        checks.append({"target": f"LazyAdam within 2x of sparse SGD at {rows:,} rows",
                       "value": ms["lazy_adam"] / ms["tf_sparse_sgd"],
                       "met": ms["lazy_adam"] / ms["tf_sparse_sgd"] <= 2})
    if "torch_sparse_adam" in ms:
        checks.append({"target": f"LazyAdam faster than PyTorch SparseAdam at {rows:,} rows",
                       "value": ms["torch_sparse_adam"] / ms["lazy_adam"],
                       "met": ms["lazy_adam"] < ms["torch_sparse_adam"]})
    return checks


def format_table(report) -> str:
    """The results as a plain-text table, one block per table size."""
    lines = []
    header = (f"{'method':<40} {'ms/step':>9} {'Keras Adam/this':>16} {'this/sparse SGD':>16} "
              f"{'peak +MB':>9} {'of table':>9} {'steps':>6}")
    by_rows: dict[int, list] = {}
    for row in report["results"]:
        by_rows.setdefault(row["rows"], []).append(row)
    config = report["config"]
    for rows, group in by_rows.items():
        table_mb = group[0]["table_mb"]
        lines.append(
            f"{rows:,} rows x {config['dim']} float32 ({table_mb:.1f} MB), batch {config['batch']}"
            f" ({group[0]['unique_ids_per_batch']:.0f} unique ids), median of up to "
            f"{config['repeats']} steps after {config['warmup']} warm-up steps, "
            f"threads: {config['threads'] or 'default'}"
        )
        lines.append(header)
        lines.append("-" * len(header))
        for r in group:
            speedup = r["speedup_vs_keras_adam"]
            ratio = r["ratio_to_sparse_sgd"]
            lines.append(
                f"{r['label']:<40} {r['median_ms']:>9.3f} "
                f"{(f'{speedup:.1f}x' if speedup else '-'):>16} "
                f"{(f'{ratio:.2f}x' if ratio else '-'):>16} "
                f"{r['peak_growth_mb']:>9.1f} {r['peak_growth_mb'] / table_mb:>8.0%} "
                f"{r.get('timed_steps', config['repeats']):>6}"
            )
        lines.append("")
    lines.append(f"PyTorch: {report['torch']}")
    lines.append(f"Memory: peak resident-set growth over the warm-up and timed steps "
                 f"({report['environment']['memory_measure']}), vs one table's size.")
    for check in report["targets"]:
        mark = "met" if check["met"] else "MISSED"
        lines.append(f"Target: {check['target']}: {check['value']:.2f} ({mark})")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="append",
                        help="table rows; repeat it or give a comma list "
                             f"(default: {','.join(map(str, DEFAULT_ROWS))})")
    parser.add_argument("--dim", type=int, default=64, help="embedding width (default 64)")
    parser.add_argument("--batch", type=int, default=1024, help="ids per batch (default 1024)")
    parser.add_argument("--repeats", type=int, default=200,
                        help="timed steps per method, at most (default 200)")
    parser.add_argument("--budget", type=float, default=3.0,
                        help="seconds per method, warm-up included, after which it stops "
                             f"timing (at least {MIN_TIMED} steps are timed; default 3)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"JSON file to write (default {DEFAULT_OUT.relative_to(ROOT)})")
    parser.add_argument("--threads", type=int,
                        help="CPU threads for both frameworks (TensorFlow intra- and inter-op, "
                             "torch.set_num_threads); default: each framework's own default")
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch rows")
    parser.add_argument("--methods", help="comma list of methods to run (default: all)")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.batch < 1 or args.dim < 1:
        parser.error("--repeats, --batch and --dim must be at least 1")
    if not args.budget > 0:
        parser.error("--budget must be a positive number of seconds")
    rows_list = _parse_rows(args.rows)
    if any(r < 1 for r in rows_list):
        parser.error("--rows must be at least 1")
    methods = set(args.methods.split(",")) if args.methods else None
    known = {name for name, _, _ in METHODS}
    if methods and not methods <= known:
        parser.error(f"unknown methods {sorted(methods - known)}; known: {sorted(known)}")

    if args.threads is not None:
        if args.threads < 1:
            parser.error("--threads must be at least 1")
        # Before TensorFlow runs its first op, or it ignores the setting.
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)

    report = run(rows_list, args.dim, args.batch, args.repeats, not args.no_torch, methods,
                 threads=args.threads, budget_s=args.budget)
    print(format_table(report))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"Wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
