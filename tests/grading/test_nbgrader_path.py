"""Grading started by nbgrader itself, as the README's standard workflow does: `nbgrader
autograde` in a course folder runs the course's engine (the sandbox, the tests in the
grader), and `nbgrader generate_feedback` makes pages that show no part of a hidden test."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import course
from autograder.authoring import demo
from autograder.cells import HIDDEN_MARKERS, grade_id, read_notebook
from autograder.engine.trusted import sandbox
from autograder.grading.feedback import CUT, NAME, WithoutHiddenTests, without_hidden
from conftest import ROOT

A = "01-autodiff"
NB = "autodiff.ipynb"
STUDENT = "probe"
FOUND = "PROBE FOUND "

# A cell of the submission, run in its kernel: what it can reach of the machine, and the
# course's checks made to pass everything (which fools a test that runs in the kernel).
PROBE = """
import json, os
from embeddings_course import checks
for _name in dir(checks):
    if _name.startswith("check_"):
        setattr(checks, _name, lambda *args, **kwargs: None)
found = {"uid": os.getuid()}
def attempt(key, action):
    try:
        found[key] = action()
    except OSError as error:
        found[key] = type(error).__name__
def write(folder):
    with open(os.path.join(folder, "probe-was-here.txt"), "w") as handle:
        handle.write("x")
    return "wrote"
attempt("write course", lambda: write(COURSE))
attempt("write checkout", lambda: write(CHECKOUT))
attempt("write root", lambda: write("/root"))
attempt("list root", lambda: sorted(os.listdir("/root")))
attempt("read solution", lambda: open(SOLUTION).read()[:20])
attempt("read course solution", lambda: open(COURSE_SOLUTION).read()[:20])
attempt("read gradebook", lambda: len(open(os.path.join(COURSE, "gradebook.db"), "rb").read()))
print("PROBE FOUND " + json.dumps(found))
"""


def nbgrader(args, folder):
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=folder,
                          capture_output=True, text=True, env=course.tool_env(), timeout=1200)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return done


def hidden_of(nb) -> tuple[list[str], list[str]]:
    """The lines of the hidden blocks of `nb` found nowhere else in it (long enough to
    mean something) and the names they bind that the rest of the notebook never uses."""
    begin, end = HIDDEN_MARKERS
    blocks = [m.group(1) for c in nb.cells for m in re.finditer(
        re.escape(begin) + r"(.*?)" + re.escape(end), c.source, flags=re.S)]
    rest = "\n".join(without_hidden(c.source) for c in nb.cells)
    shown = {line.strip() for line in rest.splitlines()}
    lines = {line.strip() for b in blocks for line in b.splitlines()
             if len(line.strip()) > 12} - shown
    words = set(re.findall(r"\w+", rest))
    names = {n for b in blocks for n in re.findall(r"^\s*([a-z]\w*_\w+)\s*=", b, flags=re.M)
             if n not in words}
    return sorted(lines), sorted(names)


@pytest.fixture(scope="module")
def course_folder(tmp_path_factory):
    """A course folder made as an instructor would (the course's config, 01's source,
    `nbgrader generate_assignment`), one submission autograded and given feedback there
    with nbgrader's own commands."""
    ok, why = sandbox.available()
    if not ok:
        pytest.fail(f"the sandbox is not available: {why}")
    folder = tmp_path_factory.mktemp("course")
    course.make_course_dir(ROOT, folder, [A])
    nbgrader(["generate_assignment", A, "--force"], folder)
    c01 = demo.Course(ROOT, A)
    mutants = ROOT / "tests" / "mutants" / A
    answers = {**c01.answers,
               # its visible test passes, its hidden one fails (a vector has no axis 1)
               "rows_changed": (mutants / "rows_changed" / "wrong_two_axes.py").read_text(),
               # wrong: a test run in the kernel would pass it, with the checks above
               "sgd_step": (mutants / "sgd_step" / "wrong_sign.py").read_text()}
    nb = c01.filled(answers)
    places = {"COURSE": str(folder), "CHECKOUT": str(ROOT),
              "SOLUTION": str(ROOT / "solutions" / A / NB),
              "COURSE_SOLUTION": str(folder / "solutions" / A / NB)}
    probe = "".join(f"{key} = {value!r}\n" for key, value in places.items()) + PROBE
    first = next(i for i, cell in enumerate(nb.cells) if grade_id(cell) == "sgd_step")
    nb.cells.insert(first + 1, nbformat.v4.new_code_cell(probe))
    target = folder / "submitted" / STUDENT / A / NB
    target.parent.mkdir(parents=True)
    nbformat.write(nb, str(target))
    graded = nbgrader(["autograde", A], folder)
    nbgrader(["generate_feedback", A], folder)
    return folder, graded


@pytest.mark.slow
def test_nbgrader_autograde_in_a_course_folder_runs_the_engine(course_folder):
    from nbgrader.api import Gradebook

    folder, graded = course_folder
    autograded = read_notebook(folder / "autograded" / STUDENT / A / NB)
    printed = "".join(o.get("text", "") for c in autograded.cells for o in c.get("outputs", []))
    said = [line for line in printed.splitlines() if line.startswith(FOUND)]
    assert said, printed[-3000:] + graded.stderr[-3000:]
    found = json.loads(said[0][len(FOUND):])
    # the probe ran as the sandbox's user, not as the instructor (root here)
    assert found["uid"] != os.getuid() or os.getuid() != 0, found
    for key in ("write course", "write root"):
        assert found[key] != "wrote", found
    assert not list(folder.rglob("probe-was-here.txt"))
    assert not (ROOT / "probe-was-here.txt").exists()
    if found["write checkout"] == "wrote":  # a checkout under /tmp (or a home): the kernel's
        # /tmp is a tmpfs of its own, the checkout's folders bound read-only beneath it, so
        # the file went to that tmpfs, gone with the kernel (the checkout has none: above)
        assert ROOT.is_relative_to("/tmp") or ROOT.is_relative_to(Path.home()), found
    # /root, where it is seen at all, holds only what the sandbox binds of the course's
    # Python (an interpreter installed under /root): nothing else of root's home
    python = {Path(target).relative_to("/root").parts[0] for _, target in sandbox.python_binds()
              if Path(target).is_relative_to("/root") and target != "/root"}
    if isinstance(found["list root"], list):
        assert set(found["list root"]) <= python, found
    for key in ("read solution", "read course solution", "read gradebook"):
        assert found[key] in ("FileNotFoundError", "PermissionError"), found
    # the engine's findings, kept in the autograded notebook
    assert "course_grade" in autograded.metadata
    assert autograded.metadata["course_grade"]["hidden_failures"] == ["test_rows_changed"]
    # the scores are the engine's: the tests ran in the grader, with its own checks
    with Gradebook("sqlite:///" + str(folder / "gradebook.db")) as gradebook:
        notebook = gradebook.find_submission_notebook(NB[:-6], A, STUDENT)
        scores = {g.name: (g.auto_score, g.max_score) for g in notebook.grades}
    assert scores["test_sgd_step"][0] == 0, scores  # a kernel-side test would pass it
    assert scores["test_rows_changed"][0] == 0, scores  # its hidden test failed
    for name in ("test_numerical_gradient", "test_gradients_or_zeros",
                 "test_fit_linear_regression"):
        assert scores[name][0] == scores[name][1] > 0, (name, scores)


@pytest.mark.slow
def test_nbgrader_feedback_shows_no_part_of_a_hidden_test(course_folder):
    folder, _ = course_folder
    page = (folder / "feedback" / STUDENT / A / NB.replace(".ipynb", ".html")).read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))  # as a reader sees it
    # the page is the one nbgrader makes, with the failing hidden test named as failing
    assert "A hidden test of this cell failed" in text
    lines, names = hidden_of(read_notebook(ROOT / "solutions" / A / NB))
    assert lines and names
    for marker in (*HIDDEN_MARKERS, "HIDDEN TESTS"):
        assert marker not in text and marker not in page
    leaked = [line for line in lines if line in text or line in page]
    assert not leaked, leaked[:3]
    named = [name for name in names if re.search(rf"\b{name}\b", text)]
    assert not named, named


def test_feedback_filter_cuts_hidden_lines_from_plain_nbgrader_tracebacks():
    """A notebook autograded without the engine (nbgrader's own Execute) holds IPython's
    tracebacks, whose context lines quote the test; and output that names a hidden name."""
    nb = read_notebook(ROOT / "solutions" / A / NB)
    lines, names = hidden_of(nb)
    test = next(c for c in nb.cells if HIDDEN_MARKERS[0] in c.source)
    hidden = test.source.split(HIDDEN_MARKERS[0])[1].splitlines()[1]
    student = next(c for c in nb.cells if grade_id(c) == "sgd_step")
    test.outputs = [
        nbformat.v4.new_output("error", ename="AssertionError", evalue="w after one step",
                               traceback=["\x1b[0;31m----> 9\x1b[0m " + hidden,
                                          f"\x1b[1;32m{HIDDEN_MARKERS[0]}\x1b[0m"]),
        nbformat.v4.new_output("stream", name="stdout",
                               text=f"visible\n  {lines[0]}\n{names[0]} = 3\n"),
        nbformat.v4.new_output("display_data", data={
            "text/html": f"<pre>{html.escape(lines[-1])}</pre>", "text/plain": lines[-1]})]
    student.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                              text=f"{HIDDEN_MARKERS[1]}\n")]
    test.metadata["note"] = lines[1]
    WithoutHiddenTests().preprocess(nb, {})
    written = nbformat.writes(nb)
    assert HIDDEN_MARKERS[0] not in written and HIDDEN_MARKERS[1] not in written
    assert not [line for line in lines if line in written or html.escape(line) in written]
    assert not [name for name in names if re.search(rf"\b{name}\b", written)]
    assert test.outputs[0].traceback == ["AssertionError: w after one step"]
    assert test.outputs[1].text == f"visible\n{CUT}\n{NAME} = 3\n"
    assert test.outputs[2].data["text/plain"] == CUT and student.outputs[0].text == CUT + "\n"


@pytest.mark.slow
def test_nbgrader_feedback_has_the_late_penalty_the_folder_keeps(course_folder):
    """Issue 40: whichever page a student gets, the same total. nbgrader's page takes the
    late policy the grading folder keeps (rules.json), as grades.csv and the course's
    page do."""
    from datetime import datetime, timedelta

    from nbgrader.api import Gradebook

    from autograder import late
    from autograder.grading import rules

    folder, _ = course_folder
    due = datetime(2026, 12, 1, 12, 0)
    with Gradebook("sqlite:///" + str(folder / "gradebook.db")) as gradebook:
        gradebook.update_or_create_assignment(A, duedate=due)
        submission = gradebook.find_submission(A, STUDENT)
        submission.timestamp = due + timedelta(days=2, hours=5)  # 3 started days
        gradebook.db.commit()
        raw = gradebook.find_submission(A, STUDENT).score
    policy = late.parse({"percent_per_day": 10, "cap_percent": 50}, "this test")
    (folder / rules.RULES).write_text(json.dumps(
        {"late": {"from": "this test", "table": rules.table_of(policy)}}))
    nbgrader(["generate_feedback", A, "--force"], folder)
    page = (folder / "feedback" / STUDENT / A / NB.replace(".ipynb", ".html")).read_text()
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
    assert 0 < raw < 13
    assert f"Score: {round(raw * 0.7, 2):g} / 13.0" in text, text[:600]
    assert f"Late submission penalty (Score: -{round(raw * 0.3, 2):g})" in text
    assert "3 started days late, \u221230%" in text


@pytest.mark.slow
def test_nbgrader_autograde_without_a_sandbox_grades_nothing_and_says_why(course_folder):
    """No bubblewrap on PATH: nothing is graded outside a sandbox, and the log's last
    error says what to do."""
    folder, _ = course_folder
    submitted = folder / "submitted" / STUDENT / A / NB
    target = folder / "submitted" / "unsandboxed" / A / NB
    target.parent.mkdir(parents=True)
    target.write_bytes(submitted.read_bytes())
    bin_dir = str(Path(sys.executable).parent)
    env = course.tool_env({"PATH": bin_dir})  # no /usr/bin: no bwrap
    done = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", A, "--student",
                           "unsandboxed"], cwd=folder, capture_output=True, text=True,
                          env=env, timeout=600)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said[-3000:]
    assert "KernelStartError: The course grades each student's code in a sandbox, and " \
           "bubblewrap is not installed" in said, said[-3000:]
    assert "c.SandboxedExecute.use_sandbox = False" in said
    graded = folder / "autograded" / "unsandboxed" / A / NB
    assert not graded.exists() or FOUND not in graded.read_text()
