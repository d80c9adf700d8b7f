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
from autograder.engine.trusted import sandbox, session
from autograder.errors import CourseError
from autograder.grading import classgrade, feedback, intake, repair, reports, store
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


def test_every_file_not_graded_is_listed_with_why(tmp_path, c01):
    data = demo.perfect(c01)[0]
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(f"bob_LATE_222_333_{NB}", data)
        z.writestr("bob_LATE_222_333_autodiff-1.ipynb", data)
        z.writestr("ada_1_2_notes.txt", "my notes")
        z.writestr("__MACOSX/._ada_1_2_autodiff.ipynb", b"")
        z.writestr(f"cy/{A}/.ipynb_checkpoints/autodiff-checkpoint.ipynb", data)
    said, skipped = [], []
    subs = intake.collect(ROOT, archive, None, log=said.append, skipped=skipped)
    assert [s.origin for s in subs] == ["bob_LATE_222_333_autodiff-1.ipynb"]
    why = dict(skipped)
    assert why == {
        f"bob_LATE_222_333_{NB}": "an older submission: bob_LATE_222_333_autodiff-1.ipynb "
                                  "is graded",
        "ada_1_2_notes.txt": "not a notebook (only .ipynb files are graded)",
        "__MACOSX/._ada_1_2_autodiff.ipynb": "macOS's archive metadata",
        f"cy/{A}/.ipynb_checkpoints/autodiff-checkpoint.ipynb":
            "a JupyterLab checkpoint (an autosaved copy), not the submission"}
    assert said[0] == "skipped 4 file(s) of download.zip, not graded:" and len(said) == 5
    assert intake.canvas_marked_late(subs[0].origin)
    assert not intake.canvas_marked_late(f"ada_LATEST_1_2_{NB}")


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


def test_messages_say_what_happened_and_what_to_do(c01):
    cut = b'{\n "nbformat": 4,\n "cells": [{"source": "def sgd_step(variables'  # cut short
    prepared = repair.prepare_submission(intake.Submission("s", A, NB, "x", cut), release_of(),
                                         other_ids())
    assert "not valid JSON (Unterminated string starting at: line 3, column 23)" in \
        prepared.fatal and " at at " not in prepared.fatal
    assert prepared.fatal.endswith("save it (File > Save Notebook) and submit it again")
    notes = reports.describe_findings({"timeouts": [4], "cell_errors": [
        {"cell": 2, "error": "NotImplementedError"}], "places": {"4": "the test test_x"}}, 10)
    assert notes[0].startswith("the test test_x ran past the time limit of 10 s per cell "
                               "(--cell-timeout) and was stopped, and a test stopped scores 0;")
    assert "submit again" in notes[0]
    assert notes[1] == "cell 3 raised an error: NotImplementedError (an exercise it runs is " \
                       "not answered yet)"


def test_problems_name_time_outs_crashes_and_canvas_late_marks(tmp_path):
    stopped = fake_result("ada", 1.0)
    stopped.notes = ["the test test_x ran past the time limit of 10 s per cell "
                     "(--cell-timeout) and was stopped, and a test stopped scores 0; make ...",
                     "the kernel stopped in cell 4: the kernel died; a fresh kernel ran ..."]
    marked = fake_result("bob", 1.0)
    marked.origin = f"bob_LATE_222_333_{NB}"
    assert store.Result.failed.fget(stopped) and not marked.failed
    reports.write_csv([stopped, marked], reports.Layout({A: release_of()}),
                      tmp_path / "grades.csv")
    rows = {r["student"]: r for r in csv.DictReader(open(tmp_path / "grades.csv"))}
    assert rows["ada"]["problems"] == (f"{A}: the test test_x ran past the time limit of 10 s "
                                       f"per cell; {A}: the kernel stopped in cell 4: the "
                                       "kernel died")
    assert rows["bob"]["problems"] == f"{A}: {reports.CANVAS_LATE}"


def test_the_time_left_counts_what_ran_and_names_the_last_ones():
    lines = []
    progress = classgrade.Progress(6, lines.append, workers=2, most=600)
    progress.done(fake_result("bad", 0.0, fatal="an empty file"))  # took no time
    assert lines[-1].endswith("time left: known once a submission has run")
    for student in ("ada", "bob"):
        result = fake_result(student, 1.0)
        result.seconds = 20.0
        progress.done(result)
    assert re.search(r"about \d+ s left$", lines[-1]) and int(
        lines[-1].split("about ")[1].split()[0]) >= 20
    last = fake_result("cy", 1.0)
    last.seconds = 20.0
    progress.done(last)
    progress.done(last)
    assert lines[-1].endswith("the last 1 grading now (one takes about 20 s, at most 600 s)")
    progress.done(last)
    assert lines[-1].endswith("done")


def test_reports_from_results(tmp_path):
    results = [fake_result("ada", 1.0), fake_result("bob", 0.0, fatal="an empty file")]
    layout = reports.Layout({A: release_of()})
    reports.write_csv(results, layout, tmp_path / "grades.csv")
    rows = list(csv.DictReader(open(tmp_path / "grades.csv", encoding="utf-8")))
    assert [r["student"] for r in rows] == ["ada", "bob"]
    assert rows[0][f"{A}/sgd_step"] == "2" and rows[1]["total"] == "0"
    assert "an empty file" in rows[1]["problems"]
    page = feedback.page(results[1], layout, {})
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
def test_the_mistakes_report_counts_each_planted_mistake(graded_demo):
    """The demo class's planted mistakes (tests/mutants' wrong answers, blank exercises),
    each counted exactly in mistakes.json, and its students followed up."""
    out, result = graded_demo
    assert "most common mistakes:" in result.stdout and "follow up:" in result.stdout
    expected = json.loads((out / "submitted-demo" / "expected.json").read_text())
    report = json.loads((out / "mistakes.json").read_text())
    assert report["students"] == len(expected)
    for exercise in report["exercises"]:
        planted = {}  # the mutant (or demo.BLANK) -> the students it was planted in
        for e in expected:
            if exercise["name"] in e["planted"]:
                planted.setdefault(e["planted"][exercise["name"]], set()).add(e["student"])
        groups = exercise["groups"]
        assert {s for g in groups if g["kind"] == "unanswered" for s in g["students"]} == \
            planted.pop(demo.BLANK, set()), exercise["name"]
        for mutant, students in planted.items():  # each mistake is its own group(s)
            theirs = [g for g in groups if set(g["students"]) & students]
            assert theirs and all(set(g["students"]) == students for g in theirs), \
                (exercise["name"], mutant, theirs)
        mistaken = {s for g in groups if g["kind"] in ("hint", "check") for s in g["students"]}
        assert mistaken == set().union(set(), *planted.values()), exercise["name"]
    first = next(e for e in report["exercises"] if e["name"] == next(iter(
        demo.Course(ROOT, A).exercises)))  # its first wrong mutant: in 5 students
    assert max(len(g["students"]) for g in first["groups"]) == 5
    follow = {f["student"]: " | ".join(r[0] for r in f["reasons"]) for f in report["follow_up"]}
    for student in ("blank", "snoops"):
        assert "with no exercise answered" in follow[student]
    for student in ("not-json", "empty", "other-assignment"):
        assert "could not be graded" in follow[student]
    for student in ("os-exit", "kernel-crash"):
        assert "the kernel stopped" in follow[student]
    assert "left 3 exercises unanswered" in follow["partial"]
    assert "time limit" in follow.get("perfect", "time limit")  # only on a busy machine


@pytest.mark.slow
@pytest.mark.browser
def test_the_mistakes_page_opens_in_chromium_and_its_links_reach_the_feedback(graded_demo,
                                                                              browser):
    out, _ = graded_demo
    shots = ROOT / "test-artifacts" / "class"
    shots.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto((out / "mistakes.html").as_uri())
    assert page.title().startswith("What the class got wrong: 01-autodiff")
    assert page.locator("svg").first.is_visible() and page.locator("ol.top li").count() == 3
    page.screenshot(path=str(shots / "mistakes.png"), full_page=True)
    links = page.eval_on_selector_all("a[href^='feedback/']", "as => as.map(a => [a.textContent,"
                                      " a.getAttribute('href')])")
    assert links
    for student, href in links:  # every link names a page that exists
        path, _, anchor = href.partition("#")
        assert path.startswith(f"feedback/{student}/") or student.startswith(A), href
        assert (out / path).is_file(), href
    first = page.locator("td.who a").first
    student, href = first.text_content(), first.get_attribute("href")
    first.click()
    page.wait_for_load_state()
    assert page.url.endswith(href)
    assert page.locator("h1").text_content() == f"{A}: feedback for {student}"
    anchor = href.partition("#")[2]
    assert anchor and page.locator(f"#{anchor}").count() == 1
    page.screenshot(path=str(shots / "mistakes-link.png"))
    page.close()


@pytest.mark.slow
def test_rerun_is_identical_and_one_more_student_leaves_the_others(graded_demo, tmp_path,
                                                                  capsys):
    """Through the command, as an instructor runs it: a late student graded with a late
    policy and a due date, regraded, a newcomer graded and the class exported without
    repeating them (the folder keeps them): the penalised score everywhere."""
    from autograder import cli
    from autograder.term import lms

    out, _ = graded_demo
    before = {p.name: p.read_bytes() for p in (out / "results" / A).glob("*.json")}
    again = tmp_path / "again"
    for student in ("perfect", "mistake-sgd-step"):
        shutil.copytree(out / "submitted-demo" / student, again / student)
    # submitted through nbgrader's exchange 90 minutes after the due date
    (again / "perfect" / A / "timestamp.txt").write_text("2026-12-01 10:30:00.000000 UTC")
    policy = tmp_path / "late.toml"
    policy.write_text("percent_per_day = 10\n")
    common = ["--out", str(out), "-a", A, "--workers", "2"]
    assert cli.grade_main(["class", str(again), *common, "--cell-timeout", "10", "--force",
                           "--late-policy", str(policy), "--due", f"{A}=2026-12-01T09:00Z"]) == 0
    said = capsys.readouterr().out
    raw = json.loads((out / "results" / A / "perfect.json").read_text())
    raw = sum(c["score"] for c in raw["cells"].values())  # full marks, on a machine not busy
    penalised = f"{round(raw * 0.9, 6):g}"

    def penalised_everywhere():
        rows = {row["student"]: row for row in csv.DictReader(open(out / "grades.csv"))}
        assert rows["perfect"][f"{A}/total"] == penalised and rows["perfect"][
            f"{A}/raw"] == f"{raw:g}"
        assert "submitted 1 h 30 min after the due date" in rows["perfect"]["problems"]
        assert "after the due date" not in rows["mistake-sgd-step"]["problems"]
        page = (out / "feedback" / "perfect" / f"{A}.html").read_text()
        assert f"{penalised} of {demo.Course(ROOT, A).auto_points:g} points after the late " \
               f"penalty ({raw:g} before it)" in page
        assert "Late: submitted 1 h 30 min" in page

    penalised_everywhere()
    # said before it is written (the demo graded it before; on a busy machine, a time-out
    # can change a raw score too)
    assert re.search(rf"grades.csv changes for \d+ submission\(s\): .*perfect {A} [\d.]+ -> "
                     rf"{re.escape(penalised)}\b", said), said
    after = {p.name: p.read_bytes() for p in (out / "results" / A).glob("*.json")}
    for name in before:
        old, new = json.loads(before[name]), json.loads(after[name])
        assert old["cells"] == new["cells"], f"{name} graded differently the second time"
    newcomer = again / "newcomer" / A / NB
    newcomer.parent.mkdir(parents=True)
    shutil.copy(out / "submitted-demo" / "partial" / A / NB, newcomer)
    assert cli.grade_main(["class", str(again), *common]) == 0  # no policy, no due date
    said = capsys.readouterr().out
    assert "1 to grade, 2 unchanged" in said, said
    assert "late policy: 10% off per started day late (late.toml, given with --late-policy; " \
           "kept in" in said and "grades.csv changes" not in said
    penalised_everywhere()
    final = {p.name: p.read_bytes() for p in (out / "results" / A).glob("*.json")}
    assert {name: final[name] for name in after} == after
    assert "newcomer.json" in final
    assert json.loads(final["newcomer.json"])["fatal"] is None
    roster = tmp_path / "canvas-export.csv"
    with open(roster, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([
            ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", A],
            ["    Points Possible", "", "", "", "", f"{raw:g}"],
            ["Perfect, Pat", "101", "S1", "perfect", "A", ""]])
    assert cli.grade_main(["export", "--out", str(out), "--roster", str(roster)]) == 0
    said = capsys.readouterr().out
    assert "late policy: 10% off" in said
    pat = next(r for r in csv.reader(open(out / lms.CANVAS_CSV)) if r[0] == "Perfect, Pat")
    assert pat[5] == penalised
    penalised_everywhere()


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
