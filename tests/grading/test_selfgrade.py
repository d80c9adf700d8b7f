"""`course-grade self`: a learner grades their own notebook, hidden tests included."""

import hashlib
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest

from autograder.authoring import mutants
from autograder.cells import read_notebook
from autograder.errors import CourseError
from autograder.grading import selfgrade
from conftest import MUTANTS, RELEASE, ROOT, SOLUTIONS

NAME = "autodiff.ipynb"
RELEASED = RELEASE / "01-autodiff" / NAME
SOLUTION = SOLUTIONS / "01-autodiff" / NAME


def learner_copy(tmp_path, label, replacements):
    """A learner's notebook somewhere of their own: the release with some answers filled."""
    nb = mutants.build_submission(read_notebook(RELEASED), read_notebook(SOLUTION), replacements)
    path = tmp_path / label / NAME
    path.parent.mkdir()
    nbformat.write(nb, str(path))
    return path


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("learners")
    cache = tmp_path_factory.mktemp("cache")
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache)  # the subprocess inherits it
    wrong = (MUTANTS / "01-autodiff" / "numerical_gradient" / "wrong_forward_difference.py")
    blank = tmp / "blank" / NAME
    blank.parent.mkdir()
    shutil.copy(RELEASED, blank)
    stubs = {cell.metadata.nbgrader["grade_id"]: cell.source
             for cell in read_notebook(RELEASED).cells
             if cell.metadata.get("nbgrader", {}).get("solution")}
    # sgd_step from the solution, numerical_gradient wrong, rows_changed wrong where only a
    # hidden test looks (tables of rank 3), the other two left as released
    hidden_only = MUTANTS / "01-autodiff" / "rows_changed" / "wrong_two_axes.py"
    partial_replacements = {"numerical_gradient": wrong.read_text(),
                            "gradients_or_zeros": stubs["gradients_or_zeros"],
                            "rows_changed": hidden_only.read_text(),
                            "fit_linear_regression": stubs["fit_linear_regression"]}
    paths = {"blank": blank,
             "partial": learner_copy(tmp, "partial", partial_replacements),
             "complete": learner_copy(tmp, "complete", {})}
    before = {label: digest(path) for label, path in paths.items()}

    def run(label):
        if label == "partial":  # the command itself, as a learner types it
            done = subprocess.run([sys.executable, "-c", "from autograder.cli import grade_main;"
                                   " raise SystemExit(grade_main())", "self",
                                   str(paths[label])], cwd=paths[label].parent,
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr
            return done.stdout
        return selfgrade.report(paths[label], ROOT)

    with ThreadPoolExecutor(2) as pool:
        texts = dict(zip(paths, pool.map(run, paths), strict=True))
    unchanged = {label: digest(path) == before[label] for label, path in paths.items()}
    cached = sorted(p.name for p in selfgrade.cache_dir().iterdir())
    if saved is None:
        del os.environ["XDG_CACHE_HOME"]
    else:
        os.environ["XDG_CACHE_HOME"] = saved
    return texts, unchanged, cached


@pytest.mark.slow
def test_blank_notebook_scores_zero_and_says_not_answered(reports):
    text = reports[0]["blank"]
    assert "total (autograded)" in text and "0 / 13" in text
    # each exercise's row; cells outside the tests that call a blank one say so too
    assert len(re.findall(r"0 / \d+ +not answered yet", text)) == 5


@pytest.mark.slow
def test_partial_notebook_shows_points_and_the_failing_checks(reports):
    text = reports[0]["partial"]
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith("  ")
             and line.split()}
    assert lines["sgd_step"].split()[-1] == "passed" and "3 / 3" in lines["sgd_step"]
    assert lines["numerical_gradient"].endswith("failed")
    assert "0 / 3" in lines["numerical_gradient"]
    assert "test_numerical_gradient: CheckFailed: numerical_gradient(sum(x**2)): got " in text
    assert lines["gradients_or_zeros"].endswith("not answered yet")
    assert "4 / 13" in text
    # the hidden test's hint, as its author wrote it, whole; the empty table's point kept
    assert lines["rows_changed"].endswith("failed") and "1 / 2" in lines["rows_changed"]
    assert ("Hint: a row is every entry along the other axes: 2 x 3 = 6 entries in a (40, 2, 3)"
            " table, any of which may have changed.") in text
    assert text.startswith("Grading ")


@pytest.mark.slow
def test_the_generated_assignment_is_cached_between_runs(reports):
    cached = [name for name in reports[2] if not name.startswith(".")]
    assert len(cached) == 1 and cached[0].startswith("01-autodiff-")


@pytest.mark.slow
def test_complete_notebook_scores_full_marks(reports):
    text = reports[0]["complete"]
    assert "13 / 13" in text and text.count("passed") == 5


@pytest.mark.slow
def test_reports_never_show_hidden_tests_and_notebooks_are_untouched(reports):
    texts, unchanged, _ = reports
    hidden_only = ["BEGIN HIDDEN", "default_rng(11)", "np.linalg.lstsq", "tape.watch(x)"]
    for label, text in texts.items():
        for fragment in hidden_only:
            assert fragment not in text, f"{label} report shows hidden test text {fragment!r}"
    assert all(unchanged.values()), unchanged


def test_refuses_the_solution_notebook():
    with pytest.raises(CourseError, match="instructor's version"):
        selfgrade.identify(ROOT, SOLUTION)


def test_refuses_a_notebook_of_another_course(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("def f():\n    raise NotImplementedError()")
    cell.metadata["nbgrader"] = {"grade": False, "grade_id": "q1", "locked": False,
                                 "schema_version": 3, "solution": True, "task": False}
    nb.cells = [cell]
    path = tmp_path / "ps1.ipynb"
    nbformat.write(nb, str(path))
    with pytest.raises(CourseError, match="not a notebook of this course"):
        selfgrade.identify(ROOT, path)
    plain = tmp_path / "plain.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), str(plain))
    with pytest.raises(CourseError, match="no graded cells"):
        selfgrade.identify(ROOT, plain)


def test_command_refuses_a_file_that_is_not_a_notebook(tmp_path):
    path = tmp_path / "answers.ipynb"
    path.write_text("def sgd_step(): pass\n")
    done = subprocess.run([sys.executable, "-c", "from autograder.cli import grade_main;"
                           " raise SystemExit(grade_main())", "self", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "is not a valid notebook" in done.stderr and "Traceback" not in done.stderr


def test_identify_finds_the_assignment_of_a_release_notebook():
    assert selfgrade.identify(ROOT, RELEASED) == ("01-autodiff", NAME)


@pytest.mark.parametrize("path", sorted(SOLUTIONS.glob("*/*.ipynb")), ids=lambda p: p.parent.name)
def test_every_notebook_ends_with_the_grade_button(path):
    last = read_notebook(path).cells[-1]
    assert last.cell_type == "code" and f'grade_button("{path.name}")' in last.source


@pytest.mark.slow
def test_without_a_sandbox_self_grading_warns_and_grades(tmp_path, monkeypatch):
    from autograder.engine.trusted import sandbox

    monkeypatch.setattr(sandbox, "available", lambda: (False, "bubblewrap is not installed"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = learner_copy(tmp_path, "complete", {})
    said = []
    assignment, reports_, _, _ = selfgrade.grade(path, ROOT, warn=said.append)
    assert len(said) == 1 and "without a sandbox" in said[0] and "bubblewrap" in said[0]
    assert all(r.score == r.max_score for r in reports_ if not r.manual)
