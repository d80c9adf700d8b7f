"""Prove the tests: the grading engine (nbgrader's autograde in the sandbox) rejects the wrong
answers and accepts the others, and class grading gives every one of those notebooks the
same scores."""

import functools

import pytest

from autograder import course
from autograder.authoring import mutants
from autograder.cells import (
    exercises,
    read_notebook,
    write_notebook,
)
from autograder.grading import classgrade, reports
from conftest import MUTANTS, ROOT, assignments, solution_paths
from embeddings_course.mirrors import MIRRORS


@functools.cache
def graded_all() -> dict:
    """Every notebook's harness at once, in one pool of workers (mutants.run_many)."""
    return mutants.run_many(ROOT, {a: MUTANTS / a for a in assignments()
                                   if (MUTANTS / a).is_dir()}, log=print)


def graded(assignment):
    return graded_all()[assignment]


@pytest.mark.parametrize("path", solution_paths(), ids=lambda p: p.parent.name)
def test_every_exercise_has_its_mutants(path):
    found = mutants.discover(MUTANTS / path.parent.name)
    for name in exercises(read_notebook(path)):
        kinds = [m.kind for m in found.get(name, [])]
        assert kinds.count("wrong") >= 2 and kinds.count("ok") >= 1, (
            f"{path.parent.name}/{name}: {kinds.count('wrong')} wrong_* and "
            f"{kinds.count('ok')} ok_* under tests/mutants; want at least 2 and 1")
        if name in MIRRORS:  # an exercise the library has its own version of
            labels = [m.path.name for m in found.get(name, [])]
            assert "wrong_delegates.py" in labels, (
                f"{path.parent.name}/{name}: no wrong_delegates.py (an answer that calls "
                "the library's version) under tests/mutants")


def test_plan_carries_one_mutant_of_each_exercise_per_submission():
    a = [mutants.Mutant("a", MUTANTS / f"a/wrong_{i}.py") for i in range(3)]
    b = [mutants.Mutant("b", MUTANTS / "b/ok_1.py")]
    planned = mutants.plan({"a": a, "b": b})
    assert [sorted(p) for p in planned] == [["a", "b"], ["a"], ["a"]]
    assert [p["a"] for p in planned] == a


def test_plan_keeps_a_wrong_caller_away_from_a_wrong_callee():
    callee = [mutants.Mutant("callee", MUTANTS / f"c/wrong_{i}.py") for i in range(2)] + [
        mutants.Mutant("callee", MUTANTS / "c/ok_1.py")]
    caller = [mutants.Mutant("caller", MUTANTS / f"d/wrong_{i}.py") for i in range(2)] + [
        mutants.Mutant("caller", MUTANTS / "d/ok_1.py")]
    planned = mutants.plan({"callee": callee, "caller": caller}, {"caller": {"callee"}})
    for slot in planned:
        assert not (slot.get("callee") and slot["callee"].kind == "wrong" and
                    slot.get("caller") and slot["caller"].kind == "wrong"), slot
    carried = [m for slot in planned for m in slot.values()]
    assert sorted(m.label for m in carried) == sorted(m.label for m in callee + caller)


def test_a_mistake_only_hidden_tests_catch_must_say_so(tmp_path):
    """A wrong mutant that loses points only in hidden tests passes Validate: the verdict
    fails unless the mutant says it is fitted to the visible examples."""
    plain, declared = tmp_path / "wrong_a.py", tmp_path / "wrong_b.py"
    plain.write_text("# Mistake: ignores the stated dtype.\ndef f(): ...\n")
    declared.write_text("# Mistake: returns the visible example's answer.\n"
                        f"# {mutants.HIDDEN_ONLY} other sizes\ndef f(): ...\n")
    assert mutants.Mutant("f", declared).hidden_only == "other sizes"

    def verdict(path, visible_failure):
        return mutants.Verdict("s", mutants.Mutant("f", path), "f", 1.0, 3.0, [""],
                               visible_failure=visible_failure)

    assert not verdict(plain, False).ok
    assert "Validate passes it" in verdict(plain, False).describe()
    assert verdict(plain, True).ok and verdict(declared, False).ok


@pytest.mark.slow
@pytest.mark.parametrize("assignment", [a for a in assignments() if (MUTANTS / a).is_dir()])
def test_mutants_are_graded_as_expected(assignment):
    verdicts = graded(assignment)
    # Validate fails on every stated-requirement mistake too (mutants.Verdict.ok)
    bad = [v.describe() for v in verdicts if not v.ok]
    assert not bad, "\n".join(bad)
    perfect = [v for v in verdicts if v.student == mutants.PERFECT]
    blank = [v for v in verdicts if v.student == mutants.BLANK]
    assert perfect and all(v.score == v.max_score > 0 for v in perfect)
    assert blank and sum(v.score for v in blank) == 0
    # every mutant was graded, on its own exercise
    graded_ = {v.mutant.label for v in verdicts
               if v.mutant is not None and v.mutant.exercise == v.exercise}
    expected = {m.label for ms in mutants.discover(MUTANTS / assignment).values() for m in ms}
    assert graded_ == expected
    # each wrong callee sat beside a right caller, which kept full marks (checked by v.ok
    # above): a mistake costs only its own exercise's points
    solution = read_notebook(course.solution_notebooks(ROOT, assignment)[0])
    for caller, called in mutants.callees_of(exercises(solution)).items():
        for callee in called:
            beside = [v for v in verdicts if v.exercise == caller and callee in v.wrong_callees
                      and v.expected_full]
            assert beside, f"no wrong {callee} was graded beside a right {caller}"


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ["01-autodiff"])
def test_class_grading_gives_the_harness_notebooks_the_same_scores(assignment, tmp_path):
    """One engine: the blank, perfect and two mutant notebooks score the same per exercise
    through `course-grade class` as through the harness (the self-grading path)."""
    verdicts = graded(assignment)
    solution_path = course.solution_notebooks(ROOT, assignment)[0]
    solution = read_notebook(solution_path)
    release = read_notebook(ROOT / "notebooks" / assignment / solution_path.name)
    found = mutants.discover(MUTANTS / assignment)
    built, carried = mutants.submissions(release, solution, found,
                                         mutants.callees_of(exercises(solution)))
    wrong = [s for s, chosen in sorted(carried.items())
             if any(m.kind == "wrong" for m in chosen.values())]
    chosen = [mutants.BLANK, mutants.PERFECT] + wrong[:2]
    for student in chosen:
        write_notebook(built[student], tmp_path / "in" / student / assignment /
                       solution_path.name)
    results = classgrade.grade_class(ROOT, tmp_path / "in", tmp_path / "out", [assignment],
                                     classgrade.Settings(workers=2), log=lambda _: None)
    layout = reports.Layout({assignment: release})
    by_class = {(r.student, ex): layout.exercise_score(r, ex)[0]
                for r in results for ex in exercises(solution)}
    by_harness = {(v.student, v.exercise): v.score for v in verdicts if v.student in chosen}
    assert by_class == by_harness
    assert len(by_class) == len(chosen) * len(exercises(solution))
    full = sum(v for (s, _), v in by_class.items() if s == mutants.PERFECT)
    for student in wrong[:2]:  # a wrong mutant costs points
        assert sum(v for (s, _), v in by_class.items() if s == student) < full


def hidden_hints(assignment) -> list[str]:
    """The hints that the solution's hidden tests write (`hint="..."` inside a hidden
    block), each found nowhere in the release."""
    import ast

    from autograder.cells import HIDDEN_MARKERS, is_test

    solution = read_notebook(course.solution_notebooks(ROOT, assignment)[0])
    release = "\n".join(c.source for c in read_notebook(
        ROOT / course.RELEASE_DIR / assignment / course.solution_notebooks(
            ROOT, assignment)[0].name).cells)
    found = []
    for cell in solution.cells:
        if not is_test(cell) or HIDDEN_MARKERS[0] not in cell.source:
            continue
        start = cell.source[:cell.source.index(HIDDEN_MARKERS[0])].count("\n") + 1
        for node in ast.walk(ast.parse(cell.source)):
            for keyword in getattr(node, "keywords", []):
                if keyword.arg == "hint" and isinstance(keyword.value, ast.Constant) and \
                        node.lineno > start and keyword.value.value not in release:
                    found.append(keyword.value.value)
    return found


@pytest.mark.slow
def test_hidden_tests_hints_reach_the_student_whole():
    """A hint written in a hidden test reaches the student as its author wrote it: the
    tests run in the grader, so no message is cut for quoting one. (Runs after the
    harness above, whose gradings it reads.)"""
    reached = {}
    for assignment in [a for a in assignments() if (MUTANTS / a).is_dir()]:
        hints = hidden_hints(assignment)
        assert hints, assignment
        messages = [m for v in graded(assignment) for m in v.messages if m]
        assert not any("cut by the grader: the message quoted" in m for m in messages)
        reached[assignment] = [h for h in hints if any(f"Hint: {h}" in m for m in messages)]
    # a mutant fails a hidden check with its hint in most notebooks (07's mutants all
    # fail a visible check first)
    assert sum(bool(found) for found in reached.values()) >= 5, reached
