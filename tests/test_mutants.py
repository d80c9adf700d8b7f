"""Prove the tests: real nbgrader autograding rejects the wrong answers, accepts the others."""

import pytest

from autograder import mutants
from autograder.notebooks import exercises, read_notebook
from conftest import MUTANTS, ROOT, assignments, solution_paths


@pytest.mark.parametrize("path", solution_paths(), ids=lambda p: p.parent.name)
def test_every_exercise_has_its_mutants(path):
    found = mutants.discover(MUTANTS / path.parent.name)
    for name in exercises(read_notebook(path)):
        kinds = [m.kind for m in found.get(name, [])]
        assert kinds.count("wrong") >= 2 and kinds.count("ok") >= 1, (
            f"{path.parent.name}/{name}: {kinds.count('wrong')} wrong_* and "
            f"{kinds.count('ok')} ok_* under tests/mutants; want at least 2 and 1")


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


@pytest.mark.slow
@pytest.mark.parametrize("assignment", [a for a in assignments() if (MUTANTS / a).is_dir()])
def test_mutants_are_graded_as_expected(assignment):
    verdicts = mutants.run(ROOT, assignment, MUTANTS / assignment, log=print)
    bad = [v.describe() for v in verdicts if not v.ok]
    assert not bad, "\n".join(bad)
    perfect = [v for v in verdicts if v.student == mutants.PERFECT]
    blank = [v for v in verdicts if v.student == mutants.BLANK]
    assert perfect and all(v.score == v.max_score > 0 for v in perfect)
    assert blank and sum(v.score for v in blank) == 0
    # every wrong mutant was graded, on its own exercise
    graded = {v.mutant.label for v in verdicts
              if v.mutant is not None and v.mutant.exercise == v.exercise and v.judged}
    expected = {m.label for ms in mutants.discover(MUTANTS / assignment).values() for m in ms}
    assert graded == expected
