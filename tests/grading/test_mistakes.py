"""The mistakes report (autograder.grading.mistakes and mistakes_page), from results kept the
way class grading keeps them: groups, their order, the follow-up list, the page and the
command. Fast: no kernel (the demo class's planted mistakes are counted in
test_classgrade.py, and its page opened in chromium there)."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from autograder import cli
from autograder.cells import read_notebook
from autograder.errors import CourseError
from autograder.grading import mistakes, mistakes_page, reports, store
from conftest import ROOT

A, NB = "01-autodiff", "autodiff.ipynb"
HINT = "update the variables in place (assign_sub) instead of returning new ones"
STUB = "NotImplementedError: "


def release():
    return read_notebook(ROOT / "notebooks" / A / NB)


def result(student, failing=None, fatal=None, notes=()):
    """A result of 01-autodiff: full marks but for the tests in `failing` (test -> message)."""
    cells = store.zero_cells(release())
    for test, cell in cells.items():
        message = (failing or {}).get(test)
        cell["score"] = 0.0 if message is not None or fatal else cell["max_score"]
        cell["message"] = message or ""
        cell["hidden"] = test.endswith("_none")
    return store.Result(student, A, NB, "x", "d", "a", cells=cells, fatal=fatal,
                        notes=list(notes))


def hinted(first_line):
    return f"CheckFailed: {first_line}\nHint: {HINT}"


def the_class():
    every_test = [t for t in store.zero_cells(release())]
    return [
        result("ada"),
        result("bob", {"test_sgd_step": hinted("w is a new Variable, not the one passed in"),
                       "test_numerical_gradient": hinted("x is a new Variable")}),
        result("cyd", {"test_sgd_step": hinted("w is a new Variable, not the one passed in"),
                       "test_sgd_step_none": "CheckFailed: w: got 1 at index (0,), expected "
                       "0.5.\n2 of 2 entries differ; the largest error is 0.5 at index (0,) "
                       "(tolerance atol=1e-06, rtol=1e-06)."}),
        result("dee", {"test_sgd_step_none": "CheckFailed: w: got 7 at index (2,), expected "
                       "2.\n3 of 3 entries differ; the largest error is 5 (dee's "
                       "variable)."}),
        result("eve", dict.fromkeys(every_test, STUB)),
        result("fay", fatal=f"no {NB} was submitted"),
        result("gus", {"test_fit_linear_regression": "CellTimeout: the test cell ran past "
                       "its time limit (your code was interrupted)",
                       "test_rows_changed": "KernelDied: the kernel died (os._exit, a crash, "
                       "or the process was killed)"},
               notes=["the test test_fit_linear_regression ran past the time limit of 10 s "
                      "per cell (--cell-timeout) and was stopped"]),
    ]


def test_a_failing_check_is_grouped_by_its_hint_else_by_the_check():
    assert mistakes.classify(STUB)[0] == mistakes.UNANSWERED
    assert mistakes.classify("NotImplementedError: numpy on a symbolic tensor")[0] == \
        mistakes.CHECK  # a message of its own: an answer that failed, not a blank one
    assert mistakes.classify("CellTimeout: the test cell ran past")[0] == mistakes.TIMEOUT
    assert mistakes.classify("SubmissionTimeout: not run: ...")[0] == mistakes.TIMEOUT
    assert mistakes.classify("KernelDied: the kernel died")[0] == mistakes.CRASH
    kind, key, title = mistakes.classify(hinted("w is [1, 2]"))
    assert (kind, title) == (mistakes.HINT, HINT)
    one = mistakes.classify("CheckFailed: w: got shape (3,), expected (3, 1).")
    other = mistakes.classify("CheckFailed: w: got shape (5, 2), expected (5, 1).")
    assert one[1] == other[1] == "CheckFailed: w: got shape (...), expected (...)"
    assert one[2] == "w: got shape (3,), expected (3, 1)"
    assert mistakes.classify("AssertionError: ")[2] == "AssertionError (no message)"
    assert mistakes.classify("")[0] == mistakes.CHECK


def test_exercises_come_most_lost_first_with_their_groups_counted():
    analysis = mistakes.analyse(the_class(), reports.Layout({A: release()}))
    first = analysis["exercises"][0]
    assert first.name == "sgd_step"
    assert sorted(first.lost) == ["bob", "cyd", "dee", "eve"] and first.passed == ["ada", "gus"]
    groups = {g.title: sorted(g.students) for g in first.groups}
    assert groups == {HINT: ["bob", "cyd"], "w: got 1 at index (0,), expected 0.5": ["cyd", "dee"],
                      mistakes.TITLES[mistakes.UNANSWERED]: ["eve"]}
    check = next(g for g in first.groups if g.kind == mistakes.CHECK)
    assert check.test == "test_sgd_step_none" and check.hidden  # only in a hidden test
    assert "dee" not in check.example and all("fay" not in e.graded
                                              for e in analysis["exercises"])
    by_name = {e.name: e for e in analysis["exercises"]}
    kinds = {g.kind: g.students for g in by_name["fit_linear_regression"].groups}
    assert kinds[mistakes.TIMEOUT] == ["gus"]
    assert {g.kind: g.students for g in by_name["rows_changed"].groups}[mistakes.CRASH] == \
        ["gus"]
    shares = [e.lost_share for e in analysis["exercises"]]
    assert shares == sorted(shares, reverse=True)


def test_the_follow_up_names_who_and_why():
    analysis = mistakes.analyse(the_class(), reports.Layout({A: release()}))
    why = {f.student: " | ".join(s for s, _ in f.reasons) for f in analysis["follow_up"]}
    assert set(why) == {"bob", "eve", "fay", "gus"}, why
    assert f"the same mistake in 2 exercises: {HINT}" in why["bob"]
    assert {p for f in analysis["follow_up"] if f.student == "bob" for s, places in f.reasons
            for p in places} == {(A, "sgd_step"), (A, "numerical_gradient")}
    assert "no exercise answered" in why["eve"] and "unanswered" not in why["eve"]
    assert why["fay"] == f"submitted nothing for {A}"
    assert "past the time limit" in why["gus"]
    top = mistakes.top_mistakes(analysis)
    assert [(e.name, len(g.students)) for e, g in top][:2] == [("sgd_step", 2), ("sgd_step", 2)]
    lines = mistakes.summary_lines(analysis, "mistakes.html")
    assert lines[0] == "most common mistakes:" and HINT in lines[1]
    assert "follow up: 4 student(s)" in "\n".join(lines)


def test_the_page_stands_alone_and_links_each_student_to_their_feedback(tmp_path):
    results = the_class()
    said = mistakes.write(results, {A: release()}, tmp_path)
    page = (tmp_path / mistakes.PAGE).read_text()
    assert said[-1].startswith(f"mistakes: {tmp_path / mistakes.PAGE}")
    # offline: nothing fetched from elsewhere, no script
    assert not re.search(r"(src|href)=['\"]?(https?:)?//", page) and "<script" not in page
    assert "<svg" in page and "dee" not in re.sub(r"<a [^>]*>dee</a>|student-dee|"
                                                 r"feedback/dee/[^']*", "", page)
    link = mistakes_page.feedback_link("bob", A, "sgd_step")
    assert link == f"feedback/bob/{A}.html#ex-sgd_step" and f"href='{link}'" in page
    data = json.loads((tmp_path / mistakes.DATA).read_text())
    assert data["exercises"][0]["name"] == "sgd_step" and data["students"] == 7
    # the feedback page has the anchor the link names
    from autograder.grading import feedback

    shown = feedback.page(results[1], reports.Layout({A: release()}), {})
    assert "id='ex-sgd_step'" in shown


def test_a_blank_exercise_reads_not_answered_on_the_feedback_page():
    from autograder.grading import feedback

    shown = feedback.page(the_class()[4], reports.Layout({A: release()}), {})
    assert "NotImplementedError:" not in shown and "not answered" in shown
    assert feedback.NOT_ANSWERED in shown


def test_the_command_reads_a_graded_folder(tmp_path, capsys):
    out = tmp_path / "grading"
    with pytest.raises(CourseError, match="grade the class into"):
        mistakes.write_folder(out)
    for r in the_class():
        store.save_result(out, r)
    with pytest.raises(CourseError, match="no release notebook of 01-autodiff"):
        mistakes.write_folder(out)
    (out / "notebooks" / A).mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / A / NB, out / "notebooks" / A / NB)
    assert cli.grade_main(["mistakes", str(out)]) == 0
    said = capsys.readouterr().out
    assert "most common mistakes:" in said and (out / mistakes.PAGE).is_file()
