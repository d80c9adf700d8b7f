"""What the instructor hands in: a folder in nbgrader's layout or an LMS zip, read into one
`Submission` per student and assignment (a missing notebook is a submission of nothing)."""

from __future__ import annotations

import hashlib
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from autograder import course
from autograder.errors import CourseError

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
TIMESTAMP = "timestamp.txt"  # written by nbgrader's submit beside each submission
# the files nbgrader's exchange keeps beside a submission: its time, and the secret its
# feedback is released under (release_feedback reads both from the feedback folder)
EXCHANGE_FILES = (TIMESTAMP, "submission_secret.txt")
EXCHANGE_FILE_LIMIT = 1024  # bytes: they hold a line each


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
    timestamp: str | None = None  # when it was submitted, from nbgrader's timestamp.txt
    exchange_files: dict = field(default_factory=dict)  # EXCHANGE_FILES found, as text

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
    extras: dict[str, dict[str, str]] = {}  # folder -> EXCHANGE_FILES found there
    if source.is_dir():
        files = {str(p.relative_to(source)): p.read_bytes()
                 for p in sorted(source.rglob("*.ipynb"))
                 if ".ipynb_checkpoints" not in p.parts}
        for name in EXCHANGE_FILES:
            for p in source.rglob(name):
                if p.is_file() and p.stat().st_size <= EXCHANGE_FILE_LIMIT:
                    extras.setdefault(str(p.parent.relative_to(source)), {})[name] = \
                        p.read_text(errors="replace")
    elif zipfile.is_zipfile(source):
        with zipfile.ZipFile(source) as archive:
            files = {info.filename: archive.read(info) for info in archive.infolist()
                     if info.filename.endswith(".ipynb") and not info.is_dir()
                     and "__MACOSX" not in info.filename}
            for info in archive.infolist():
                name = Path(info.filename).name
                if name in EXCHANGE_FILES and info.file_size <= EXCHANGE_FILE_LIMIT:
                    extras.setdefault(str(Path(info.filename).parent), {})[name] = \
                        archive.read(info).decode(errors="replace")
    else:
        raise CourseError(f"{source} is neither a folder nor a zip file.")
    by_notebook = {nb: a for a in known for nb in notebook_names(root, a)}
    found: dict[tuple[str, str], tuple[int, Submission]] = {}
    ignored = []
    seen: set[str] = set()
    canvas_ids: dict[str, set[str]] = {}  # student -> the Canvas user ids of their files
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
        if canvas_user_id(name):
            canvas_ids.setdefault(student, set()).add(canvas_user_id(name))
        if assignments and assignment not in assignments:
            continue
        key = (student, assignment)
        if key in found and found[key][0] >= version:
            continue
        beside = extras.get(str(Path(name).parent), {})
        found[key] = (version, Submission(student, assignment, notebook, name, data,
                                          _timestamp(beside.get(TIMESTAMP)), beside))
    for student, ids in sorted(canvas_ids.items()):
        if len(ids) > 1:  # Canvas names files by name: two students of one name
            log(f"warning: the files of {student} are of {len(ids)} Canvas users (ids "
                f"{', '.join(sorted(ids))}): one student id for both, so one submission of "
                "each assignment is graded; rename one's files (the name before the first "
                "'_') and grade again")
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


def _timestamp(text: str | None) -> str | None:
    """nbgrader's timestamp.txt as an ISO time in UTC; None when absent or unreadable."""
    if not text or not text.strip():
        return None
    from nbgrader.utils import parse_utc

    try:
        return parse_utc(text.strip()).isoformat()
    except (ValueError, OverflowError, TypeError):
        return None


# Canvas' download: `<name>_[LATE_]<user id>_<submission id>_<the file as uploaded>`
CANVAS_NAME = re.compile(r"^[^_]+_(?:LATE_)?(?P<user>\d+)_(?P<submission>\d+)_")


def canvas_user_id(origin: str) -> str | None:
    """The Canvas user id in the name of a file of a Canvas submissions download (a
    `Submission`'s or `Result`'s origin); None for other names."""
    match = CANVAS_NAME.match(Path(origin).name) if origin else None
    return match["user"] if match else None


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
