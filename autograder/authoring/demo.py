"""A synthetic class built from the course's own notebooks, to show and test class grading.

`build_class(root, folder)` writes, in nbgrader's `submitted/{student}/{assignment}/`
layout: a perfect student, a blank one, partial ones, students who made the typical
mistakes of `tests/mutants/`, and the bad submissions class grading must survive. Each
comes with the score it must get and the reason the student must be shown
(`Expected`), which the tests check and `make demo` prints beside the real grades.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import course
from autograder.cells import (
    exercises,
    grade_id,
    is_answer,
    is_manual,
    is_test,
    read_notebook,
    strip_solution_markers,
)


@dataclass
class Expected:
    student: str
    assignment: str
    score: float
    reason: str | None  # a piece of text the notes or the fatal reason must contain
    what: str  # what this submission is, for the demo's table
    # the mistakes planted: exercise -> its wrong_* mutant's file, or BLANK (not answered)
    planted: dict = field(default_factory=dict)


BLANK = ""  # an exercise left as the release's stub, in Expected.planted


class Course:
    """The release, solution and mutants of one assignment."""

    def __init__(self, root: Path, assignment: str):
        self.root, self.assignment = root, assignment
        self.solution_path = course.solution_notebooks(root, assignment)[0]
        self.name = self.solution_path.name
        self.solution = read_notebook(self.solution_path)
        self.release = read_notebook(root / course.RELEASE_DIR / assignment / self.name)
        self.answers = {grade_id(c): strip_solution_markers(c.source)
                        for c in self.solution.cells if is_answer(c) or is_manual(c)}
        self.exercises = exercises(self.solution)
        self.mutants = root / "tests" / "mutants" / assignment

    def points(self, exercise: str) -> float:
        return self.exercises[exercise].points

    @property
    def auto_points(self) -> float:
        return sum(ex.points for ex in self.exercises.values())

    def filled(self, answers: dict[str, str] | None = None) -> nbformat.NotebookNode:
        """The release with answer cells filled (from the solution unless given)."""
        nb = copy.deepcopy(self.release)
        answers = self.answers if answers is None else answers
        for cell in nb.cells:
            if grade_id(cell) in answers and (is_answer(cell) or is_manual(cell)):
                cell.source = answers[grade_id(cell)]
        return nb

    def with_mutant(self, exercise: str, mutant_file: str) -> nbformat.NotebookNode:
        source = (self.mutants / exercise / mutant_file).read_text(encoding="utf-8")
        return self.filled({**self.answers, exercise: source})

    def first_wrong_mutant(self, exercise: str) -> str:
        return sorted(p.name for p in (self.mutants / exercise).glob("wrong_*.py"))[0]


def _insert_after(nb, gid: str, source: str) -> nbformat.NotebookNode:
    """A new code cell right after the cell with grade id `gid`."""
    index = next(i for i, c in enumerate(nb.cells) if grade_id(c) == gid)
    nb.cells.insert(index + 1, nbformat.v4.new_code_cell(source))
    return nb


def _tests_of(nb, exercise: str) -> list[int]:
    return [i for i, c in enumerate(nb.cells) if is_test(c)
            and (grade_id(c) == f"test_{exercise}" or grade_id(c).startswith(f"test_{exercise}_"))]


def _bytes(nb) -> bytes:
    return nbformat.writes(nb).encode("utf-8")


# Each builder: (course) -> (file bytes, expected score, reason text, description).
Builder = Callable[[Course], tuple[bytes, float, str | None, str]]


def perfect(c: Course):
    return _bytes(c.filled()), c.auto_points, None, "every answer right"


def blank(c: Course):
    return _bytes(c.release), 0.0, None, "the release as handed out"


def partial(c: Course):
    names = list(c.exercises)[: max(1, len(c.exercises) // 2)]
    answers = {n: c.answers[n] for n in names}
    return (_bytes(c.filled(answers)), sum(c.points(n) for n in names), None,
            f"only {', '.join(names)} answered")


def not_json(c: Course):
    return b'{"cells": [ this is not json', 0.0, "not valid JSON", "a file that is not JSON"


def empty(c: Course):
    return b"", 0.0, "empty file", "an empty file"


def other_assignment(c: Course):
    others = [a for a in course.assignments(c.root) if a != c.assignment]
    other = Course(c.root, others[0])
    return (_bytes(other.filled()), 0.0, f"notebook of assignment {other.assignment}",
            f"the perfect notebook of {other.assignment}, under this assignment's name")


def old_nbformat(c: Course):
    nb = c.filled()
    for cell in nb.cells:
        cell.pop("id", None)
    nb.nbformat_minor = 4
    return (nbformat.writes(nbformat.convert(nb, 3)).encode("utf-8"), c.auto_points,
            "nbformat 3", "the perfect notebook saved as nbformat 3")


def tests_deleted(c: Course):
    exercise = next(iter(c.exercises))
    nb = c.with_mutant(exercise, c.first_wrong_mutant(exercise))
    for index in reversed(_tests_of(nb, exercise)):
        del nb.cells[index]
    return (_bytes(nb), c.auto_points - c.points(exercise), "had been deleted",
            f"a wrong {exercise} whose test cells were deleted")


def tests_edited(c: Course):
    exercise = next(iter(c.exercises))
    nb = c.with_mutant(exercise, c.first_wrong_mutant(exercise))
    for index in _tests_of(nb, exercise):
        nb.cells[index].source = "pass  # the tests were in the way"
    return (_bytes(nb), c.auto_points - c.points(exercise), "had been changed",
            f"a wrong {exercise} whose test cells were replaced by `pass`")


def grade_id_copied(c: Course):
    exercise = next(iter(c.exercises))
    nb = c.with_mutant(exercise, c.first_wrong_mutant(exercise))
    for index in reversed(_tests_of(nb, exercise)):
        fake = copy.deepcopy(nb.cells[index])
        fake.id = f"{fake.get('id', 'cell')}-copy"
        fake.source = "pass"
        nb.cells.insert(index + 1, fake)
    return (_bytes(nb), c.auto_points - c.points(exercise), "appears in 2 cells",
            f"a wrong {exercise} with copies of its test cells' grade ids on `pass` cells")


def answer_duplicated(c: Course):
    nb = c.filled()
    exercise = next(iter(c.exercises))
    index = next(i for i, cell in enumerate(nb.cells) if grade_id(cell) == exercise)
    twin = copy.deepcopy(nb.cells[index])
    twin.id = f"{twin.get('id', 'cell')}-copy"
    nb.cells.insert(index + 1, twin)
    return (_bytes(nb), c.auto_points, "appears in 2 cells",
            f"every answer right, the {exercise} answer cell duplicated")


def infinite_loop(c: Course):
    nb = _insert_after(c.filled(), next(iter(c.exercises)), "while True:\n    pass")
    return (_bytes(nb), c.auto_points, "past the time limit",
            "every answer right, and a cell that loops for ever")


def memory_hog(c: Course):
    last = list(c.exercises)[-1]
    nb = _insert_after(c.filled(), last, "import numpy as np\nhog = []\nwhile True:\n"
                       "    hog.append(np.ones(10_000_000))")
    return (_bytes(nb), c.auto_points, "memory",
            f"every answer right, then memory that grows without end before {last}'s tests "
            "(the crash costs nothing: a fresh kernel rebuilds the state)")


def sys_exit(c: Course):
    nb = _insert_after(c.filled(), next(iter(c.exercises)), "import sys\nsys.exit()")
    return (_bytes(nb), c.auto_points, None, "every answer right, and a cell calling sys.exit()")


def os_exit(c: Course):
    last = list(c.exercises)[-1]
    nb = _insert_after(c.filled(), last, "import os\nos._exit(1)")
    return (_bytes(nb), c.auto_points, "kernel died",
            f"every answer right, and os._exit(1) before {last}'s tests")


def kernel_crash(c: Course):
    last = list(c.exercises)[-1]
    nb = _insert_after(c.filled(), last, "import ctypes\nctypes.string_at(0)  # segfault")
    return (_bytes(nb), c.auto_points, "kernel died",
            f"every answer right, and a segfault before {last}'s tests")


def huge_output(c: Course):
    nb = _insert_after(c.filled(), next(iter(c.exercises)),
                       "for _ in range(50):\n    print('x' * 100_000)")
    return (_bytes(nb), c.auto_points, "output",
            "every answer right, and a cell printing 5 MB")


def tampers(c: Course):
    exercise = next(iter(c.exercises))
    nb = c.with_mutant(exercise, c.first_wrong_mutant(exercise))
    index = next(i for i, cell in enumerate(nb.cells) if grade_id(cell) == exercise)
    nb.cells[index].source += (
        "\n\n\nimport builtins\n\nimport numpy.testing\n\nfrom embeddings_course import checks\n"
        "\n\ndef _passes(*args, **kwargs):\n    return None\n\n\n"
        "for _name in dir(checks):\n    if _name.startswith('check_'):\n"
        "        setattr(checks, _name, _passes)\n"
        "numpy.testing.assert_allclose = _passes\n"
        "builtins.AssertionError = type('AssertionError', (Exception,), {})\n")
    return (_bytes(nb), c.auto_points - c.points(exercise), None,
            f"a wrong {exercise} that replaces the check helpers, numpy.testing and "
            "AssertionError (in its own kernel: the tests run in the grader)")


def snoops(c: Course):
    probe = (
        "import os\n"
        "marker = 'BEGIN ' + 'SOLUTION'  # not spelled out, or this cell would find itself\n"
        "# notebooks, gradebooks and JSON: where solutions and hidden tests are kept\n"
        "found = []\n"
        "here = os.getcwd()\n"
        "places = [here, os.path.dirname(here), os.path.dirname(os.path.dirname(here)),\n"
        "          os.path.expanduser('~'), '/tmp', '/work', '/home']\n"
        "for top in places:\n"
        "    for folder, dirs, files in os.walk(top):\n"
        "        skip = ('.venv', '.pyenv', 'proc', 'usr', 'dev')\n"
        "        dirs[:] = [d for d in dirs if d not in skip]\n"
        "        for name in files:\n"
        "            path = os.path.join(folder, name)\n"
        "            try:\n"
        "                if name.endswith(('.ipynb', '.db', '.json')) and \\\n"
        "                        marker in open(path, errors='ignore').read():\n"
        "                    found.append(path)\n"
        "            except OSError:\n"
        "                pass\n"
        "print('solutions found near the notebook:', len(found), found[:3])")
    nb = _insert_after(c.release, next(iter(c.exercises)), probe)
    return (_bytes(nb), 0.0, None,
            "a blank notebook with a cell searching the folders around it for solutions")


BAD = [not_json, empty, other_assignment, old_nbformat, tests_deleted, tests_edited,
       grade_id_copied, answer_duplicated, infinite_loop, memory_hog, sys_exit, os_exit,
       kernel_crash, huge_output, tampers, snoops]
TYPICAL = [perfect, blank, partial]


# what each builder plants (autograder.grading.mistakes must count it)
PLANTED = {**dict.fromkeys((tests_deleted, tests_edited, grade_id_copied, tampers), lambda c: {
    (ex := next(iter(c.exercises))): c.first_wrong_mutant(ex)}),
    **dict.fromkeys((blank, snoops), lambda c: dict.fromkeys(c.exercises, BLANK)),
    partial: lambda c: dict.fromkeys(list(c.exercises)[max(1, len(c.exercises) // 2):], BLANK)}


def mistake_builders(c: Course, limit: int = 4) -> list[tuple[str, Builder]]:
    """Students who each made one typical mistake: a wrong_* mutant of one exercise."""
    made = []
    for exercise in c.exercises:
        mutant = c.first_wrong_mutant(exercise)

        def build(c: Course, exercise=exercise, mutant=mutant):
            first_line = (c.mutants / exercise / mutant).read_text().splitlines()[0]
            return (_bytes(c.with_mutant(exercise, mutant)), None, None,
                    f"{exercise}: {first_line.lstrip('# ')}")

        build.planted = {exercise: mutant}
        made.append((f"mistake-{exercise}".replace("_", "-").lower(), build))
    return made[:limit]


def build_class(root: Path, folder: Path, assignment: str = "01-autodiff",
                builders: list[Builder] | None = None,
                mistakes: int = 4) -> list[Expected]:
    """Write the synthetic class under `folder`; return what each submission must score
    (score None: less than full marks on the one exercise, full on the others)."""
    c = Course(root, assignment)
    named = [(b.__name__.replace("_", "-"), b) for b in (builders or TYPICAL + BAD)]
    named += mistake_builders(c, mistakes) if builders is None else []
    expected = []
    for student, build in named:
        data, score, reason, what = build(c)
        path = folder / student / assignment / c.name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        planted = PLANTED[build](c) if build in PLANTED else getattr(build, "planted", {})
        expected.append(Expected(student, assignment, score, reason, what, planted))
    (folder / "expected.json").write_text(json.dumps([e.__dict__ for e in expected], indent=1))
    return expected


def check(expected: Expected, result) -> str:
    """'' when `result` is what `expected` says, else what differs."""
    problems = []
    if expected.score is None:
        if not result.score < result.max_score:
            problems.append(f"scored {result.score:g}, expected less than full marks")
    elif abs(result.score - expected.score) > 1e-9:
        problems.append(f"scored {result.score:g}, expected {expected.score:g}")
    said = " | ".join(([result.fatal] if result.fatal else []) + list(result.notes))
    if expected.reason and expected.reason not in said:
        problems.append(f"the reason shown lacks {expected.reason!r} (shown: {said or 'none'})")
    return "; ".join(problems)


def table(expected: list[Expected], results) -> str:
    by_key = {(r.student, r.assignment): r for r in results}
    lines = [f"{'student':24s} {'score':>9s} {'expected':>8s}  ok  what, and the reason shown"]
    for e in expected:
        r = by_key.get((e.student, e.assignment))
        if r is None:
            lines.append(f"{e.student:24s} {'missing':>9s}")
            continue
        verdict = check(e, r)
        want = "< full" if e.score is None else f"{e.score:g}"
        shown = r.fatal or (r.notes[0] if r.notes else "")
        lines.append(f"{e.student:24s} {r.score:>4g}/{r.max_score:<4g} {want:>8s}  "
                     f"{'yes' if not verdict else 'NO '} {e.what}"
                     + (f" -> {shown[:90]}" if shown else "") + (f"  [{verdict}]" if verdict
                                                                  else ""))
    return "\n".join(lines)
