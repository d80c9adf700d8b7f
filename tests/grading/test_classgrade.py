"""Class grading (`course-grade class`, `course-grade demo`): input, bad submissions, the
class gradebook, reports, reruns."""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.authoring import demo
from autograder.cells import (
    HIDDEN_MARKERS,
    grade_id,
    read_notebook,
    release_imports,
    release_names,
)
from autograder.engine import sandbox, session
from autograder.errors import CourseError
from autograder.grading import classgrade, intake, repair, reports, store
from autograder.limits import Limits
from conftest import ROOT

A = "01-autodiff"
NB = "autodiff.ipynb"


@pytest.fixture(scope="module")
def c01():
    return demo.Course(ROOT, A)


def release_of(assignment=A):
    return read_notebook(next((ROOT / "notebooks" / assignment).glob("*.ipynb")))


def other_ids():
    from autograder import course

    return {a: {grade_id(c) for p in course.solution_notebooks(ROOT, a)
                for c in read_notebook(p).cells if grade_id(c)}
            for a in course.assignments(ROOT) if a != A}


# --- input ------------------------------------------------------------------------------

def test_collect_reads_the_nbgrader_layout_and_marks_missing_notebooks(tmp_path, c01):
    for student in ("ada", "bob"):
        path = tmp_path / "submitted" / student / A / NB
        path.parent.mkdir(parents=True)
        path.write_bytes(demo.perfect(c01)[0])
    (tmp_path / "submitted" / "cy" / "02-gather-gradients").mkdir(parents=True)
    (tmp_path / "submitted" / "cy" / "02-gather-gradients" / "gather_gradients.ipynb") \
        .write_text("{}")
    # nbgrader's collect writes when each was submitted beside it
    (tmp_path / "submitted" / "ada" / A / "timestamp.txt").write_text(
        "2026-12-01 09:30:00.000000 UTC")
    subs = intake.collect(ROOT, tmp_path, [A], log=lambda _: None)
    assert [(s.student, s.data is not None) for s in subs] == [("ada", True), ("bob", True),
                                                               ("cy", False)]
    assert subs[0].timestamp == "2026-12-01T09:30:00" and subs[1].timestamp is None
    assert subs[0].exchange_files == {"timestamp.txt": "2026-12-01 09:30:00.000000 UTC"}
    prepared = repair.prepare_submission(subs[2], release_of(), other_ids())
    assert prepared.fatal == f"no {NB} was submitted"


def test_collect_reads_an_lms_zip(tmp_path, c01):
    data = demo.perfect(c01)[0]
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(f"ada_12345_678_{NB}", data)
        z.writestr(f"bob_LATE_222_333_{NB}", b"old")
        z.writestr("bob_LATE_222_333_autodiff-1.ipynb", data)  # a resubmission wins
        z.writestr("readme_notes.ipynb", b"{}")
        z.writestr("__MACOSX/ada_autodiff.ipynb", b"")
        z.writestr("d@ve_1_autodiff.ipynb", data)
        z.writestr(f"submitted/cy/{A}/{NB}", data)  # nbgrader's layout, with its files
        z.writestr(f"submitted/cy/{A}/submission_secret.txt", "s3cret")
        z.writestr(f"submitted/cy/{A}/timestamp.txt", "x" * 5000)  # too long: not read
    said = []
    subs = intake.collect(ROOT, archive, None, log=said.append)
    assert [(s.student, s.assignment, s.data == data) for s in subs] == [
        ("ada", A, True), ("bob", A, True), ("cy", A, True)]
    assert subs[2].exchange_files == {"submission_secret.txt": "s3cret"}
    assert subs[2].timestamp is None and subs[0].exchange_files == {}
    assert any("readme_notes.ipynb" in line for line in said)
    assert any("d@ve" in line for line in said)


def test_collect_refuses_what_it_cannot_read(tmp_path):
    from autograder.errors import CourseError

    with pytest.raises(CourseError, match="does not exist"):
        intake.collect(ROOT, tmp_path / "nowhere", [A])
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(CourseError, match="neither a folder nor a zip"):
        intake.collect(ROOT, tmp_path / "x.txt", [A])
    with pytest.raises(CourseError, match="no assignment 'nope'"):
        intake.collect(ROOT, tmp_path, ["nope"])


# --- reading a submission, before nbgrader ------------------------------------------------

@pytest.mark.parametrize("builder", [demo.not_json, demo.empty, demo.other_assignment])
def test_unreadable_submissions_score_zero_with_a_reason(builder, c01):
    data, _, reason, _ = builder(c01)
    sub = intake.Submission("s", A, NB, "x", data)
    prepared = repair.prepare_submission(sub, release_of(), other_ids())
    assert prepared.notebook is None and reason in prepared.fatal


def test_duplicated_grade_ids_keep_the_last_cell_only(c01):
    data = demo.grade_id_copied(c01)[0]
    prepared = repair.prepare_submission(intake.Submission("s", A, NB, "x", data),
                                             release_of(), other_ids())
    ids = [grade_id(c) for c in prepared.notebook.cells if grade_id(c)]
    assert len(ids) == len(set(ids))
    assert any("appears in 2 cells" in n for n in prepared.notes)


def test_deleted_tests_are_put_back_after_their_answer(c01):
    data = demo.tests_deleted(c01)[0]
    prepared = repair.prepare_submission(intake.Submission("s", A, NB, "x", data),
                                             release_of(), other_ids())
    ids = [grade_id(c) for c in prepared.notebook.cells if grade_id(c)]
    assert ids == [grade_id(c) for c in release_of().cells if grade_id(c)]


def test_release_imports_are_the_setup_cells_imports():
    imports = release_imports(release_of())
    assert "import numpy as np" in imports and "autograder" not in imports


# --- reports ------------------------------------------------------------------------------

def fake_result(student, score, fatal=None):
    cells = {gid: {"score": score, "max_score": 1.0, "needs_manual_grade": False,
                   "message": "" if score else "CheckFailed: expected 1, got 2"}
             for gid in [grade_id(c) for c in release_of().cells
                         if c.get("metadata", {}).get("nbgrader", {}).get("grade")]}
    return classgrade.Result(student, A, NB, "x", "d", "a", cells=cells, fatal=fatal)


def test_reports_from_results(tmp_path):
    results = [fake_result("ada", 1.0), fake_result("bob", 0.0, fatal="an empty file")]
    layout = reports.Layout({A: release_of()})
    reports.write_csv(results, layout, tmp_path / "grades.csv")
    rows = list(csv.DictReader(open(tmp_path / "grades.csv", encoding="utf-8")))
    assert [r["student"] for r in rows] == ["ada", "bob"]
    assert rows[0][f"{A}/sgd_step"] == "2" and rows[1]["total"] == "0"
    assert "an empty file" in rows[1]["problems"]
    page = reports.feedback_html(results[1], layout, {})
    assert "Not graded: an empty file" in page and "expected 1, got 2" in page
    stats = reports.summary(results, layout)
    assert stats[A]["mean_fraction"]["sgd_step"] == 0.5
    text = reports.summary_text(stats)
    assert "sgd_step" in text and "scores:" in text
    reports.summary_png(stats, tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 1000


# --- the real thing: a class with every kind of bad submission ----------------------------

@pytest.fixture(scope="module")
def graded_demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("class")
    result = subprocess.run(
        [str(Path(sys.executable).parent / "course-grade"), "demo", "--out", str(out),
         "--workers", "2", "--cell-timeout", "10", "--memory-mb", "2048"],
        capture_output=True, text=True, cwd=ROOT, timeout=1500)
    print(result.stdout[-6000:])
    return out, result


@pytest.mark.slow
def test_demo_grades_every_submission_as_expected(graded_demo):
    out, result = graded_demo
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-3000:]
    assert "was graded as expected" in result.stdout
    for name in ("grades.csv", "summary.png", "gradebook.db"):
        assert (out / name).exists(), name
    assert "grades:" in result.stdout and "scores:" in result.stdout


@pytest.mark.slow
def test_demo_results_reach_nbgrader_gradebook_and_feedback(graded_demo):
    from nbgrader.api import Gradebook

    out, _ = graded_demo
    results = store.load_results(out)
    expected = json.loads((out / "submitted-demo" / "expected.json").read_text())
    assert {r.student for r in results} == {e["student"] for e in expected}
    with Gradebook("sqlite:///" + str(out / "gradebook.db")) as gradebook:
        for r in results:
            assert gradebook.find_submission(A, r.student).score == pytest.approx(r.score)
    rows = {row["student"]: row for row in csv.DictReader(open(out / "grades.csv"))}
    assert all(float(rows[r.student]["total"]) == r.score for r in results)
    # feedback: every test named, no hidden test's code shown
    solution = read_notebook(ROOT / "solutions" / A / NB)
    hidden = set()
    for cell in solution.cells:
        if HIDDEN_MARKERS[0] in cell.source:
            body = cell.source.split(HIDDEN_MARKERS[0])[1].split(HIDDEN_MARKERS[1])[0]
            hidden |= {line.strip() for line in body.splitlines() if len(line.strip()) > 12}
    assert hidden
    for r in results:
        page = (out / "feedback" / r.student / f"{A}.html").read_text()
        # the student's own answers are shown in <details>; everything else is the grader's
        graders = re.sub(r"<details>.*?</details>", "", page, flags=re.DOTALL)
        leaked = [line for line in hidden if html.escape(line) in graders]
        assert not leaked, f"{r.student}'s feedback shows hidden tests: {leaked[:2]}"
        assert "test_sgd_step" in page
    snooped = read_notebook(out / "autograded" / "snoops" / A / NB)
    printed = "".join(o.get("text", "") for c in snooped.cells for o in c.get("outputs", []))
    assert "solutions found near the notebook: 0 []" in printed


@pytest.mark.slow
def test_rerun_is_identical_and_one_more_student_leaves_the_others(graded_demo, tmp_path):
    from nbgrader.api import Gradebook
    from nbgrader.utils import parse_utc

    out, _ = graded_demo
    before = {p.name: p.read_bytes() for p in (out / "results" / A).glob("*.json")}
    again = tmp_path / "again"
    for student in ("perfect", "mistake-sgd-step"):
        shutil.copytree(out / "submitted-demo" / student, again / student)
    settings = classgrade.Settings(workers=2, force=True, limits=Limits(cell_timeout=10))
    # submitted through nbgrader's exchange 90 minutes after the due date the instructor set
    (again / "perfect" / A / "timestamp.txt").write_text("2026-12-01 10:30:00.000000 UTC")
    with Gradebook("sqlite:///" + str(out / "gradebook.db")) as gradebook:
        gradebook.update_or_create_assignment(A, duedate=parse_utc("2026-12-01 09:00:00 UTC"))
    lines = []
    results = classgrade.grade_class(ROOT, again, out, [A], settings, log=lines.append)
    classgrade.report(ROOT, out, results)  # what course-grade class writes after grading
    rows = {row["student"]: row for row in csv.DictReader(open(out / "grades.csv"))}
    assert "submitted 1 h 30 min after the due date" in rows["perfect"]["problems"]
    assert "after the due date" not in rows["mistake-sgd-step"]["problems"]
    assert "Late: submitted 1 h 30 min" in (out / "feedback" / "perfect" / f"{A}.html").read_text()
    after = {p.name: p.read_bytes() for p in (out / "results" / A).glob("*.json")}
    for name in before:
        old, new = json.loads(before[name]), json.loads(after[name])
        assert old["cells"] == new["cells"], f"{name} graded differently the second time"
    newcomer = again / "newcomer" / A / NB
    newcomer.parent.mkdir(parents=True)
    shutil.copy(out / "submitted-demo" / "partial" / A / NB, newcomer)
    lines.clear()
    classgrade.grade_class(ROOT, again, out, [A], classgrade.Settings(workers=2), log=lines.append)
    assert any("1 to grade, 2 unchanged" in line for line in lines), lines
    final = {p.name: p.read_bytes() for p in (out / "results" / A).glob("*.json")}
    assert {name: final[name] for name in after} == after
    assert "newcomer.json" in final
    assert json.loads(final["newcomer.json"])["fatal"] is None


def test_nbformat_conversion_keeps_nbgrader_metadata(c01):
    data = demo.old_nbformat(c01)[0]
    assert json.loads(data)["nbformat"] == 3
    nb = nbformat.reads(data.decode(), as_version=4)
    assert [grade_id(c) for c in nb.cells if grade_id(c)] == \
        [grade_id(c) for c in release_of().cells if grade_id(c)]


@pytest.mark.parametrize("option", ["workers", "cell_timeout", "memory_mb", "max_output_kb",
                                    "kernel_threads", "cpu_seconds"])
def test_settings_below_one_are_refused_before_anything_runs(tmp_path, option):
    out = tmp_path / "out"
    with pytest.raises(CourseError, match="--" + option.replace("_", "-")):
        settings = classgrade.Settings(workers=0) if option == "workers" else \
            classgrade.Settings(limits=Limits(**{option: 0}))
        classgrade.grade_class(ROOT, tmp_path, out, [A], settings)
    assert not out.exists()


@pytest.mark.slow
def test_each_kernel_gets_its_share_of_threads(tmp_path, c01, monkeypatch):
    """The kernels inherit the worker's thread variables: cores / workers, or the option."""
    for name in session.THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    probe = "import os\nprint('threads:', os.environ.get('TF_NUM_INTRAOP_THREADS'))"
    nb = demo._insert_after(c01.release, next(iter(c01.exercises)), probe)
    path = tmp_path / "in" / "probe" / A / NB
    path.parent.mkdir(parents=True)
    path.write_bytes(demo._bytes(nb))
    out = tmp_path / "out"
    classgrade.grade_class(ROOT, tmp_path / "in", out, [A],
                           classgrade.Settings(workers=1, limits=Limits(kernel_threads=3)),
                           log=lambda _: None)
    graded = read_notebook(out / "autograded" / "probe" / A / NB)
    printed = "".join(o.get("text", "") for c in graded.cells for o in c.get("outputs", []))
    assert "threads: 3" in printed


def test_class_grading_refuses_without_a_sandbox_unless_told(tmp_path, monkeypatch, c01):
    monkeypatch.setattr(sandbox, "available", lambda: (False, "bubblewrap is not installed"))
    path = tmp_path / "in" / "ada" / A / NB
    path.parent.mkdir(parents=True)
    path.write_bytes(demo.perfect(c01)[0])
    with pytest.raises(CourseError, match="--no-sandbox"):
        classgrade.grade_class(ROOT, tmp_path / "in", tmp_path / "out", [A])
    assert not (tmp_path / "out").exists()
    assert classgrade.require_sandbox(no_sandbox=True) is False


def test_release_names_are_what_the_notebooks_own_cells_bind_at_top_level():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import numpy as np\nfrom os import path as p"),
        nbformat.v4.new_code_cell(
            "if True:\n    def helper(x):\n        inner = x\n        return inner\n"
            "    after = 1\nrows = [k for k in range(3)]\nfor i in range(2):\n    total = i\n"
            "with open(__file__) as handle:\n    pass\nclass Box:\n    size = 2\n"
            "f = lambda arg: arg\n_private = 0\n(walrus := 5)")])
    assert release_names(nb) == ["Box", "after", "f", "handle", "helper", "i",
                                           "rows", "total", "walrus"]
