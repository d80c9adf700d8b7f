"""nbgrader validation: every solution passes, every blank release fails every test."""

import multiprocessing
import shutil
from concurrent.futures import ProcessPoolExecutor

import pytest

from autograder.authoring import validation
from conftest import ROOT, release_paths, solution_paths


def copy_assignment(path, tmp_path):
    """Validate a copy, so that what the notebook writes (logs) stays out of the checkout."""
    target = tmp_path / path.parent.name
    shutil.copytree(path.parent, target, ignore=shutil.ignore_patterns("logs", ".ipynb_*"))
    return target / path.name


@pytest.fixture(scope="module")
def validated(tmp_path_factory):
    """Every solution and every blank release (inverted: no test may pass) through
    nbgrader's Validator, two notebooks at a time, each in a process and kernel of its own:
    (kind, path) -> (the validated copy, the results)."""
    jobs = {}
    for kind, paths in (("solution", solution_paths()), ("release", release_paths())):
        for path in paths:
            folder = tmp_path_factory.mktemp(f"{kind}-{path.parent.name}")
            jobs[(kind, path)] = copy_assignment(path, folder)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        running = {key: pool.submit(validation.validate, copy, ROOT, key[0] == "release")
                   for key, copy in jobs.items()}
        return {key: (jobs[key], future.result()) for key, future in running.items()}


@pytest.mark.slow
@pytest.mark.parametrize("path", solution_paths(), ids=lambda p: p.parent.name)
def test_solution_passes_validation(path, validated):
    copy, results = validated[("solution", path)]
    assert results == {}, validation.summary(results)
    if path.parent.name == "01-autodiff":
        check_tensorboard_graph(copy.parent / "logs" / "01-autodiff")


def check_tensorboard_graph(logdir):
    """The notebook's trace is a TensorBoard log a person can open: it holds the graph of
    the training step, update ops included (what TensorBoard's Graphs tab reads)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorflow.core.protobuf import config_pb2

    assert list(logdir.glob("events.out.tfevents.*")), f"no event file in {logdir}"
    events = EventAccumulator(str(logdir))
    events.Reload()
    traces = [tag for tag in events.Tags()["tensors"]
              if events.SummaryMetadata(tag).plugin_data.plugin_name
              == "graph_run_metadata_graph"]
    assert traces == ["train_step"], f"graph traces in the log: {traces}"
    metadata = config_pb2.RunMetadata()
    metadata.ParseFromString(events.Tensors("train_step")[0].tensor_proto.string_val[0])
    ops = {node.op for graph in metadata.function_graphs
           for node in graph.pre_optimization_graph.node}
    assert "AssignSubVariableOp" in ops, f"the traced step has no update op: {sorted(ops)}"
    # the mean's and the subtraction's gradients (Tile, Neg) appear only in the backward pass
    assert {"Tile", "Neg"} <= ops, f"the backward pass is missing from the graph: {sorted(ops)}"


@pytest.mark.slow
@pytest.mark.parametrize("path", release_paths(), ids=lambda p: p.parent.name)
def test_release_fails_every_test(path, validated):
    _, results = validated[("release", path)]
    assert results == {}, "tests that pass on a blank stub:\n" + validation.summary(results)


def test_validate_reports_failures_instead_of_exit_code_zero(tmp_path):
    """A notebook whose test fails is reported as failed by the Validator API."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("assert 1 + 1 == 3, 'arithmetic'")
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "test_x", "locked": True,
                                 "points": 1, "schema_version": 3, "solution": False,
                                 "task": False}
    nb.cells = [cell]
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, str(path))
    results = validation.validate(path, ROOT)
    assert list(results) == ["failed"]
    assert "arithmetic" in results["failed"][0]["raw_error"]
