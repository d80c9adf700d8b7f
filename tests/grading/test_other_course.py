"""The engine grades another nbgrader course: nbgrader's own documentation example (ps1,
shipped inside the nbgrader package), its two submitted students graded by
`course-grade class` to the autograded scores nbgrader's documentation shows."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbgrader
import pytest

from autograder.cells import nbgrader_meta, read_notebook
from autograder.grading import store

DOCS = Path(nbgrader.__file__).parent / "docs" / "source" / "user_guide"
STUDENTS = ("bitdiddle", "hacker")


def autograded_points(path: Path) -> float:
    """Points of the cells nbgrader scores by itself (tests), not by hand."""
    return sum(float(nbgrader_meta(c).get("points", 0)) for c in read_notebook(path).cells
               if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution"))


@pytest.mark.slow
def test_nbgrader_documentation_course_grades_to_its_documented_scores(tmp_path):
    course = tmp_path / "ps1-course"
    shutil.copytree(DOCS / "source" / "ps1", course / "solutions" / "ps1")
    for student in STUDENTS:
        shutil.copytree(DOCS / "submitted" / student, tmp_path / "in" / student)
    (course / "nbgrader_config.py").write_text(
        'c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = "ps1"\n'
        'c.CourseDirectory.source_directory = "solutions"\n'
        'c.CourseDirectory.release_directory = "notebooks"\n')
    # no [tool.course-grade]: no library, nothing preloaded, nothing withheld
    (course / "pyproject.toml").write_text('[project]\nname = "ps1"\n')
    # the course grades one notebook per assignment: problem1; problem2 has no
    # autograded points, so the documented raw scores are problem1's alone
    (course / "solutions" / "ps1" / "problem2.ipynb").unlink()
    assert autograded_points(DOCS / "source" / "ps1" / "problem2.ipynb") == 0
    done = subprocess.run(
        [sys.executable, "-c", "from autograder.cli import grade_main;"
         " raise SystemExit(grade_main())", "class", str(tmp_path / "in"), "--out",
         str(tmp_path / "out")], cwd=course, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(tmp_path / "out" / "grades.csv", newline="") as handle:
        ours = {row["student"]: float(row["total"]) for row in csv.DictReader(handle)}
    with open(DOCS / "grades.csv", newline="") as handle:
        documented = {row["student_id"]: float(row["raw_score"])
                      for row in csv.DictReader(handle)}
    assert ours == documented == {"bitdiddle": 1.5, "hacker": 3.0}
    # the mistakes report works for it too: no hints there, so each group is a failing
    # check and its message (or a written answer left blank), each failure in one group
    report = json.loads((tmp_path / "out" / "mistakes.json").read_text())
    failures = {(r.student, test): cell["message"] for r in store.load_results(tmp_path / "out")
                for test, cell in r.cells.items()
                if cell["score"] is not None and cell["score"] < cell["max_score"]}
    assert failures and "most common mistakes:" in done.stdout
    grouped = {(s, g["test"]): g for e in report["exercises"] for g in e["groups"]
               for s in g["students"]}
    assert set(grouped) == set(failures)
    for (student, test), group in grouped.items():
        message = failures[(student, test)]
        if group["kind"] == "check":  # ps1's asserts have no message: the check is the group
            assert group["title"] in (message, f"{message.split(':')[0]} (no message)")
        else:
            assert group["kind"] == "unanswered" and not message, (student, test, group)
