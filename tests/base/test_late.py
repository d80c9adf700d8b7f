"""The late policy (autograder.late): its configuration, what it takes off, and the reports
that show it (grades.csv, the feedback page, the class summary), without a kernel."""

from __future__ import annotations

import csv
import shutil

import pytest

from autograder import cli, course, late
from autograder.cells import grade_id, read_notebook
from autograder.errors import CourseError
from autograder.grading import classgrade, feedback, reports
from conftest import ROOT

A = "01-autodiff"
NB = "autodiff.ipynb"
HOUR, DAY = 3600.0, 86400.0
WHERE = "pyproject.toml: [tool.course-grade.late]"


def policy(**table) -> late.Policy:
    return late.parse(table, WHERE, [A, "02-x"])


# --- configuration ------------------------------------------------------------------------

def test_a_full_table_is_read():
    got = policy(percent_per_day=10, cap_percent=50, cutoff_days=7, grace_minutes=15.5,
                 extensions={"ada": 2, f"bob/{A}": 1})
    assert got == late.Policy(10.0, 50.0, 7.0, 15.5, (("ada", 2.0), (f"bob/{A}", 1.0)))
    assert policy() == late.Policy()
    assert got.describe() == ("10% off per started day late, at most 50%; 0 points after "
                              "7 days; 15.5 min of grace; 2 extension(s)")
    assert late.Policy().describe() == "no penalty"


@pytest.mark.parametrize("table, words", [
    ({"percent_per_dya": 10}, "has no key 'percent_per_dya'; it takes percent_per_day"),
    ({"percent_per_day": -1}, "percent_per_day must be 0 or more (got -1)"),
    ({"cap_percent": 150}, "cap_percent must be at most 100 (got 150)"),
    ({"percent_per_day": 101}, "percent_per_day must be at most 100"),
    ({"cutoff_days": "seven"}, "cutoff_days must be a number (got 'seven')"),
    ({"grace_minutes": True}, "grace_minutes must be a number (got True)"),
    ({"grace_minutes": float("nan")}, "grace_minutes must be a number"),
    ({"cutoff_days": -0.5}, "cutoff_days must be 0 or more"),
    ({"extensions": 2}, "extensions must be a table of student (or student/assignment)"),
    ({"extensions": {"ada": -1}}, "extensions.ada must be 0 or more (got -1)"),
    ({"extensions": {"ada": "2 days"}}, "extensions.ada must be a number (got '2 days')"),
    ({"extensions": {"a/b/c": 1}}, "extensions key 'a/b/c' must be a student or "),
    ({"extensions": {"/01": 1}}, "extensions key '/01' must be a student or "),
    ({"extensions": {"ada/01-autodif": 1}}, "'ada/01-autodif' names no assignment of the "
                                            "course (it has 01-autodiff, 02-x)"),
])
def test_each_mistake_is_one_sentence_naming_the_key(table, words):
    with pytest.raises(CourseError) as error:
        policy(**table)
    said = str(error.value)
    assert words in said and said.startswith(WHERE), said
    assert said.endswith(".") and said.count(". ") == 0, said


def test_a_late_table_that_is_not_a_table_is_refused():
    with pytest.raises(CourseError, match="must be a table of percent_per_day"):
        late.parse(10, WHERE)


def test_the_course_config_holds_the_policy_and_a_bad_one_stops_with_its_key(tmp_path):
    (tmp_path / "solutions" / A).mkdir(parents=True)
    (tmp_path / "solutions" / A / NB).write_text("{}")
    project = tmp_path / "pyproject.toml"
    project.write_text('[tool.course-grade]\nlibrary = "lib"\n[tool.course-grade.late]\n'
                       'percent_per_day = 10\ncutoff_days = 7\n'
                       f'extensions = {{ "ada" = 2, "bob/{A}" = 1 }}\n')
    facts = course.facts(tmp_path)
    assert facts.library == ("lib",) and facts.late.percent_per_day == 10
    assert facts.late.extension_days("bob", A) == 1
    assert course.facts(ROOT).late is None  # this course: no table, no penalty
    other = tmp_path / "other"
    (other / "solutions" / A).mkdir(parents=True)
    (other / "solutions" / A / NB).write_text("{}")
    (other / "pyproject.toml").write_text(
        '[tool.course-grade.late]\npercent_per_day = 10\nextensions = { "ada/02-typo" = 1 }\n')
    with pytest.raises(CourseError) as error:
        course.facts(other)
    assert "[tool.course-grade.late]: extensions key 'ada/02-typo' names no assignment" in \
        str(error.value) and str(error.value).count(". ") == 0


def test_a_policy_file_is_read_and_a_bad_one_named(tmp_path):
    good = tmp_path / "late.toml"
    good.write_text("percent_per_day = 5\ngrace_minutes = 30\n")
    assert late.load(good) == late.Policy(percent_per_day=5.0, grace_minutes=30.0)
    bad = tmp_path / "bad.toml"
    bad.write_text("percent_per_day = 5\ncap = 50\n")
    with pytest.raises(CourseError, match=r"bad\.toml has no key 'cap'"):
        late.load(bad)
    with pytest.raises(CourseError, match="cannot be read"):
        late.load(tmp_path / "missing.toml")
    (tmp_path / "broken.toml").write_text("percent_per_day = \n")
    with pytest.raises(CourseError, match="cannot be read"):
        late.load(tmp_path / "broken.toml")


def test_course_grade_class_refuses_a_bad_policy_file_before_grading(tmp_path, capsys):
    bad = tmp_path / "late.toml"
    bad.write_text("percent_per_day = 500\n")
    code = cli.grade_main(["class", str(tmp_path / "no-such-input"), "--out",
                           str(tmp_path / "out"), "--late-policy", str(bad)])
    said = capsys.readouterr().err
    assert code == 2 and "percent_per_day must be at most 100 (got 500)" in said, said
    assert not (tmp_path / "out").exists()


# --- what it takes off ---------------------------------------------------------------------

def test_on_time_and_no_policy_take_nothing():
    strict = policy(percent_per_day=10)
    assert strict.apply(10.0, None, "ada", A) == (10.0, "")
    assert strict.apply(10.0, 0.0, "ada", A) == (10.0, "")
    # no table: today's behaviour, the lateness named and nothing taken off
    assert late.Policy().apply(10.0, 90 * 60, "ada", A) == (
        10.0, "submitted 1 h 30 min after the due date")


@pytest.mark.parametrize("seconds, score, days", [
    (60, 9.0, 1),  # a minute late is a started day
    (DAY, 9.0, 1),  # exactly a day: one day
    (DAY + 60, 8.0, 2),
    (2 * DAY + 3 * HOUR, 7.0, 3),
])
def test_every_started_day_costs_its_percent(seconds, score, days):
    got, note = policy(percent_per_day=10).apply(10.0, seconds, "ada", A)
    assert got == score
    assert f": {days} started day{'s' * (days > 1)} late, \u2212{days * 10}% (score " \
           f"{score:g} of raw 10)" in note, note
    assert note.startswith("submitted ") and "after the due date" in note


def test_the_cap_is_the_most_taken_off():
    score, note = policy(percent_per_day=10, cap_percent=50).apply(10.0, 9 * DAY, "ada", A)
    assert score == 5.0 and "9 started days late, \u221250% (the cap)" in note
    assert policy(percent_per_day=30).apply(10.0, 5 * DAY, "ada", A)[0] == 0.0  # 150% -> 100


def test_after_the_cutoff_a_submission_scores_zero():
    rules = policy(percent_per_day=10, cutoff_days=7)
    assert rules.apply(10.0, 7 * DAY, "ada", A)[0] == pytest.approx(3.0)  # not after it yet
    score, note = rules.apply(10.0, 7 * DAY + 60, "ada", A)
    assert score == 0.0 and "more than 7 days late, 0 points (raw 10)" in note
    # a cutoff alone: late work counts in full until it
    alone = policy(cutoff_days=1)
    assert alone.apply(10.0, HOUR, "ada", A) == (10.0, "submitted 1 h 0 min after the "
                                                       "due date")
    assert alone.apply(10.0, 2 * DAY, "ada", A)[0] == 0.0


def test_grace_moves_the_due_date_for_everyone():
    rules = policy(percent_per_day=10, grace_minutes=30)
    score, note = rules.apply(10.0, 20 * 60, "ada", A)
    assert score == 10.0 and note.endswith("within the grace period, no penalty")
    # days are counted from the end of the grace period
    assert rules.apply(10.0, DAY + 20 * 60, "ada", A)[0] == 9.0
    assert rules.apply(10.0, DAY + 40 * 60, "ada", A)[0] == 8.0


def test_extensions_per_student_and_per_submission():
    rules = policy(percent_per_day=10, cutoff_days=3,
                   extensions={"ada": 2, f"ada/{A}": 0.5, "bob": 1})
    score, note = rules.apply(10.0, 20 * HOUR, "bob", A)
    assert score == 10.0 and "(with an extension of 1 day): within the extension" in note
    assert rules.apply(10.0, 20 * HOUR, "bob", "02-x")[0] == 10.0  # every assignment
    assert rules.apply(10.0, DAY + HOUR, "bob", A)[0] == 9.0  # an hour after it
    # the submission's own extension wins over the student's
    assert rules.apply(10.0, DAY + HOUR, "ada", A)[0] == 9.0
    assert rules.apply(10.0, DAY + HOUR, "ada", "02-x")[0] == 10.0
    assert rules.apply(10.0, DAY + HOUR, "cy", A)[0] == 8.0
    # the cutoff counts from the extended due date too
    assert rules.apply(10.0, 4 * DAY, "bob", A)[0] == pytest.approx(7.0)
    assert rules.apply(10.0, 4 * DAY + 60, "cy", A)[0] == 0.0


def test_scores_are_not_left_with_float_noise():
    assert policy(percent_per_day=10).apply(7.3, 3 * HOUR, "ada", A)[0] == 6.57
    assert policy(percent_per_day=10).apply(0.0, 3 * HOUR, "ada", A)[0] == 0.0


# --- the reports ---------------------------------------------------------------------------

def release():
    return read_notebook(ROOT / "notebooks" / A / NB)


def result(student, score):
    cells = {gid: {"score": score, "max_score": 1.0, "needs_manual_grade": False,
                   "message": ""}
             for gid in [grade_id(c) for c in release().cells
                         if c.get("metadata", {}).get("nbgrader", {}).get("grade")]}
    return classgrade.Result(student, A, NB, "x", "d", "a", cells=cells)


def test_grades_feedback_and_summary_show_the_penalised_and_the_raw_score(tmp_path):
    results = [result("ada", 1.0), result("bob", 1.0), result("cy", 0.0)]
    raw = results[0].score
    seconds = {("ada", A): 2 * DAY + 3 * HOUR, ("cy", A): 6 * DAY}
    rules = policy(percent_per_day=10, cap_percent=50, extensions={"bob": 1})
    layout = reports.Layout({A: release()})
    reports.write_csv(results, layout, tmp_path / "grades.csv", seconds, rules)
    rows = {r["student"]: r for r in csv.DictReader(open(tmp_path / "grades.csv"))}
    assert float(rows["ada"][f"{A}/total"]) == pytest.approx(0.7 * raw)
    assert float(rows["ada"]["total"]) == pytest.approx(0.7 * raw)
    assert float(rows["ada"][f"{A}/raw"]) == float(rows["ada"]["raw"]) == raw
    assert f"{A}: submitted 2 d 3 h 0 min after the due date: 3 started days late, " \
           "\u221230%" in rows["ada"]["problems"]
    assert rows["bob"][f"{A}/total"] == rows["bob"][f"{A}/raw"] == f"{raw:g}"
    assert rows["bob"]["problems"] == ""  # on time: nothing to say
    assert rows["cy"][f"{A}/total"] == "0" and "\u221250% (the cap)" in rows["cy"]["problems"]
    # the exercises stay raw
    assert rows["ada"][f"{A}/sgd_step"] == rows["bob"][f"{A}/sgd_step"]

    page = feedback.page(results[0], layout, {}, seconds[("ada", A)], rules)
    score = f"{round(0.7 * raw, 6):g}"
    assert f"{score} of {raw:g} points after the late penalty ({raw:g} before it)" in page
    assert (f"Late: submitted 2 d 3 h 0 min after the due date: 3 started days late, "
            f"\u221230% (score {score} of raw {raw:g}).") in page
    plain = feedback.page(results[0], layout, {}, seconds[("ada", A)])
    assert f"{raw:g} of {raw:g} points</p>" in plain  # no policy: the lateness, no penalty
    assert "Late: submitted 2 d 3 h 0 min after the due date.</p>" in plain

    stats = reports.summary(results, layout, seconds, rules)
    assert stats[A]["totals"] == sorted([0.0, raw, round(0.7 * raw, 6)])
    assert stats[A]["raw_totals"] == [0.0, raw, raw] and stats[A]["late"] == 2
    assert stats[A]["mean_fraction"]["sgd_step"] == pytest.approx(2 / 3)  # raw
    text = reports.summary_text(stats)
    assert f"mean {(raw + 0.7 * raw) / 3:.1f} of {raw:g}, 2 late ({2 * raw / 3:.1f} before " \
           "the late penalty)" in text, text
    on_time = reports.summary_text(reports.summary(results, layout))
    assert "late" not in on_time


def test_the_class_report_applies_the_policy_it_is_given(tmp_path, monkeypatch):
    """classgrade.report, as `course-grade class --late-policy FILE` calls it."""
    out = tmp_path / "out"
    (out / "notebooks" / A).mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / A / NB, out / "notebooks" / A / NB)
    monkeypatch.setattr(reports, "lateness", lambda _: {("ada", A): 3 * HOUR})
    results = [result("ada", 1.0), result("bob", 0.0)]
    said = classgrade.report(ROOT, out, results, policy(percent_per_day=20))
    rows = {r["student"]: r for r in csv.DictReader(open(out / "grades.csv"))}
    raw = results[0].score
    assert float(rows["ada"]["total"]) == pytest.approx(0.8 * raw)
    assert float(rows["ada"]["raw"]) == raw
    page = (out / "feedback" / "ada" / f"{A}.html").read_text()
    assert "Late: submitted 3 h 0 min after the due date: 1 started day late, \u221220%" in page
    assert "late policy: 20% off per started day late" in said and ", 1 late (" in said
    # the course's own policy (none here): the lateness named, nothing taken off
    said = classgrade.report(ROOT, out, results)
    rows = {r["student"]: r for r in csv.DictReader(open(out / "grades.csv"))}
    assert float(rows["ada"]["total"]) == raw and "late policy" not in said
    assert "submitted 3 h 0 min after the due date" in rows["ada"]["problems"]
