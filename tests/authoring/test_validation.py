"""nbgrader validation: every blank release fails every test.

That Validate passes once the answers are in is the browser test's (tests/course/
test_browser.py: every notebook filled from its solution, Validate pressed in JupyterLab,
the same nbgrader Validator), and that the solution passes its hidden tests too is the
mutant harness's (tests/authoring/test_mutants.py: the perfect submission, full marks).
"""

import multiprocessing
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from autograder.authoring import validation
from autograder.cells import read_notebook
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


# Planted mistakes whose messages are long: a check's, with a hint (sgd_step's sign, a list
# of ints), one of a plain `assert` in a test cell, and TensorFlow's own error raised in the
# learner's code (a reshape to the wrong size).
PLANTED = {
    "sgd_step": "wrong_sign.py",
    "gradients_or_zeros": "wrong_plain_gradient.py",
    "rows_changed": "wrong_returns_array.py",
}
RESHAPE_ERROR = '''def numerical_gradient(f, x, eps=1e-3):
    return tf.reshape(x, [x.shape[0] + 1, 7])  # TensorFlow's own, long message
'''
NBGRADER_CUT = 87  # nbgrader's Validator cuts a line past width - 3 = 87 and adds "..."


def exception_lines(text: str) -> list[list[str]]:
    """The message lines of each exception in Validate's text: from the line that names
    the exception to the next blank line."""
    blocks, current = [], None
    for line in text.splitlines():
        if re.match(r"^\s*(\w+(Error|Failed|Exception)): ", line):
            current = [line]
            blocks.append(current)
        elif current is not None and line.strip():
            current.append(line)
        else:
            current = None
    return blocks


@pytest.mark.slow
def test_validate_in_a_terminal_shows_every_message_whole(tmp_path):
    """Issue 39: `nbgrader validate` and `course validate` print each failing test's message
    whole, with what came back and what was expected on its first line."""
    import nbformat

    from autograder.authoring import mutants

    release = next(p for p in release_paths() if p.parent.name == "01-autodiff")
    solution = ROOT / "solutions" / "01-autodiff" / release.name
    folder = tmp_path / "01-autodiff"
    folder.mkdir()
    replacements = {name: (ROOT / "tests" / "mutants" / "01-autodiff" / name / file).read_text()
                    for name, file in PLANTED.items()}
    replacements["numerical_gradient"] = RESHAPE_ERROR
    nb = mutants.build_submission(read_notebook(release), read_notebook(solution),
                                  replacements)
    path = folder / release.name
    nbformat.write(nb, str(path))
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    terminal = subprocess.run([sys.executable, "-m", "nbgrader", "validate", str(path)],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    printed = terminal.stdout
    course = subprocess.run([sys.executable, "-m", "autograder", "validate", str(path)],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert course.returncode == 1, course.stdout + course.stderr
    for name, text in [("nbgrader validate", printed), ("course validate", course.stdout)]:
        blocks = exception_lines(text)
        assert len(blocks) >= 5, f"{name} printed {len(blocks)} messages:\n{text[-6000:]}"
        for block in blocks:
            for line in block:
                assert len(line) <= NBGRADER_CUT, f"{name} cut a message line: {line!r}"
            if block[0].lstrip().startswith("CheckFailed: "):
                assert " got " in block[0] and "expected" in block[0], (name, block)
        joined = " ".join(" ".join(line.split()) for block in blocks for line in block)
        for whole in [
            "w after one step: got 1.9 at index (1,), expected 2.1.",
            "rows_changed(...): got a numpy.ndarray, expected a list of ints. Hint: build a "
            "list: [int(i) for i in ...], or .tolist() of an array.",
            "Hint: ask the tape for zeros: unconnected_gradients=tf.UnconnectedGradients.ZERO",
            "Input to reshape is a tensor with 3 values, but the requested shape has 28",
        ]:
            assert whole in joined, f"{name} lost part of {whole!r}:\n{text[-6000:]}"


def test_course_validate_prints_each_failure_s_message_whole():
    traceback = ("\x1b[31m----------\x1b[39m\n\x1b[31mCheckFailed\x1b[39m   Traceback\n"
                 "Cell In[9], line 5\n----> 5 checks.check_close(w, [0.95, 2.1])\n\n"
                 "\x1b[31mCheckFailed\x1b[39m: w: got 1.9 at index (1,), expected 2.1.\n"
                 "2 of 2 entries differ.\nHint: the update is v - lr * grad.")
    results = {"failed": [{"source": '"""sgd_step: moves each variable"""\nw = 1',
                           "raw_error": traceback},
                          {"source": "", "raw_error": "NotImplementedError"}]}
    assert validation.summary(results).splitlines() == [
        'failed: """sgd_step: moves each variable"""',
        "    CheckFailed: w: got 1.9 at index (1,), expected 2.1.",
        "    2 of 2 entries differ.", "    Hint: the update is v - lr * grad.", "",
        "failed: (empty cell)", "    NotImplementedError"]
