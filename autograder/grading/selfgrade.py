"""Grade my own notebook: every test, hidden ones included, for a self-study learner.

`course-grade self notebooks/01-autodiff/autodiff.ipynb` (or the button at the end of
each notebook) copies the learner's notebook into a throw-away nbgrader course and
grades it there with the grading engine that class grading and the mutant harness use
(autograder.engine: nbgrader's autograde, the kernel in the sandbox where it can be had,
else with a one-line warning). nbgrader restores the locked test cells from the gradebook,
hidden tests included. The report gives points per exercise and the failing check's
message and hint, never a test's source. The learner's file is only read.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from autograder import course
from autograder.cells import (
    HIDDEN_MARKERS,
    SOLUTION_MARKERS,
    exercises,
    grade_id,
    is_manual,
    nbgrader_meta,
    read_notebook,
)
from autograder.errors import CourseError
from autograder.grading import autograde


def cache_dir() -> Path:
    """Where generated assignments are kept between self-grading runs."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sparse-embeddings-course"


def identify(root: Path, path: Path) -> tuple[str, str]:
    """(assignment, notebook file name) of a learner's notebook; CourseError if it is none."""
    nb = read_notebook(path)
    text = "\n".join(cell.source for cell in nb.cells)
    if any(marker in text for marker in SOLUTION_MARKERS + HIDDEN_MARKERS):
        raise CourseError(
            f"{path} is the instructor's version (it holds the solutions and the hidden "
            "tests): grade your own copy, the one in notebooks/, instead."
        )
    ids = {grade_id(c) for c in nb.cells if nbgrader_meta(c).get("grade_id")}
    if not ids:
        raise CourseError(f"{path} is not a notebook of this course: it has no graded cells.")
    for name in course.assignments(root):
        for solution_path in course.solution_notebooks(root, name):
            solution = read_notebook(solution_path)
            wanted = {grade_id(c) for c in solution.cells if nbgrader_meta(c).get("grade_id")}
            if set(exercises(solution)) <= ids <= wanted:
                return name, solution_path.name
    raise CourseError(
        f"{path} is not a notebook of this course: its graded cells match none of "
        f"{', '.join(course.assignments(root))}."
    )


@dataclass
class ExerciseReport:
    name: str
    score: float
    max_score: float
    failures: list[tuple[str, str]]  # (test grade id, message)
    manual: bool = False  # an answer graded by hand: not scored here
    hidden: tuple[str, ...] = ()  # the failing tests that failed in a hidden block


def grade(path: Path, root: Path | None = None, warn=print,
          settings=None) -> tuple[str, list[ExerciseReport], float, list[str]]:
    """Autograde a learner's notebook; returns (assignment, reports, seconds, notes): the
    notes name every cell outside the tests that raised, and every cell that was stopped.
    `settings` (a submission.Settings) for limits other than the course's."""
    from autograder.engine.trusted import sandbox, submission
    from autograder.grading.reports import describe_findings

    root = root or course.find_root()
    path = Path(path).resolve()
    assignment, name = identify(root, path)
    ok, why = sandbox.available()
    if not ok:
        warn(f"warning: grading without a sandbox ({why}); your code runs as you.")
    if settings is None:
        settings = submission.Settings(sandbox=ok)
    elif not ok:
        settings.sandbox = False
    started = time.monotonic()
    solution = read_notebook(course.solution_notebooks(root, assignment)[0])
    with tempfile.TemporaryDirectory(prefix="course-selfgrade-") as tmp:
        results = autograde.autograde(root, assignment, {"self": {name: read_notebook(path)}},
                                    workers=1, work=Path(tmp), log=lambda *_: None,
                                    cache=cache_dir(), settings=settings)
    result = results["self"][name]
    if result.fatal:
        raise CourseError(f"{path} could not be graded: {result.fatal}")
    notes = describe_findings(result.findings)
    reports = []
    for exercise in exercises(solution).values():
        cells = result.tests_of(exercise)
        reports.append(ExerciseReport(
            exercise.name,
            sum(c.score for c in cells.values()),
            sum(c.max_score for c in cells.values()),
            [(t, c.message) for t, c in cells.items() if c.score < c.max_score],
            hidden=tuple(t for t, c in cells.items() if c.score < c.max_score and c.hidden),
        ))
    manual = [grade_id(c) for c in solution.cells if is_manual(c)]
    for gid in manual:
        cell = result.cells.get(gid)
        reports.append(ExerciseReport(gid, 0.0, cell.max_score if cell else 0.0, [],
                                      manual=True))
    return assignment, reports, time.monotonic() - started, notes


def format_report(path: Path, assignment: str, reports: list[ExerciseReport],
                  seconds: float, notes: list[str] = ()) -> str:
    """The report as text: a row per exercise, then the failing checks' messages."""
    lines = [f"Self-grade of {path} ({assignment}), every test including the hidden ones",
             "", f"  {'exercise':<28}{'points':>10}   result"]
    auto = [r for r in reports if not r.manual]
    for report in reports:
        if report.manual:
            verdict = "graded by hand, not here"
        elif not report.failures:
            verdict = "passed"
        elif all(_unanswered(m) for _, m in report.failures):
            verdict = "not answered yet"
        else:
            verdict = "failed"
        points = "-" if report.manual else f"{report.score:g} / {report.max_score:g}"
        lines.append(f"  {report.name:<28}{points:>10}   {verdict}")
        if verdict == "failed":
            for test, message in report.failures:
                if _unanswered(message):
                    continue
                text = message or "the cell failed (no message)"
                first, *rest = text.splitlines()
                kind = " (a hidden test: Validate runs only the visible ones)" \
                    if test in report.hidden else ""
                lines.append(f"      {test}{kind}: {first}")
                lines.extend(f"      {line}" for line in rest)
    score = sum(r.score for r in auto)
    total = sum(r.max_score for r in auto)
    lines += ["", f"  {'total (autograded)':<28}{f'{score:g} / {total:g}':>10}"]
    if notes:
        lines += ["", "Outside the tests (a notebook should run top to bottom):"]
        lines += [f"  - {note}" for note in notes]
    lines += ["", f"Graded in {seconds:.0f} s. Your notebook was not changed."]
    return "\n".join(lines)


def report(path: Path | str, root: Path | None = None, settings=None) -> str:
    """Grade `path` (with `settings`' limits: a submission.Settings) and return the report
    text (what the command prints)."""
    path = Path(path)
    assignment, reports, seconds, notes = grade(path, root, settings=settings)
    return format_report(path, assignment, reports, seconds, notes)


def _unanswered(message: str) -> bool:
    """The release's stub raised: `raise NotImplementedError()`, without a message (one
    with a message, from TensorFlow say, is a failed answer and is shown)."""
    return message.strip().rstrip(":") == "NotImplementedError"
