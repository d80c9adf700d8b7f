"""The grading engine: one submission, graded the same way wherever it is graded.

`course-grade class`, `course-grade self` and the mutant harness all hand their jobs to a
runner (autograder.scale.runner: a local pool, or Dask), which grades each job (student,
assignment, notebook text) with `grade_one` in a worker process holding a private copy
of the course folder (its gradebook, no solution notebook, no other student's
work), with nbgrader's own autograde: test cells restored from the gradebook (hidden ones
included), `autograder.engine.trusted.executor.SandboxedExecute` to run the cells, nbgrader's
scores.
Results come
back as data: per test cell its score and its message (the test ran in the grader,
never in the student's kernel: autograder.engine.trusted.testcells); the findings of the run; the
autograded notebook for the instructor.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import nbformat

from autograder import course
from autograder.cells import HIDDEN_MARKERS, grade_id, is_test
from autograder.engine.trusted import seeds
from autograder.engine.trusted.executor import FINDINGS
from autograder.limits import Limits

# nbgrader's autograde with the course's sandboxed executor in place of nbgrader's Execute
AUTOGRADE_PREPROCESSORS = (
    "autograder.engine.trusted.executor.SandboxedExecute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
)


@dataclass
class Settings:
    limits: Limits = field(default_factory=Limits)  # cell_timeout None: the course's
    sandbox: bool = True
    # the run's secret for the hidden tests' inputs (seeds): a new one for each Settings
    secret: str = field(default_factory=seeds.draw, repr=False)


@dataclass
class Job:
    key: tuple  # returned with the result
    student: str
    assignment: str
    notebook: str
    text: str
    imports: str = ""  # the release's import lines, run by the tests in the grader
    exercises: tuple = ()  # the release's exercises: their library versions are withheld
    kept: tuple = ()  # library names the release's own cells use
    names: tuple = ()  # the names the release's own cells define (what tests may read)

    @classmethod
    def of(cls, key, student, assignment, notebook, text, release) -> Job:
        """A job whose course facts come from `release`, the assignment's release."""
        from autograder.cells import release_names
        from autograder.engine.trusted.executor import facts_of

        imports, exercises, kept = facts_of(release)
        return cls(key, student, assignment, notebook, text, imports, tuple(exercises),
                   tuple(kept), tuple(release_names(release)))


def hidden_parts(source: str) -> list[str]:
    """The hidden blocks of a test cell's full source (as the gradebook holds it)."""
    begin, end = HIDDEN_MARKERS
    return [m.group(1) for m in re.finditer(re.escape(begin) + r"(.*?)" + re.escape(end),
                                            source, flags=re.S)]


# ---------------------------------------------------------------------------------------
# One submission, in a worker's course copy
# ---------------------------------------------------------------------------------------

_WORKER: dict = {}


def config(course_dir: Path, settings: Settings, job: Job | None = None):
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    loaded = PyFileConfigLoader(course.CONFIG_NAME, path=str(course_dir)).load_config()
    overrides = Config()
    overrides.Autograde.autograde_preprocessors = list(AUTOGRADE_PREPROCESSORS)
    overrides.OverwriteCells.add_missing_cells = True
    timeout = settings.limits.cell_timeout or loaded.get("Execute", {}).get("timeout")
    overrides.SandboxedExecute.limits = replace(
        settings.limits, cell_timeout=int(timeout) if timeout else None).as_dict()
    overrides.SandboxedExecute.use_sandbox = settings.sandbox
    overrides.SandboxedExecute.secret = settings.secret
    if job is not None:
        overrides.SandboxedExecute.imports = job.imports
        overrides.SandboxedExecute.exercises = list(job.exercises)
        overrides.SandboxedExecute.kept = list(job.kept)
        overrides.SandboxedExecute.names = list(job.names)
    overrides.SandboxedExecute.scratch = str(course_dir.parent)
    # ClearMetadataPreprocessor must keep what the executor found
    overrides.ClearMetadataPreprocessor.preserve_nb_metadata_mask = {
        ("kernelspec",), ("language_info",), ("nbgrader",), (FINDINGS,)}
    loaded.merge(overrides)
    return loaded


def findings_of(notebook) -> dict:
    """What the executor found while grading `notebook` (autograder.engine.trusted.executor)."""
    return dict(notebook.metadata.get(FINDINGS, {}))


def worker_course(base: Path, into: Path, root: Path) -> Path:
    """A private copy of the course folder `base` with what nbgrader's autograde needs: the
    gradebook (its students removed) and the assignments' source folders without their
    notebooks; no solution, release, submission or result."""
    course_dir = into / "course"
    course_dir.mkdir(parents=True)
    shutil.copy2(base / "gradebook.db", course_dir / "gradebook.db")
    if (base / course.SOURCE_DIR).is_dir():
        shutil.copytree(base / course.SOURCE_DIR, course_dir / course.SOURCE_DIR,
                        ignore=shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints"))
    course.write_config(root, course_dir)
    from nbgrader.api import Gradebook

    with Gradebook("sqlite:///" + str(course_dir / "gradebook.db")) as gradebook:
        for student in list(gradebook.students):
            gradebook.remove_student(student.id)
    return course_dir


def grade_one(course_dir: Path, job: Job, settings: Settings, scratch: Path) -> dict:
    """Autograde one submission in `course_dir`; the result as plain data."""
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    for sub in ("submitted", "autograded"):
        shutil.rmtree(course_dir / sub, ignore_errors=True)
    target = course_dir / "submitted" / job.student / job.assignment / job.notebook
    target.parent.mkdir(parents=True)
    target.write_text(job.text, encoding="utf-8")
    cfg = config(course_dir, settings, job)
    started = time.monotonic()
    graded = course_dir / "autograded" / job.student / job.assignment / job.notebook
    api = NbGraderAPI(CourseDirectory(config=cfg), config=cfg)
    outcome = api.autograde(job.assignment, job.student, force=True, create=True)
    result = {"seconds": time.monotonic() - started, "cells": {}, "findings": {},
              "autograded": None, "error": None}
    if not outcome.get("success") or not graded.exists():
        (scratch / "nbgrader-failures.log").open("a").write(
            f"--- {job.student} {job.assignment}\n{outcome.get('log', '')}\n")
        log_text = str(outcome.get("log", "") or outcome.get("error", ""))
        errors = [line.strip() for line in log_text.splitlines()
                  if re.match(r"^\w*(Error|Exception)\b", line.strip())]
        result["error"] = "nbgrader could not grade it: " + (errors[-1] if errors else " | ".join(
            line.strip() for line in log_text.splitlines()[-4:] if line.strip()))
        started = re.findall(r"KernelStartError: (.+)", log_text)  # session.KernelStartError
        if started:  # no kernel could start: its sentence says what to do
            result["error"] = started[-1].strip()
        return result
    autograded = nbformat.read(str(graded), as_version=4)
    result["autograded"] = nbformat.writes(autograded)
    name = job.notebook[:-len(".ipynb")]
    with Gradebook("sqlite:///" + str(course_dir / "gradebook.db")) as gradebook:
        messages = {}  # the tests ran in the grader: their messages are the author's own
        for cell in autograded.cells:
            if grade_id(cell) and is_test(cell):
                for out in cell.get("outputs", []):
                    if out.get("output_type") == "error":
                        messages[grade_id(cell)] = \
                            f"{out.get('ename', '')}: {out.get('evalue', '')}"
        submission = gradebook.find_submission_notebook(name, job.assignment, job.student)
        for grade in submission.grades:
            result["cells"][grade.name] = {
                "score": None if grade.auto_score is None else float(grade.auto_score),
                "max_score": float(grade.max_score or 0.0),
                "needs_manual_grade": bool(grade.needs_manual_grade),
                "message": messages.get(grade.name, ""),
                "hidden": grade.name in findings_of(autograded).get("hidden_failures", []),
            }
        gradebook.remove_submission(job.assignment, job.student)
    findings = findings_of(autograded)
    for item in findings.get("cell_errors", []):
        item["error"] = str(item.get("error", ""))[:300]
    result["findings"] = findings
    for sub in ("submitted", "autograded"):
        shutil.rmtree(course_dir / sub, ignore_errors=True)
    return result


def worker_init(base: str, root: str, workdir: str, settings: Settings) -> None:
    """Make this (spawned) process a grading worker with its own copy of the course `base`
    (generated from the course at `root`)."""
    os.environ[course.ROOT_VARIABLE] = root  # its facts: not the copy's (course.facts)
    folder = Path(tempfile.mkdtemp(prefix="worker-", dir=workdir))
    course_dir = worker_course(Path(base), folder, Path(root))
    worker_init_for(str(course_dir), str(folder), settings)


def worker_init_for(course_dir: str, folder: str, settings: Settings) -> None:
    """Make this (spawned) process a grading worker for the worker course `course_dir`."""
    # nbgrader's log and the kernels' start-up chatter go to a file, not the terminal
    log_file = os.open(Path(folder) / "worker.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(log_file, 2)
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    _WORKER.update(folder=Path(folder), course=Path(course_dir), settings=settings)
    threading.Thread(target=_end_with_parent, args=(os.getppid(),), daemon=True).start()


def _end_with_parent(parent: int) -> None:
    """A worker whose parent died (killed grader, killed Dask worker) ends at once; its
    kernel, started with --die-with-parent, ends with it."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)


def grade_in_worker(job: Job, secret: str) -> dict:
    """One job, in a process prepared by `worker_init_for`, with its run's `secret` (sent
    with each job: a worker may outlive the run that started it)."""
    settings = replace(_WORKER["settings"], secret=secret)
    return grade_one(_WORKER["course"], job, settings, _WORKER["folder"])
