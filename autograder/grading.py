"""Real `nbgrader autograde` runs of submissions, in throw-away course folders.

The assignment is generated once (which fills a gradebook with its cells and
checksums); each worker then copies that course folder, autogrades its share of
the students with nbgrader in its own process, and the scores are read back from
each worker's gradebook. Workers never share a gradebook, so none is locked.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import course
from autograder.errors import CourseError
from autograder.notebooks import grade_id, is_test, read_notebook, write_notebook


@dataclass
class CellResult:
    score: float
    max_score: float
    message: str = ""  # the last line of the error, when the cell failed


@dataclass
class NotebookResult:
    student: str
    notebook: str
    cells: dict[str, CellResult] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return sum(c.score for c in self.cells.values())

    @property
    def max_score(self) -> float:
        return sum(c.max_score for c in self.cells.values())

    def tests_of(self, exercise) -> dict[str, CellResult]:
        """The graded test cells of one `notebooks.Exercise`, by grade id."""
        return {t: self.cells[t] for t in exercise.tests if t in self.cells}


def _error_messages(nb: nbformat.NotebookNode) -> dict[str, str]:
    messages = {}
    for cell in nb.cells:
        if not is_test(cell):
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                text = f"{output.get('ename', '')}: {output.get('evalue', '')}".strip(": ")
                messages[grade_id(cell)] = text
    return messages


def prepare(root: Path, assignment: str, work: Path, cache: Path | None = None) -> Path:
    """A course folder under `work` with `assignment` generated into its gradebook.

    With `cache`, a folder generated earlier from the same sources and config is
    copied instead of running nbgrader's generate step again (seconds saved per run).
    """
    if cache is None:
        base = course.make_course_dir(root, work / "base", [assignment])
        course.run_nbgrader(["generate_assignment", assignment, "--force"], cwd=base)
        return base
    digest = hashlib.sha256()
    for path in sorted((root / course.SOURCE_DIR / assignment).rglob("*")) + [
            root / course.CONFIG_NAME, Path(__file__).parent / "header.ipynb"]:
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
              work: Path | None = None, log=print,
              cache: Path | None = None) -> dict[str, dict[str, NotebookResult]]:
    """Autograde `submissions` (student -> notebook file name -> notebook) with nbgrader.

    Returns student -> notebook file name -> NotebookResult.
    """
    workers = max(1, min(workers or os.cpu_count() or 1, len(submissions)))
    owned = work is None
    work = Path(tempfile.mkdtemp(prefix="course-grade-")) if owned else work
    try:
        base = prepare(root, assignment, work, cache=cache)
        students = sorted(submissions)
        shares = [students[i::workers] for i in range(workers)]
        folders, procs = [], []
        started = time.monotonic()
        for k, share in enumerate(shares):
            folder = work / f"worker{k}"
            shutil.copytree(base, folder)
            course.write_config(root, folder)
            for student in share:
                for name, nb in submissions[student].items():
                    write_notebook(nb, folder / "submitted" / student / assignment / name)
            args = [sys.executable, "-m", "nbgrader", "autograde", assignment, "--force"]
            if cell_timeout:
                args.append(f"--Execute.timeout={cell_timeout}")
            env = course.tool_env()
            log_file = open(folder / "autograde.log", "w")  # noqa: SIM115
            procs.append((subprocess.Popen(args, cwd=folder, stdout=log_file,
                                           stderr=subprocess.STDOUT, env=env), log_file))
            folders.append((folder, share))
        for proc, log_file in procs:
            proc.wait()
            log_file.close()
        log(f"autograded {len(students)} submissions of {assignment} with {workers} "
            f"workers in {time.monotonic() - started:.1f} s")
        return {student: result
                for folder, share in folders
                for student, result in _read_results(folder, assignment, share).items()}
    finally:
        if owned:
            shutil.rmtree(work, ignore_errors=True)


def _read_results(folder: Path, assignment: str,
                  students: list[str]) -> dict[str, dict[str, NotebookResult]]:
    from nbgrader.api import Gradebook, MissingEntry

    results: dict[str, dict[str, NotebookResult]] = {}
    db_url = "sqlite:///" + str(folder / "gradebook.db")
    log_tail = (folder / "autograde.log").read_text(errors="replace").splitlines()[-15:]
    with Gradebook(db_url) as gradebook:
        names = [nb.name for nb in gradebook.find_assignment(assignment).notebooks]
        for student in students:
            results[student] = {}
            for name in names:
                filename = f"{name}.ipynb"
                graded = folder / "autograded" / student / assignment / filename
                try:
                    submission = gradebook.find_submission_notebook(name, assignment, student)
                except MissingEntry:
                    raise CourseError(
                        f"nbgrader did not grade {student}'s {filename}:\n" + "\n".join(log_tail)
                    ) from None
                messages = _error_messages(read_notebook(graded)) if graded.exists() else {}
                result = NotebookResult(student, filename)
                for grade in submission.grades:
                    result.cells[grade.name] = CellResult(
                        float(grade.score or 0.0), float(grade.max_score or 0.0),
                        messages.get(grade.name, ""))
                results[student][filename] = result
    return results
