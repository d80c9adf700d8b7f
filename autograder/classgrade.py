"""Grading a whole class on top of nbgrader: parallel, robust to bad submissions, incremental.

`course-grade class INPUT -a 01-autodiff` reads a folder in nbgrader's
`submitted/{student}/{assignment}/` layout or an LMS zip, and grades every submission:

1. The main process reads each file and sorts out what nbgrader cannot grade (empty, not
   JSON, not a notebook, another assignment's notebook); those score 0 with the reason.
   It converts old notebook formats, puts back deleted test cells, notes edited test cells
   and duplicated grade ids, and adds the guard cells of `autograder.sandbox`.
2. Worker processes (`--workers`, default: the number of cores) each hold a private copy of
   the course folder (no solution notebook in it, no other student's work) and grade one
   submission at a time with nbgrader's own autograde (its gradebook, checksums and
   preprocessors), executing with `autograder.executor.GuardedExecute`: a per-cell time
   limit, a memory limit, an output cap, and a dead kernel that does not stop the run.
3. The main process is the one writer of the class gradebook (`OUT/gradebook.db`, nbgrader's
   own): it records each result as it arrives, with the autograded notebook, so nbgrader's
   formgrader and `generate_feedback` work on `OUT` as on any course.
4. Reports, from every result kept in `OUT/results/`: `grades.csv`, a feedback page per
   student and assignment (`OUT/feedback/`), a class summary (`summary.png` and the
   terminal).

A submission whose file and assignment have not changed since the last run is not graded
again (`--force` regrades), so adding a student grades that student only.
"""

from __future__ import annotations

import ast
import concurrent.futures as futures
import copy
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from autograder import course
from autograder.errors import CourseError
from autograder.executor import FINDINGS
from autograder.notebooks import grade_id, is_test, nbgrader_meta, read_notebook
from autograder.sandbox import restore_source, snapshot_source

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


# ---------------------------------------------------------------------------------------
# What the instructor hands in
# ---------------------------------------------------------------------------------------

@dataclass
class Submission:
    student: str
    assignment: str
    notebook: str  # the file name nbgrader expects, e.g. autodiff.ipynb
    origin: str  # where it came from, for messages
    data: bytes | None  # None: nothing was submitted

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.data or b"").hexdigest()


def notebook_names(root: Path, assignment: str) -> list[str]:
    return [p.name for p in course.solution_notebooks(root, assignment)]


def collect(root: Path, source: Path, assignments: list[str] | None = None,
            log=print) -> list[Submission]:
    """The submissions in `source`: a folder (nbgrader layout, `submitted/` optional) or a
    zip (the same layout inside, or LMS-style flat names `<student>_..._<notebook>.ipynb`)."""
    source = Path(source)
    known = course.assignments(root)
    for name in assignments or []:
        if name not in known:
            raise CourseError(f"There is no assignment {name!r} (known: {', '.join(known)}).")
    if not source.exists():
        raise CourseError(f"{source} does not exist: give a folder of submissions or a zip.")
    if source.is_dir():
        files = {str(p.relative_to(source)): p.read_bytes()
                 for p in sorted(source.rglob("*.ipynb"))
                 if ".ipynb_checkpoints" not in p.parts}
    elif zipfile.is_zipfile(source):
        with zipfile.ZipFile(source) as archive:
            files = {info.filename: archive.read(info) for info in archive.infolist()
                     if info.filename.endswith(".ipynb") and not info.is_dir()
                     and "__MACOSX" not in info.filename}
    else:
        raise CourseError(f"{source} is neither a folder nor a zip file.")
    by_notebook = {nb: a for a in known for nb in notebook_names(root, a)}
    found: dict[tuple[str, str], tuple[int, Submission]] = {}
    ignored = []
    seen: set[str] = set()
    for name, data in files.items():
        parts = Path(name).parts
        if parts and parts[0] == "submitted":
            parts = parts[1:]
        student = assignment = notebook = None
        version = 0
        if len(parts) == 3 and parts[1] in known:
            student, assignment, notebook = parts
        elif len(parts) >= 1:
            student, notebook, version = _lms_name(parts[-1], by_notebook)
            assignment = by_notebook.get(notebook)
        if not student or assignment is None or notebook not in notebook_names(root, assignment):
            ignored.append(name)
            continue
        if not STUDENT_ID.match(student):
            log(f"ignored {name}: the student id {student!r} is not letters, digits, '.', "
                "'_' or '-'")
            continue
        seen.add(student)
        if assignments and assignment not in assignments:
            continue
        key = (student, assignment)
        if key in found and found[key][0] >= version:
            continue
        found[key] = (version, Submission(student, assignment, notebook, name, data))
    if ignored:
        shown = ", ".join(ignored[:5]) + (f" and {len(ignored) - 5} more" if len(ignored) > 5
                                          else "")
        log(f"ignored {len(ignored)} file(s) that name no student and notebook of the "
            f"course: {shown}")
    wanted = assignments or sorted({a for _, a in found})
    students = sorted(seen)
    submissions = []
    for student in students:
        for assignment in wanted:
            if (student, assignment) in found:
                submissions.append(found[(student, assignment)][1])
            else:
                submissions.append(Submission(student, assignment,
                                              notebook_names(root, assignment)[0], "", None))
    return submissions


def _lms_name(filename: str, by_notebook: dict[str, str]) -> tuple[str | None, str | None, int]:
    """(student, notebook, resubmission number) from an LMS download's file name:
    `<student>_<anything>_<notebook>.ipynb`; Canvas' `-1`, `-2` resubmission suffixes."""
    for notebook in sorted(by_notebook, key=len, reverse=True):
        stem = notebook[:-len(".ipynb")]
        match = re.match(rf"^(?P<student>[^_]+)_(?:.*_)?{re.escape(stem)}(?:-(?P<n>\d+))?"
                         r"\.ipynb$", filename)
        if match:
            return match["student"], notebook, int(match["n"] or 0)
    return None, None, 0


# ---------------------------------------------------------------------------------------
# Reading a submission: what nbgrader cannot grade, and what it should be told
# ---------------------------------------------------------------------------------------

@dataclass
class Prepared:
    notebook: nbformat.NotebookNode | None
    notes: list[str] = field(default_factory=list)
    fatal: str | None = None  # why it scores 0 without running


def prepare_submission(sub: Submission, release: nbformat.NotebookNode,
                       other_ids: dict[str, set[str]]) -> Prepared:
    if sub.data is None:
        return Prepared(None, fatal=f"no {sub.notebook} was submitted")
    if not sub.data.strip():
        return Prepared(None, fatal=f"{sub.notebook} is an empty file")
    try:
        text = sub.data.decode("utf-8")
        raw = json.loads(text)
    except UnicodeDecodeError:
        return Prepared(None, fatal=f"{sub.notebook} is not a notebook: not UTF-8 text")
    except json.JSONDecodeError as error:
        return Prepared(None, fatal=f"{sub.notebook} is not a notebook: not valid JSON "
                                    f"({error.msg} at line {error.lineno})")
    if not isinstance(raw, dict) or not ("cells" in raw or "worksheets" in raw):
        return Prepared(None, fatal=f"{sub.notebook} is JSON but not a notebook (no cells)")
    notes = []
    version = raw.get("nbformat")
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as error:  # nbformat raises several kinds
        return Prepared(None, fatal=f"{sub.notebook} is not a notebook nbformat can read "
                                    f"(nbformat {version}): {str(error).splitlines()[0]}")
    if isinstance(version, int) and version < 4:
        notes.append(f"the notebook was saved as nbformat {version}; it was converted to "
                     "nbformat 4 and graded")
    ids = [grade_id(c) for c in nb.cells if grade_id(c)]
    wanted = [grade_id(c) for c in release.cells if grade_id(c)]
    if ids and not set(ids) & set(wanted):
        for other, other_set in other_ids.items():
            if set(ids) & other_set:
                return Prepared(None, fatal=f"this is the notebook of assignment {other}, "
                                            f"not of {sub.assignment}")
        return Prepared(None, fatal=f"{sub.notebook} has no graded cell of {sub.assignment}")
    if not ids:
        notes.append("the notebook has no graded cells left (was it copied into a new "
                     "notebook?): nbgrader put back the test cells, the answers are missing")
    counts = {i: ids.count(i) for i in set(ids)}
    for gid, count in sorted(counts.items()):
        if count > 1:
            notes.append(f"grade id {gid} appears in {count} cells; the last of them was "
                         "graded and the others ran as ordinary cells")
            # nbgrader's DeduplicateIds does the same but leaves an empty nbgrader entry,
            # which its later steps fail on (KeyError: 'grade_id'): drop the entry instead.
            for cell in [c for c in nb.cells if grade_id(c) == gid][:-1]:
                cell.metadata.pop("nbgrader", None)
    release_tests = {grade_id(c): c.source for c in release.cells if is_test(c)}
    for cell in nb.cells:
        gid = grade_id(cell)
        if gid in release_tests and cell.source.strip() != release_tests[gid].strip():
            notes.append(f"test cell {gid} had been changed; the original test ran")
    missing = [gid for gid in release_tests if gid not in counts]
    if missing:
        _put_back(nb, release, missing)
        notes.append(f"test cell(s) {', '.join(missing)} had been deleted; they were put "
                     "back and ran")
    _add_guards(nb, release)
    return Prepared(nb, notes)


def _put_back(nb, release, missing: list[str]) -> None:
    """Insert the release's test cells `missing` after the cell that precedes them there."""
    order = [grade_id(c) for c in release.cells if grade_id(c)]
    by_id = {grade_id(c): c for c in release.cells if grade_id(c)}
    for gid in missing:
        position = len(nb.cells)
        for earlier in reversed(order[:order.index(gid)]):
            hits = [i for i, c in enumerate(nb.cells) if grade_id(c) == earlier]
            if hits:
                position = hits[-1] + 1
                break
        original = by_id[gid]
        nb.cells.insert(position, nbformat.v4.new_code_cell(
            original.source, metadata=copy.deepcopy(original.metadata)))


def release_imports(release: nbformat.NotebookNode) -> str:
    """The import statements of the release's ordinary code cells (the setup cell's)."""
    lines = []
    for cell in release.cells:
        if cell.cell_type != "code" or nbgrader_meta(cell):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                if not (module or "").startswith("autograder"):
                    lines.append(ast.unparse(node))
    return "\n".join(dict.fromkeys(lines))


def _add_guards(nb, release) -> None:
    imports = release_imports(release)
    cells = [nbformat.v4.new_code_cell(snapshot_source())]
    for cell in nb.cells:
        if is_test(cell):
            cells.append(nbformat.v4.new_code_cell(restore_source(grade_id(cell), imports)))
        cells.append(cell)
    nb.cells = cells
    for cell in nb.cells:
        cell.pop("id", None)
    nb.nbformat, nb.nbformat_minor = 4, 4  # no cell ids needed, none to collide


# ---------------------------------------------------------------------------------------
# Workers: one submission at a time, each in a private course copy
# ---------------------------------------------------------------------------------------

_WORKER: dict = {}
# Read by TensorFlow (its thread pool for an op's own work) and OpenMP when they start.
THREAD_VARIABLES = ("TF_NUM_INTRAOP_THREADS", "OMP_NUM_THREADS")


def _worker_init(base: str, settings: dict) -> None:
    folder = Path(tempfile.mkdtemp(prefix="worker-", dir=settings["workdir"]))
    shutil.copytree(base, folder / "course", ignore=shutil.ignore_patterns(
        "results", "feedback", "autograded", "submitted", "*.png", "*.csv", "*.log"))
    course_dir = folder / "course"
    # No solutions where a student's code could look for them: nbgrader needs the source
    # folder to exist, not its notebooks (the gradebook holds what it restores).
    for notebook in (course_dir / course.SOURCE_DIR).rglob("*.ipynb"):
        notebook.unlink()
    shutil.rmtree(course_dir / course.RELEASE_DIR, ignore_errors=True)
    course.write_config(Path(settings["root"]), course_dir)
    from nbgrader.api import Gradebook

    with Gradebook("sqlite:///" + str(course_dir / "gradebook.db")) as gradebook:
        for student in list(gradebook.students):  # nothing of other students in here
            gradebook.remove_student(student.id)
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    # The kernels inherit this environment. Each gets its share of the cores for
    # TensorFlow's kernels (and OpenMP), so that the workers do not oversubscribe them;
    # what the instructor set already wins.
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, str(settings["kernel_threads"]))
    # nbgrader's log and the kernels' start-up chatter go to a file, not the terminal
    log_file = os.open(folder / "worker.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(log_file, 2)
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]
    _WORKER.update(folder=folder, course=course_dir, settings=settings)


def _config(course_dir: Path, settings: dict):
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader(course.CONFIG_NAME, path=str(course_dir)).load_config()
    overrides = Config()
    overrides.Autograde.autograde_preprocessors = [
        "autograder.executor.GuardedExecute",
        "nbgrader.preprocessors.IgnorePattern",
        "nbconvert.preprocessors.ClearMetadataPreprocessor",
        "autograder.executor.CollectFindings",
        "nbgrader.preprocessors.LimitOutput",
        "nbgrader.preprocessors.SaveAutoGrades",
        "nbgrader.preprocessors.AssignLatePenalties",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
    overrides.OverwriteCells.add_missing_cells = True
    # The outputs are in once the last cell ran: a graceful shutdown only waits (about
    # 0.1 s a submission) for a kernel whose work is done.
    overrides.Execute.shutdown_kernel = "immediate"
    if settings.get("cell_timeout"):
        overrides.Execute.timeout = settings["cell_timeout"]
    overrides.GuardedExecute.memory_mb = settings["memory_mb"]
    overrides.GuardedExecute.max_output_kb = settings["max_output_kb"]
    config.merge(overrides)
    return config


def _grade_in_worker(student: str, assignment: str, notebook: str, text: str) -> dict:
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    course_dir: Path = _WORKER["course"]
    settings = _WORKER["settings"]
    for sub in ("submitted", "autograded"):
        shutil.rmtree(course_dir / sub, ignore_errors=True)
    target = course_dir / "submitted" / student / assignment / notebook
    target.parent.mkdir(parents=True)
    target.write_text(text, encoding="utf-8")
    config = _config(course_dir, settings)
    started = time.monotonic()
    graded = course_dir / "autograded" / student / assignment / notebook
    retried = False
    for attempt in range(2):
        api = NbGraderAPI(CourseDirectory(config=config), config=config)
        outcome = api.autograde(assignment, student, force=True, create=True)
        if outcome.get("success") and graded.exists():
            break
        # nbgrader gave up on the notebook (not a failing test: those are scores). The
        # student's code is deterministic, so a second run tells a flaky kernel from a
        # notebook that cannot be graded.
        retried = attempt == 0
        (_WORKER["folder"] / "nbgrader-failures.log").open("a").write(
            f"--- {student} {assignment} attempt {attempt + 1}\n{outcome.get('log', '')}\n")
    seconds = time.monotonic() - started
    result = {"seconds": seconds, "cells": {}, "findings": {}, "autograded": None,
              "error": None, "retried": retried}
    if not outcome.get("success") or not graded.exists():
        log_text = str(outcome.get("log", "") or outcome.get("error", ""))
        errors = [line.strip() for line in log_text.splitlines()
                  if re.match(r"^\w*(Error|Exception)\b", line.strip())]
        result["error"] = "nbgrader could not grade it: " + (errors[-1] if errors else " | ".join(
            line.strip() for line in log_text.splitlines()[-4:] if line.strip()))
        return result
    autograded = nbformat.read(str(graded), as_version=4)
    result["autograded"] = nbformat.writes(autograded)
    result["findings"] = dict(autograded.metadata.get(FINDINGS, {}))
    messages = {}
    for cell in autograded.cells:
        if grade_id(cell):
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    messages[grade_id(cell)] = f"{out.get('ename', '')}: {out.get('evalue', '')}"
    name = notebook[:-len(".ipynb")]
    with Gradebook("sqlite:///" + str(course_dir / "gradebook.db")) as gradebook:
        submission = gradebook.find_submission_notebook(name, assignment, student)
        for grade in submission.grades:
            result["cells"][grade.name] = {
                "score": None if grade.auto_score is None else float(grade.auto_score),
                "max_score": float(grade.max_score or 0.0),
                "needs_manual_grade": bool(grade.needs_manual_grade),
                "message": messages.get(grade.name, ""),
            }
        gradebook.remove_submission(assignment, student)
    for sub in ("submitted", "autograded"):
        shutil.rmtree(course_dir / sub, ignore_errors=True)
    return result


# ---------------------------------------------------------------------------------------
# The one writer, and the results kept between runs
# ---------------------------------------------------------------------------------------

@dataclass
class Result:
    student: str
    assignment: str
    notebook: str
    origin: str
    digest: str
    assignment_digest: str
    cells: dict = field(default_factory=dict)  # grade id -> score, max_score, message, ...
    notes: list = field(default_factory=list)
    fatal: str | None = None
    seconds: float = 0.0

    @property
    def score(self) -> float:
        return sum(c["score"] or 0.0 for c in self.cells.values())

    @property
    def max_score(self) -> float:
        return sum(c["max_score"] for c in self.cells.values())

    @property
    def failed(self) -> bool:
        return bool(self.fatal) or any(
            n.startswith(("the kernel", "cell", "a cell")) for n in self.notes)


def _assignment_digest(root: Path, assignment: str) -> str:
    digest = hashlib.sha256()
    for path in sorted((root / course.SOURCE_DIR / assignment).rglob("*.ipynb")):
        digest.update(path.read_bytes())
    digest.update((root / course.CONFIG_NAME).read_bytes())
    return digest.hexdigest()[:16]


def _results_path(out: Path, assignment: str, student: str) -> Path:
    return out / "results" / assignment / f"{student}.json"


def load_results(out: Path) -> list[Result]:
    return [Result(**json.loads(p.read_text(encoding="utf-8")))
            for p in sorted((out / "results").glob("*/*.json"))]


def _zero_cells(release) -> dict:
    return {grade_id(c): {"score": 0.0, "max_score": float(nbgrader_meta(c).get("points", 0)),
                          "needs_manual_grade": False, "message": ""}
            for c in release.cells if nbgrader_meta(c).get("grade")}


class ClassGradebook:
    """The class gradebook (nbgrader's), written by this process only."""

    def __init__(self, out: Path):
        self.db_url = "sqlite:///" + str(out / "gradebook.db")
        self.out = out

    def record(self, result: Result, autograded: str | None) -> None:
        with warnings.catch_warnings():
            # nbgrader's add_submission trips SQLAlchemy's autoflush warnings; harmless
            warnings.simplefilter("ignore")
            self._record(result, autograded)

    def _record(self, result: Result, autograded: str | None) -> None:
        from nbgrader.api import Gradebook, MissingEntry

        with Gradebook(self.db_url) as gradebook:
            gradebook.update_or_create_student(result.student)
            try:
                gradebook.remove_submission(result.assignment, result.student)
            except MissingEntry:
                pass
        with Gradebook(self.db_url) as gradebook:
            submission = gradebook.add_submission(result.assignment, result.student)
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    cell = result.cells.get(grade.name)
                    if cell is None:
                        continue
                    grade.auto_score = cell["score"]
                    grade.needs_manual_grade = cell["needs_manual_grade"]
                for comment in notebook.comments:
                    message = result.cells.get(comment.name, {}).get("message")
                    if message:
                        comment.auto_comment = message
            gradebook.db.commit()
        target = self.out / "autograded" / result.student / result.assignment / result.notebook
        if autograded is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(autograded, encoding="utf-8")
        elif target.exists():
            target.unlink()


def prepare_out(root: Path, out: Path, assignments: list[str], log=print) -> None:
    """`out` as an nbgrader course folder whose gradebook knows `assignments` (generated
    there by nbgrader once; later runs reuse it)."""
    from nbgrader.api import Gradebook, MissingEntry

    out.mkdir(parents=True, exist_ok=True)
    course.write_config(root, out)
    stamps_path = out / "generated.json"  # the sources each assignment was generated from
    stamps = json.loads(stamps_path.read_text()) if stamps_path.exists() else {}
    for assignment in assignments:
        with Gradebook("sqlite:///" + str(out / "gradebook.db")) as gradebook:
            try:
                gradebook.find_assignment(assignment)
                known = (out / course.RELEASE_DIR / assignment).is_dir()
            except MissingEntry:
                known = False
        digest = _assignment_digest(root, assignment)
        if known and stamps.get(assignment) == digest:
            continue
        stamps[assignment] = digest
        shutil.rmtree(out / course.SOURCE_DIR / assignment, ignore_errors=True)
        shutil.copytree(root / course.SOURCE_DIR / assignment,
                        out / course.SOURCE_DIR / assignment, ignore=course.IGNORED)
        log(f"generating {assignment} in {out} (once; later runs reuse it) ...")
        course.run_nbgrader(["generate_assignment", assignment, "--force"], cwd=out)
        stamps_path.write_text(json.dumps(stamps, indent=1))


# ---------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------

@dataclass
class Settings:
    workers: int | None = None
    cell_timeout: int | None = None
    memory_mb: int = 4096
    max_output_kb: int = 256
    force: bool = False
    keep_logs: bool = False  # keep the workers' folders (nbgrader's and the kernels' logs)
    kernel_threads: int | None = None  # threads per kernel; default: cores / workers


def grade_class(root: Path, source: Path, out: Path, assignments: list[str] | None = None,
                settings: Settings | None = None, log=print) -> list[Result]:
    """Grade every submission in `source` into `out`; returns every result `out` holds."""
    settings = settings or Settings()
    for name in ("workers", "cell_timeout", "memory_mb", "max_output_kb", "kernel_threads"):
        value = getattr(settings, name)
        if value is not None and value < 1:
            option = "--" + name.replace("_", "-")
            raise CourseError(f"{option} must be at least 1 (got {value}).")
    out = Path(out).resolve()
    # nbgrader's gradebook calls `alembic` by name: this Python's scripts come first.
    os.environ["PATH"] = course.tool_env()["PATH"]
    submissions = collect(root, Path(source), assignments, log=log)
    if not submissions:
        raise CourseError(f"{source} holds no submission of this course's notebooks.")
    names = sorted({s.assignment for s in submissions})
    prepare_out(root, out, names, log=log)
    releases = {a: read_notebook(out / course.RELEASE_DIR / a / notebook_names(root, a)[0])
                for a in names}
    all_ids = {}
    for a in course.assignments(root):
        for path in course.solution_notebooks(root, a):
            all_ids[a] = {grade_id(c) for c in read_notebook(path).cells if grade_id(c)}
    digests = {a: _assignment_digest(root, a) for a in names}
    writer = ClassGradebook(out)

    todo, unchanged = [], 0
    for sub in submissions:
        path = _results_path(out, sub.assignment, sub.student)
        if path.exists() and not settings.force:
            old = json.loads(path.read_text(encoding="utf-8"))
            if old["digest"] == sub.digest and old["assignment_digest"] == digests[sub.assignment]:
                unchanged += 1
                continue
        todo.append(sub)
    log(f"{len(submissions)} submission(s) of {', '.join(names)}: {len(todo)} to grade, "
        f"{unchanged} unchanged since the last run")

    def finish(sub: Submission, prepared: Prepared, run: dict | None) -> Result:
        result = Result(sub.student, sub.assignment, sub.notebook, sub.origin, sub.digest,
                        digests[sub.assignment], notes=list(prepared.notes),
                        fatal=prepared.fatal)
        autograded = None
        if run is None or run.get("error"):
            result.cells = _zero_cells(releases[sub.assignment])
            if run is not None:
                result.fatal = run["error"]
        else:
            result.cells = run["cells"]
            result.seconds = run["seconds"]
            result.notes += describe_findings(run["findings"])
            if run.get("retried"):
                result.notes.append("nbgrader stopped on the first run (not because of a "
                                    "test); the second run graded it")
            autograded = run["autograded"]
        writer.record(result, autograded)
        path = _results_path(out, sub.assignment, sub.student)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(result), indent=1, sort_keys=True), encoding="utf-8")
        return result

    progress = Progress(len(todo), log)
    runnable = []
    for sub in todo:
        others = {a: ids for a, ids in all_ids.items() if a != sub.assignment}
        prepared = prepare_submission(sub, releases[sub.assignment], others)
        if prepared.fatal:
            progress.done(finish(sub, prepared, None))
        else:
            runnable.append((sub, prepared))
    if runnable:
        workers = max(1, min(settings.workers or os.cpu_count() or 1, len(runnable)))
        worker_settings = {"root": str(root), "cell_timeout": settings.cell_timeout,
                           "memory_mb": settings.memory_mb,
                           "max_output_kb": settings.max_output_kb,
                           "kernel_threads": settings.kernel_threads
                           or max(1, (os.cpu_count() or 1) // workers)}
        workdir = Path(tempfile.mkdtemp(prefix="course-grade-"))
        worker_settings["workdir"] = str(workdir)
        context = multiprocessing.get_context("spawn")
        queue = list(runnable)
        tries: dict[tuple[str, str], int] = {}
        while queue:
            with futures.ProcessPoolExecutor(
                    min(workers, len(queue)), mp_context=context, initializer=_worker_init,
                    initargs=(str(out), worker_settings)) as pool:
                pending = {pool.submit(_grade_in_worker, sub.student, sub.assignment,
                                       sub.notebook, nbformat.writes(prepared.notebook)):
                           (sub, prepared) for sub, prepared in queue}
                queue = []
                for done in futures.as_completed(pending):
                    sub, prepared = pending[done]
                    try:
                        run = done.result()
                    except futures.process.BrokenProcessPool:
                        # a worker process died (not a kernel: those are handled inside);
                        # grade what it held again in a fresh pool, once
                        key = (sub.student, sub.assignment)
                        tries[key] = tries.get(key, 0) + 1
                        if tries[key] < 2:
                            queue.append((sub, prepared))
                            continue
                        run = {"error": "the grading process died twice on it"}
                    except Exception as error:  # the grader failed on this submission only
                        run = {"error": f"the grader failed on it ({type(error).__name__}: "
                                        f"{error})"}
                    progress.done(finish(sub, prepared, run))
        if settings.keep_logs:
            log(f"worker logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    log(f"graded {len(todo)} submission(s) in {progress.elapsed():.1f} s")
    return load_results(out)


def describe_findings(findings: dict) -> list[str]:
    notes = []
    for cell in findings.get("timeouts", []):
        notes.append(f"cell {cell + 1} ran past the time limit and was stopped")
    if findings.get("died"):
        notes.append(f"the kernel stopped in cell {findings['died']['cell'] + 1}: "
                     f"{findings['died']['reason']}; the cells after it did not run")
    for cell in findings.get("truncated", []):
        notes.append(f"cell {cell + 1} printed more output than the limit; the rest was dropped")
    for item in findings.get("restored", []):
        notes.append(f"before {item['before']}, the notebook had replaced "
                     f"{', '.join(item['names'])}; the originals were put back")
    for error in findings.get("guard_errors", []):
        notes.append(f"the grader's guard could not run ({error})")
    return notes


class Progress:
    def __init__(self, total: int, log):
        self.total, self.log, self.count, self.failures = total, log, 0, 0
        self.started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def done(self, result: Result) -> None:
        self.count += 1
        self.failures += result.failed
        left = self.elapsed() / self.count * (self.total - self.count)
        reason = f"  ({result.fatal})" if result.fatal else ""
        self.log(f"[{self.count:>3}/{self.total}] {result.student} {result.assignment}: "
                 f"{result.score:g}/{result.max_score:g}{reason}  | problems so far "
                 f"{self.failures}, about {left:.0f} s left")


def report(root: Path, out: Path, results: list[Result]) -> str:
    """Write grades.csv, the feedback pages and the summary; return the terminal summary."""
    from autograder import reports

    names = sorted({r.assignment for r in results})
    releases = {a: read_notebook(out / course.RELEASE_DIR / a / notebook_names(root, a)[0])
                for a in names}
    stats = reports.write_all(results, releases, out)
    (out / "summary.json").write_text(json.dumps(stats, indent=1), encoding="utf-8")
    problems = [r for r in results if r.fatal]
    lines = [reports.summary_text(stats), "",
             f"{len(results)} submission(s); {len(problems)} could not be run"]
    for r in problems:
        lines.append(f"  {r.student} {r.assignment}: {r.fatal}")
    lines += [f"grades:   {out / 'grades.csv'}", f"feedback: {out / 'feedback'}/<student>/"
              "<assignment>.html", f"summary:  {out / 'summary.png'}",
              f"gradebook (nbgrader formgrader works here): {out / 'gradebook.db'}"]
    return "\n".join(lines)
