"""`benchmarks/bench_sparse_step.py` runs on a tiny table, prints its table and writes JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "bench_sparse_step.py"
TF_METHODS = {"tf_dense_sgd", "tf_sparse_sgd", "tf_sparse_sgd_rw", "keras_adam", "lazy_adam",
              "lazy_adam_update"}


@pytest.mark.slow
def test_sparse_step_benchmark_smoke(tmp_path):
    out = tmp_path / "sparse_step.json"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    # PyTorch is an optional peer: skipped here so that the test does not depend on it.
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--rows", "2000", "--rows", "500", "--dim", "8",
         "--batch", "64", "--repeats", "3", "--no-torch", "--threads", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=120, env=env, cwd=ROOT,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    printed = completed.stdout
    for text in ("2,000 rows x 8", "500 rows x 8", "ms/step", "Keras Adam/this",
                 "this/sparse SGD", "peak +MB", "sparse_embeddings LazyAdam", "PyTorch:"):
        assert text in printed, f"{text!r} missing from the printed table:\n{printed}"
    assert "2,000 rows" in completed.stderr  # progress goes to stderr

    report = json.loads(out.read_text())
    assert {"benchmark", "config", "environment", "torch", "results", "targets"} <= set(report)
    assert report["config"]["rows"] == [2000, 500]
    assert report["config"]["repeats"] == 3
    results = report["results"]
    assert {(r["rows"], r["method"]) for r in results} == {
        (rows, method) for rows in (2000, 500) for method in TF_METHODS
    }
    keys = {"rows", "dim", "batch", "method", "label", "framework", "median_ms", "min_ms",
            "p90_ms", "peak_growth_mb", "table_mb", "speedup_vs_keras_adam",
            "ratio_to_sparse_sgd", "unique_ids_per_batch"}
    for row in results:
        assert keys <= set(row), sorted(keys - set(row))
        assert row["median_ms"] > 0
        assert row["peak_growth_mb"] >= 0
        assert row["timed_steps"] == 3  # --repeats is the most steps timed
    sgd = next(r for r in results if r["method"] == "tf_sparse_sgd" and r["rows"] == 2000)
    assert sgd["ratio_to_sparse_sgd"] == 1.0
    assert [t["target"].split(" at ")[0] for t in report["targets"]] == [
        "LazyAdam >= 100x faster than Keras Adam", "LazyAdam within 2x of sparse SGD"]


def test_notebook_stats_benchmark_counts_each_notebook(tmp_path):
    """`benchmarks/bench_notebooks.py` (without --run): one row per notebook, counts that agree
    with the notebooks' own metadata, a printed table."""
    from autograder import course
    from autograder.cells import exercises, read_notebook

    out = tmp_path / "notebooks.json"
    completed = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_notebooks.py"),
                                "--out", str(out)], capture_output=True, text=True,
                               timeout=120, cwd=ROOT)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "| notebook | exercises | points |" in completed.stdout
    rows = {r["notebook"]: r for r in json.loads(out.read_text())["notebooks"]}
    assert list(rows) == course.assignments(ROOT)
    for name, row in rows.items():
        nb = read_notebook(course.solution_notebooks(ROOT, name)[0])
        assert row["exercises"] == len(exercises(nb))
        assert row["markdown_cells"] == sum(c.cell_type == "markdown" for c in nb.cells)
        assert row["links"] >= 1 and row["reading_minutes"] > 0
        assert "run_seconds" not in row
