"""One submission cannot take the CPU from another, and none runs past its time.

A kernel that starts dozens of busy processes, each in a session of its own (so that the
scheduler's autogroups, which share the CPU per session, cannot hold it), is graded beside
an honest submission: the honest one keeps every point and finishes within `FACTOR` times
its time alone (each kernel has a cgroup of its own, autograder.engine.trusted.cpushare). The
hog is
stopped by the time limit for a whole submission (`Limits.submission_timeout`), keeps the
points it earned before, and its feedback page, grades.csv and the class report say which
limit stopped it. Without the cgroups (COURSE_GRADE_CPU_SHARE=none) the honest submission
takes over 4 times as long on 2 cores, runs into the same limit and loses points.
"""

from __future__ import annotations

import argparse
import os
import shutil

import hostile
import nbformat
import pytest

from autograder.authoring import demo
from autograder.engine.trusted import cgroups, sandbox
from autograder.errors import CourseError
from autograder.grading import classgrade, reports
from autograder.grading.store import Result
from autograder.limits import Limits, add_limit_options
from conftest import ROOT

# the honest submission's time beside the hog, at most, over its time alone: two kernels on
# 2 cores are owed one core each, and an honest kernel alone uses more than one
# (TensorFlow's threads, the grader beside it), so up to 2 times is its fair share; 2.5
# leaves room for the scheduler's imprecision (measured: 1.6 to 1.9; without the cgroups
# 4.5 to 4.9)
FACTOR = 2.5
BUSY = 56  # processes the hog starts (the kernel may have 64)
HOG = ("import subprocess, sys, time\n"
       "hogs = [subprocess.Popen([sys.executable, '-c', 'while True: pass'],\n"
       f"                         start_new_session=True) for _ in range({BUSY})]\n"
       "time.sleep(10 ** 6)")


def _grade(tmp, name: str, notebooks: dict, limits: Limits):
    """Grade `notebooks` (student -> notebook) into tmp/out (the assignment generated
    there once for both runs)."""
    for student, nb in notebooks.items():
        path = tmp / name / student / hostile.A / "autodiff.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(nbformat.writes(nb), encoding="utf-8")
    settings = classgrade.Settings(workers=2, force=True, limits=limits)
    return {r.student: r for r in classgrade.grade_class(
        ROOT, tmp / name, tmp / "out", [hostile.A], settings, log=lambda _: None)}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if not sandbox.available()[0]:
        pytest.fail("the sandbox is not available: " + sandbox.available()[1])
    tmp = tmp_path_factory.mktemp("fair")
    c = demo.Course(ROOT, hostile.A)
    honest = hostile._notebook(c)
    hog = hostile._notebook(c, cell=HOG, after="test_sgd_step_none")
    threads = Limits(kernel_threads=1)  # the same in both runs: one core's worth each
    alone = _grade(tmp, "alone", {"honest": honest}, threads)
    budget = max(20, round(FACTOR * alone["honest"].seconds))
    beside = _grade(tmp, "beside", {"honest": honest, "hog": hog},
                    Limits(kernel_threads=1, submission_timeout=budget))
    summary = classgrade.report(ROOT, tmp / "out", list(beside.values()))
    yield {"alone": alone["honest"], "beside": beside, "summary": summary, "tmp": tmp,
           "budget": budget, "scores": hostile._scores(c), "layout": reports.Layout(
               {hostile.A: c.release})}
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.slow
def test_an_honest_submission_keeps_its_points_and_time_beside_a_cpu_hog(graded):
    honest, alone = graded["beside"]["honest"], graded["alone"]
    assert honest.score == honest.max_score == alone.score, honest.notes
    assert not honest.notes
    assert honest.seconds <= FACTOR * alone.seconds, (honest.seconds, alone.seconds)


@pytest.mark.slow
def test_a_submission_past_its_time_is_stopped_and_its_reports_say_so(graded):
    hog, budget = graded["beside"]["hog"], graded["budget"]
    got = {ex: graded["layout"].exercise_score(hog, ex)[0] for ex in hostile.EXERCISES}
    assert got == dict(graded["scores"], **{ex: 0.0 for ex in hostile.EXERCISES[1:]}), got
    assert hog.seconds < budget + 30  # stopped at its limit, not at the cells' own
    said = f"the time limit for a whole submission, {budget} s (--submission-timeout)"
    assert any(n.startswith("grading stopped") and said in n for n in hog.notes), hog.notes
    out = graded["tmp"] / "out"
    page = (out / "feedback" / "hog" / f"{hostile.A}.html").read_text()
    assert said in page and "Make the notebook run faster" in page
    assert said in (out / "grades.csv").read_text()
    assert "1 stopped at a limit" in graded["summary"] and said in graded["summary"]


@pytest.mark.slow
def test_no_kernel_cgroup_is_left_behind(graded):
    try:
        folders = [folder for _, folder in cgroups.places(None)]
    except cgroups.Unavailable:
        pytest.skip("no cgroup here: the kernels were throttled instead")
    left = [f"{folder}/{name}" for folder in folders for name in os.listdir(folder)
            if name.startswith(cgroups.PREFIX) and not cgroups.owner_alive(name)]
    assert not left, left


def test_both_limits_are_options_and_a_stop_is_said_in_plain_words():
    parser = argparse.ArgumentParser()
    add_limit_options(parser)
    limits = Limits.from_args(parser.parse_args(["--cpu-cores", "1.5",
                                                 "--submission-timeout", "90"]))
    assert (limits.cpu_cores, limits.submission_timeout) == (1.5, 90)
    assert Limits.from_args(parser.parse_args([])) == Limits()
    with pytest.raises(CourseError, match="--submission-timeout must be at least 1"):
        Limits(submission_timeout=0).check()
    findings = {"stopped": {"cell": 4, "seconds": 90, "not_run": 3}, "cpu_cores": 1.5,
                "timeouts": [2], "places": {"4": "the cell after `sgd_step`"}}
    notes = reports.describe_findings(findings)
    assert notes[0].startswith("grading stopped in the cell after `sgd_step`: the notebook "
                               "passed the time limit for a whole submission, 90 s "
                               "(--submission-timeout) with 1.5 CPU core(s) (--cpu-cores); "
                               "that cell and the 3 code cell(s) after it did not finish")
    assert "Make the notebook run faster" in notes[0]
    assert "with 1.5 CPU core(s) (--cpu-cores)" in notes[1]  # a cell's own time limit
    result = Result("s", hostile.A, "autodiff.ipynb", "", "", "", notes=notes)
    assert result.failed and reports.stopped_note(result) == notes[0].split(";")[0]
    assert not reports.describe_findings({"stopped": {}, "cpu_cores": None})
