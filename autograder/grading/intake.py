"""What the instructor hands in: a folder in nbgrader's layout or an LMS zip, read into one
`Submission` per student and assignment (a missing notebook is a submission of nothing);
every file not graded is listed, with why."""

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
            log=print, skipped: list | None = None) -> list[Submission]:
    """The submissions in `source`: a folder (nbgrader layout, `submitted/` optional) or a
    zip (the same layout inside, or LMS-style flat names `<student>_..._<notebook>.ipynb`).
    Every file not graded is logged with why, and added to `skipped` as (name, why)."""
    skipped = [] if skipped is None else skipped
    source = Path(source)
    known = course.assignments(root)
    for name in assignments or []:
        if name not in known:
            raise CourseError(f"There is no assignment {name!r} (known: {', '.join(known)}).")
    if not source.exists():
        raise CourseError(f"{source} does not exist: give a folder of submissions or a zip.")
    extras: dict[str, dict[str, str]] = {}  # folder -> EXCHANGE_FILES found there
    if source.is_dir():
        listing = [(str(p.relative_to(source)), p.stat().st_size)
                   for p in sorted(source.rglob("*")) if p.is_file()]
        read = lambda name: (source / name).read_bytes()  # noqa: E731
    elif zipfile.is_zipfile(source):
        with zipfile.ZipFile(source) as archive:
            listing = [(i.filename, i.file_size) for i in archive.infolist() if not i.is_dir()]
            contents = {name: archive.read(name) for name, size in listing
                        if _kept(name, size) is None}
        read = contents.__getitem__
    else:
        raise CourseError(f"{source} is neither a folder nor a zip file.")
    files = {}
    for name, size in listing:
        why = _kept(name, size)
        if why:
            skipped.append((name, why))
        elif name.endswith(".ipynb"):
            files[name] = read(name)
        else:
            extras.setdefault(str(Path(name).parent), {})[Path(name).name] = \
                read(name).decode(errors="replace")
    by_notebook = {nb: a for a in known for nb in notebook_names(root, a)}
    found: dict[tuple[str, str], tuple[int, Submission]] = {}
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
            skipped.append((name, "names no student and notebook of the course"))
            continue
        if not STUDENT_ID.match(student):
            skipped.append((name, f"the student id {student!r} is not letters, digits, '.', "
                                  "'_' or '-'"))
            continue
        seen.add(student)
        if canvas_user_id(name):
            canvas_ids.setdefault(student, set()).add(canvas_user_id(name))
        if assignments and assignment not in assignments:
            continue
        key = (student, assignment)
        if key in found and found[key][0] >= version:
            skipped.append((name, f"an older submission: {found[key][1].origin} is graded"))
            continue
        if key in found:
            skipped.append((found[key][1].origin, f"an older submission: {name} is graded"))
        beside = extras.get(str(Path(name).parent), {})
        found[key] = (version, Submission(student, assignment, notebook, name, data,
                                          _timestamp(beside.get(TIMESTAMP)), beside))
    for student, ids in sorted(canvas_ids.items()):
        if len(ids) > 1:  # Canvas names files by name: two students of one name
            log(f"warning: the files of {student} are of {len(ids)} Canvas users (ids "
                f"{', '.join(sorted(ids))}): one student id for both, so one submission of "
                "each assignment is graded; rename one's files (the name before the first "
                "'_') and grade again")
    if skipped:
        log(f"skipped {len(skipped)} file(s) of {source.name}, not graded:")
        for name, why in skipped[:LISTED]:
            log(f"  {name}: {why}")
        if len(skipped) > LISTED:
            log(f"  and {len(skipped) - LISTED} more: every one is listed in {SKIPPED} in "
                "the grading folder")
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


LISTED = 20  # skipped files named in the terminal; SKIPPED in the grading folder has all
SKIPPED = "skipped-files.txt"


def _kept(name: str, size: int) -> str | None:
    """Why the file `name` of a submissions folder or zip is not read (None: it is)."""
    parts = Path(name).parts
    if "__MACOSX" in parts:
        return "macOS's archive metadata"
    if ".ipynb_checkpoints" in parts:
        return "a JupyterLab checkpoint (an autosaved copy), not the submission"
    if name.endswith(".ipynb"):
        return None
    if parts[-1] in EXCHANGE_FILES:
        return None if size <= EXCHANGE_FILE_LIMIT else \
            f"larger than nbgrader's {parts[-1]} ever is ({EXCHANGE_FILE_LIMIT} bytes): not read"
    return "not a notebook (only .ipynb files are graded)"


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


def canvas_marked_late(origin: str) -> bool:
    """Whether Canvas's download marked the file late (`name_LATE_userid_...`)."""
    match = CANVAS_NAME.match(Path(origin).name) if origin else None
    return bool(match) and "_LATE_" in Path(origin).name[:match.end()]


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
