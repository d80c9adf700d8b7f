"""nbgrader validation: every blank release fails every test.

That Validate passes once the answers are in is the browser test's (tests/course/
test_browser.py: every notebook filled from its solution, Validate pressed in JupyterLab,
the same nbgrader Validator), and that the solution passes its hidden tests too is the
mutant harness's (tests/authoring/test_mutants.py: the perfect submission, full marks).
"""

import multiprocessing
import shutil
from concurrent.futures import ProcessPoolExecutor

import pytest

from autograder.authoring import validation
from conftest import ROOT, release_paths


def copy_assignment(path, tmp_path):
    """Validate a copy, so that what the notebook writes (logs) stays out of the checkout."""
    target = tmp_path / path.parent.name
    shutil.copytree(path.parent, target, ignore=shutil.ignore_patterns("logs", ".ipynb_*"))
    return target / path.name


@pytest.fixture(scope="module")
def validated(tmp_path_factory):
    """Every blank release through nbgrader's Validator, inverted (no test may pass), two
    notebooks at a time, each in a process and kernel of its own: path -> the results."""
    jobs = {path: copy_assignment(path, tmp_path_factory.mktemp(f"release-{path.parent.name}"))
            for path in release_paths()}
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        running = {path: pool.submit(validation.validate, copy, ROOT, True)
                   for path, copy in jobs.items()}
        return {path: future.result() for path, future in running.items()}


@pytest.mark.slow
@pytest.mark.parametrize("path", release_paths(), ids=lambda p: p.parent.name)
def test_release_fails_every_test(path, validated):
    results = validated[path]
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
