"""The class folder's records: a result per submission kept in `OUT/results/`, and the class
gradebook (nbgrader's), written by one process only."""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autograder import course
from autograder.cells import grade_id, nbgrader_meta


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
    timestamp: str | None = None  # when it was submitted (ISO, UTC), if the exchange said
    exchange_files: dict = field(default_factory=dict)  # nbgrader's files beside it (intake)

    @property
    def score(self) -> float:
        return sum(c["score"] or 0.0 for c in self.cells.values())

    @property
    def max_score(self) -> float:
        return sum(c["max_score"] for c in self.cells.values())

    @property
    def failed(self) -> bool:
        return bool(self.fatal) or any(
            n.startswith(("the kernel", "cell", "a cell", "test ", "before ", "grading stopped"))
            and " raised an error" not in n for n in self.notes) or any(
            "ran past the time limit" in n for n in self.notes)  # a cell or test stopped


def results_path(out: Path, assignment: str, student: str) -> Path:
    return out / "results" / assignment / f"{student}.json"


def save_result(out: Path, result: Result) -> Path:
    """Keep `result` in `OUT/results/`, where `load_results` reads it."""
    path = results_path(out, result.assignment, result.student)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(result), indent=1, sort_keys=True), encoding="utf-8")
    return path


def load_results(out: Path) -> list[Result]:
    return [Result(**json.loads(p.read_text(encoding="utf-8")))
            for p in sorted((out / "results").glob("*/*.json"))]


def zero_cells(release) -> dict:
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
        from nbgrader.utils import parse_utc

        with Gradebook(self.db_url) as gradebook:
            gradebook.update_or_create_student(result.student)
            try:
                gradebook.remove_submission(result.assignment, result.student)
            except MissingEntry:
                pass
        with Gradebook(self.db_url) as gradebook:
            stamp = {"timestamp": parse_utc(result.timestamp)} if result.timestamp else {}
            # with the time, nbgrader (the formgrader) marks a submission after the due date
            submission = gradebook.add_submission(result.assignment, result.student, **stamp)
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
            # as nbgrader's autograde does: generate_feedback and release_feedback read them
            for name, text in result.exchange_files.items():
                (target.parent / name).write_text(text, encoding="utf-8")
        elif target.exists():
            target.unlink()


def lateness(out: Path) -> dict[tuple[str, str], float]:
    """(student, assignment) -> seconds submitted after the assignment's due date, for the
    submissions the gradebook holds with a time and whose assignment has a due date (what
    that costs: autograder.late)."""
    from nbgrader.api import Gradebook

    late = {}
    with Gradebook("sqlite:///" + str(out / "gradebook.db")) as gradebook:
        for assignment in gradebook.assignments:
            if assignment.duedate is None:
                continue
            for submission in assignment.submissions:
                seconds = submission.total_seconds_late
                if seconds and seconds > 0:
                    late[(submission.student.id, assignment.name)] = float(seconds)
    return late


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
        digest = course.assignment_digest(root, assignment)
        if known and stamps.get(assignment) == digest:
            continue
        stamps[assignment] = digest
        shutil.rmtree(out / course.SOURCE_DIR / assignment, ignore_errors=True)
        shutil.copytree(root / course.SOURCE_DIR / assignment,
                        out / course.SOURCE_DIR / assignment, ignore=course.IGNORED)
        log(f"generating {assignment} in {out} (once; later runs reuse it) ...")
        course.run_nbgrader(["generate_assignment", assignment, "--force"], cwd=out)
        stamps_path.write_text(json.dumps(stamps, indent=1))
