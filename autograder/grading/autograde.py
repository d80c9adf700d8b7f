"""Grading notebooks that are not a class: the mutant harness and self-grading.

The assignment is generated once with nbgrader (which fills a gradebook with its cells and
checksums; `cache` keeps it between runs), then every notebook is graded by the one grading
engine (autograder.engine), exactly as `course-grade class` grades a submission.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import course
from autograder.cells import grade_id, nbgrader_meta, read_notebook
from autograder.limits import Limits
from autograder.scale.runner import LocalRunner


@dataclass
class CellResult:
    score: float
    max_score: float
    message: str = ""  # the last line of the error, when the cell failed
    hidden: bool = False  # it failed in a hidden test: Validate passed this cell


@dataclass
class NotebookResult:
    student: str
    notebook: str
    cells: dict[str, CellResult] = field(default_factory=dict)
    fatal: str | None = None  # why it could not be graded at all
    findings: dict = field(default_factory=dict)  # what autograder.engine.trusted.executor found

    @property
    def score(self) -> float:
        return sum(c.score for c in self.cells.values())

    @property
    def max_score(self) -> float:
        return sum(c.max_score for c in self.cells.values())

    def tests_of(self, exercise) -> dict[str, CellResult]:
        """The graded test cells of one `cells.Exercise`, by grade id."""
        return {t: self.cells[t] for t in exercise.tests if t in self.cells}


def prepare(root: Path, assignment: str | list[str], work: Path,
            cache: Path | None = None) -> Path:
    """A course folder under `work` with `assignment` (one, or a list) generated into its
    gradebook.

    With `cache` (one assignment), a folder generated earlier from the same sources and
    config is copied instead of running nbgrader's generate step again (seconds saved per
    run).
    """
    names = [assignment] if isinstance(assignment, str) else list(assignment)
    if cache is None or len(names) != 1:
        base = course.make_course_dir(root, work / "base", names)
        for name in names:
            course.run_nbgrader(["generate_assignment", name, "--force"], cwd=base)
        return base
    assignment = names[0]
    digest = hashlib.sha256()
    for path in sorted((root / course.SOURCE_DIR / assignment).rglob("*")) + [
            root / course.CONFIG_NAME, Path(__file__).resolve().parents[1] / "header.ipynb"]:
        if path.is_file() and ".ipynb_checkpoints" not in path.parts:
            digest.update(path.name.encode() + path.read_bytes())
    cached = cache / f"{assignment}-{digest.hexdigest()[:16]}"
    if not cached.is_dir():
        fresh = prepare(root, assignment, Path(tempfile.mkdtemp(prefix="prep-", dir=work)))
        cache.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=cache))
        shutil.copytree(fresh, staging / "base")
        try:
            (staging / "base").rename(cached)  # atomic: a parallel run may have won
        except OSError:
            pass
        shutil.rmtree(staging, ignore_errors=True)
    base = work / "base"
    shutil.copytree(cached, base)
    course.write_config(root, base)
    return base


def release_notebook(base: Path, assignment: str, notebook: str) -> nbformat.NotebookNode:
    return read_notebook(base / course.RELEASE_DIR / assignment / notebook)


def autograde(root: Path, assignment: str,
              submissions: dict[str, dict[str, nbformat.NotebookNode]],
              workers: int | None = None, cell_timeout: int | None = None,
              work: Path | None = None, log=print, cache: Path | None = None,
              settings=None) -> dict[str, dict[str, NotebookResult]]:
    """Grade `submissions` (student -> notebook file name -> notebook) with the grading
    engine (autograder.engine), as class grading does: sandboxed where the sandbox can be
    had, the same repairs of the notebook first.

    `settings` (a submission.Settings) overrides `cell_timeout` and the sandbox default.
    Returns student -> notebook file name -> NotebookResult.
    """
    return autograde_many(root, {assignment: submissions}, workers, cell_timeout, work, log,
                          cache, settings)[assignment]


def autograde_many(root: Path, submissions: dict[str, dict[str, dict]],
                   workers: int | None = None, cell_timeout: int | None = None,
                   work: Path | None = None, log=print, cache: Path | None = None,
                   settings=None, base: Path | None = None,
                   ) -> dict[str, dict[str, dict[str, NotebookResult]]]:
    """`autograde` for several assignments at once (assignment -> student -> notebook
    file name -> notebook), in one pool of workers: no worker waits for the next
    assignment's pool to start; jobs start in the order given. `base`: a course folder
    these assignments were generated into already (`prepare`). Returns assignment ->
    student -> file name -> result."""
    from autograder.engine.trusted import sandbox, submission
    from autograder.grading.intake import Submission
    from autograder.grading.repair import prepare_submission

    owned = work is None
    work = Path(tempfile.mkdtemp(prefix="course-grade-")) if owned else work
    try:
        base = base or prepare(root, sorted(submissions), work, cache=cache)
        jobs, results = [], {}
        for assignment, students in submissions.items():  # in the order given
            results[assignment] = {}
            for student, notebooks in sorted(students.items()):
                results[assignment][student] = {}
                for name, nb in notebooks.items():
                    release = release_notebook(base, assignment, name)
                    sub = Submission(student, assignment, name, name,
                                     nbformat.writes(nb).encode("utf-8"))
                    prepared = prepare_submission(sub, release, {})
                    if prepared.fatal:
                        results[assignment][student][name] = _unreadable(
                            student, name, release, prepared.fatal)
                        continue
                    jobs.append(submission.Job.of(
                        (assignment, student, name), student, assignment, name,
                        nbformat.writes(prepared.notebook), release))
        settings = settings or submission.Settings(Limits(cell_timeout=cell_timeout),
                                                   sandbox=sandbox.available()[0])
        started = time.monotonic()
        count = max(1, min(workers or os.cpu_count() or 1, len(jobs) or 1))
        runs = LocalRunner(root, count).run(base, jobs, settings) if jobs else {}
        for (assignment, student, name), run in runs.items():
            results[assignment][student][name] = _result(student, name, run)
        log(f"graded {len(jobs)} submissions of {', '.join(sorted(submissions))} with "
            f"{count} workers in {time.monotonic() - started:.1f} s" +
            ("" if settings.sandbox else " (no sandbox here)"))
        return results
    finally:
        if owned:
            shutil.rmtree(work, ignore_errors=True)


def _unreadable(student: str, name: str, release, why: str) -> NotebookResult:
    """The result of a notebook that could not be graded at all: 0 in every graded cell."""
    result = NotebookResult(student, name, fatal=why)
    for cell in release.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade"):
            result.cells[grade_id(cell)] = CellResult(0.0, float(meta.get("points", 0)), why)
    return result


def _result(student: str, name: str, run: dict) -> NotebookResult:
    result = NotebookResult(student, name, fatal=run.get("error"),
                            findings=run.get("findings") or {})
    for gid, cell in (run.get("cells") or {}).items():
        result.cells[gid] = CellResult(float(cell["score"] or 0.0), cell["max_score"],
                                       cell["message"], bool(cell.get("hidden")))
    return result


