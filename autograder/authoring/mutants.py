"""Prove the tests: grade plausible wrong answers and other correct ones with the grading
engine (autograder.engine: nbgrader's autograde, the kernel in the sandbox), the engine
`course-grade class` and `course-grade self` use.

For an answer cell with grade id X, `tests/mutants/<assignment>/X/` holds
replacement sources for that cell:

- `wrong_*.py`: a plausible mistake; it must lose points on X's tests while every
  other exercise of the same submission keeps full marks;
- `ok_*.py`: another correct solution; it must score full marks.

A wrong mutant breaks a requirement the notebook states, so the visible tests (what
Validate runs) must fail on it too: a learner whose Validate passes loses no points to a
stated requirement. The exception is an answer fitted to the visible examples, which only
the hidden tests' other inputs can catch: its file says so in a line
`# Only hidden tests catch it: <the kind of case>`, and the exercise's text must say
that such cases are tested.

A submission is the release notebook with every answer taken from the solution,
except the replaced ones; one submission carries one mutant of every exercise, so a
notebook needs about as many submissions as its largest mutant set, plus a blank one
and a perfect one.

Each exercise's points depend on that exercise alone. Where one exercise calls another
(clip_rows calling deduplicate), the caller's tests run it with the library's known-good
callee (`embeddings_course.mirrors.known_good`). The planner never puts a wrong mutant
beside a wrong mutant of an exercise it calls or that calls it, so every wrong callee
is graded beside a right caller (the solution's or an `ok_` one), and that caller must
keep full marks: the proof that a wrong callee costs only its own points.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder import course
from autograder.cells import (
    exercises,
    grade_id,
    is_answer,
    read_notebook,
    strip_solution_markers,
)
from autograder.grading import autograde

BLANK = "blank"
HIDDEN_ONLY = "Only hidden tests catch it:"
PERFECT = "solution"


@dataclass(frozen=True)
class Mutant:
    exercise: str
    path: Path

    @property
    def kind(self) -> str:
        return "wrong" if self.path.name.startswith("wrong_") else "ok"

    @property
    def label(self) -> str:
        return f"{self.exercise}/{self.path.name}"

    def source(self) -> str:
        return self.path.read_text(encoding="utf-8").rstrip() + "\n"

    @property
    def hidden_only(self) -> str:
        """The kind of case only hidden tests have, for a mistake only they catch; ""."""
        found = re.search(rf"^# {re.escape(HIDDEN_ONLY)}\s*(.+)$", self.source(), re.M)
        return found.group(1).strip() if found else ""


def discover(mutants_dir: Path) -> dict[str, list[Mutant]]:
    """Exercise grade id -> its mutants, sorted by file name."""
    found: dict[str, list[Mutant]] = {}
    if not mutants_dir.is_dir():
        return found
    for folder in sorted(p for p in mutants_dir.iterdir() if p.is_dir()):
        files = sorted(p for p in folder.glob("*.py")
                       if p.name.startswith(("wrong_", "ok_")))
        if files:
            found[folder.name] = [Mutant(folder.name, p) for p in files]
    return found


def plan(mutants: dict[str, list[Mutant]],
         callees: dict[str, set[str]] | None = None) -> list[dict[str, Mutant]]:
    """Submissions, each carrying at most one mutant of every exercise.

    Without `callees`, submission k carries the k-th mutant of every exercise. With
    `callees` (exercise -> the exercises its solution calls), a wrong mutant never shares a
    submission with a wrong mutant of an exercise it calls or that calls it: its points must
    be lost to its own mistake, not to a broken callee's. Such mutants get a later
    submission (one more, where needed).
    """
    if not callees:
        depth = max((len(m) for m in mutants.values()), default=0)
        return [{ex: ms[k] for ex, ms in mutants.items() if k < len(ms)}
                for k in range(depth)]
    related = {ex: set(callees.get(ex, ())) | {o for o, cs in callees.items() if ex in cs}
               for ex in mutants}
    slots: list[dict[str, Mutant]] = []
    for exercise, found in mutants.items():
        for mutant in found:
            for slot in slots:
                if exercise in slot:
                    continue
                if mutant.kind == "wrong" and any(
                        other in slot and slot[other].kind == "wrong"
                        for other in related[exercise]):
                    continue
                slot[exercise] = mutant
                break
            else:
                slots.append({exercise: mutant})
    return slots


def build_submission(release: nbformat.NotebookNode, solution: nbformat.NotebookNode,
                     replacements: dict[str, str] | None) -> nbformat.NotebookNode:
    """The release notebook with answers filled in: `replacements` first, else the solution.

    `replacements=None` leaves the release blank, as a student who did nothing.
    """
    nb = copy.deepcopy(release)
    if replacements is None:
        return nb
    answers = {grade_id(c): strip_solution_markers(c.source)
               for c in solution.cells if is_answer(c)}
    for cell in nb.cells:
        if is_answer(cell):
            gid = grade_id(cell)
            cell.source = replacements.get(gid, answers[gid])
    return nb


@dataclass
class Verdict:
    student: str
    mutant: Mutant | None  # the mutant of `exercise` in this submission, if any
    exercise: str
    score: float
    max_score: float
    messages: list[str]
    # the wrong mutants of exercises that this exercise's solution calls
    wrong_callees: tuple[str, ...] = ()
    visible_failure: bool = False  # a visible test failed: Validate would have said so

    @property
    def validate_passes_wrongly(self) -> bool:
        """A wrong mutant of a stated requirement that only the hidden tests caught."""
        return (self.mutant is not None and self.mutant.kind == "wrong" and
                not self.mutant.hidden_only and self.score < self.max_score and
                not self.visible_failure)

    @property
    def hidden_only_stale(self) -> bool:
        """A wrong mutant said to be caught by hidden tests only that a visible test
        caught: its `# Only hidden tests catch it:` line no longer holds."""
        return (self.mutant is not None and self.mutant.kind == "wrong" and
                bool(self.mutant.hidden_only) and self.visible_failure)

    @property
    def expected_full(self) -> bool:
        return self.mutant is None or self.mutant.kind == "ok"

    @property
    def ok(self) -> bool:
        if self.student == BLANK:
            return self.score == 0
        if self.expected_full:
            return self.score == self.max_score
        return (self.score < self.max_score and not self.validate_passes_wrongly
                and not self.hidden_only_stale)

    def describe(self) -> str:
        who = self.mutant.label if self.mutant else self.student
        want = ("0" if self.student == BLANK else
                "full marks" if self.expected_full else f"less than {self.max_score:g}")
        text = f"{who}: {self.exercise} scored {self.score:g}/{self.max_score:g}, expected {want}"
        if self.validate_passes_wrongly:
            text = (f"{who}: only hidden tests of {self.exercise} failed, so Validate passes "
                    f"it; a visible test should check the requirement it breaks (or the file "
                    f"says '# {HIDDEN_ONLY} <the kind of case>')")
        if self.hidden_only_stale:
            text = (f"{who}: a visible test of {self.exercise} failed, but the file says "
                    f"'# {HIDDEN_ONLY} ...': drop that line, or find the mistake that only "
                    "hidden tests catch")
        failing = [m for m in self.messages if m]
        if failing:
            text += "; failing checks: " + " | ".join(m.splitlines()[0][:200] for m in failing)
        return text


def callees_of(graded_exercises: dict) -> dict[str, set[str]]:
    """Exercise -> the other exercises its solution calls."""
    return {name: {other for other in graded_exercises if other != name and
                   re.search(rf"\b{re.escape(other)}\s*\(", info.answer_source)}
            for name, info in graded_exercises.items()}


def submissions(release, solution, mutants: dict[str, list[Mutant]],
                callees: dict[str, set[str]]):
    """The harness's submissions (student -> notebook) and the mutants each carries."""
    built = {BLANK: build_submission(release, solution, None),
             PERFECT: build_submission(release, solution, {})}
    carried: dict[str, dict[str, Mutant]] = {BLANK: {}, PERFECT: {}}
    for k, chosen in enumerate(plan(mutants, callees), start=1):
        student = f"mutants{k:02d}"
        replacements = {ex: m.source() for ex, m in chosen.items()}
        built[student] = build_submission(release, solution, replacements)
        carried[student] = chosen
    return built, carried


def run(root: Path, assignment: str, mutants_dir: Path, workers: int | None = None,
        log=print) -> list[Verdict]:
    """Grade the blank, perfect and mutant submissions of one assignment; one verdict each."""
    return run_many(root, {assignment: mutants_dir}, workers, log)[assignment]


def run_many(root: Path, mutants_dirs: dict[str, Path], workers: int | None = None,
             log=print) -> dict[str, list[Verdict]]:
    """`run` for several assignments (assignment -> its mutants' folder), generated once
    and graded in one pool of workers; assignment -> verdicts."""
    import tempfile

    plans = {}
    for assignment, mutants_dir in sorted(mutants_dirs.items()):
        notebooks = course.solution_notebooks(root, assignment)
        if len(notebooks) != 1:
            raise ValueError(f"{assignment}: the mutant harness expects one notebook per "
                             "assignment")
        solution = read_notebook(notebooks[0])
        mutants = discover(mutants_dir)
        graded_exercises = exercises(solution)
        unknown = sorted(set(mutants) - set(graded_exercises))
        if unknown:
            raise ValueError(f"{mutants_dir}: no answer cell has grade id {', '.join(unknown)}")
        plans[assignment] = (notebooks[0].name, solution, mutants, graded_exercises,
                             callees_of(graded_exercises))

    carried, by_assignment = {}, {}
    with tempfile.TemporaryDirectory(prefix="course-mutants-") as tmp:
        base = autograde.prepare(root, sorted(plans), Path(tmp) / "prep")
        # the later notebooks train longer: graded first, so that no worker is left with
        # a long one while the other has finished
        for assignment, (name, solution, mutants, _, callees) in reversed(plans.items()):
            release = autograde.release_notebook(base, assignment, name)
            built, carried[assignment] = submissions(release, solution, mutants, callees)
            by_assignment[assignment] = {student: {name: nb} for student, nb in built.items()}
        results = autograde.autograde_many(root, by_assignment, workers=workers,
                                           work=Path(tmp) / "grade", log=log, base=base)

    return {assignment: _verdicts(results[assignment], carried[assignment], *plans[assignment])
            for assignment in plans}


def _verdicts(results, carried, name, solution, mutants, graded_exercises, callees):
    verdicts = []
    for student, by_notebook in sorted(results.items()):
        result = by_notebook[name]
        for exercise, info in graded_exercises.items():
            cells = list(result.tests_of(info).values())
            verdicts.append(Verdict(
                student=student,
                mutant=carried[student].get(exercise),
                exercise=exercise,
                score=sum(c.score for c in cells),
                max_score=sum(c.max_score for c in cells),
                messages=[c.message for c in cells],
                visible_failure=any(c.score < c.max_score and not c.hidden for c in cells),
                wrong_callees=tuple(sorted(
                    c for c in callees[exercise]
                    if c in carried[student] and carried[student][c].kind == "wrong")),
            ))
    return verdicts
