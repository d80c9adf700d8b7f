"""What a grading folder remembers (autograder.grading.rules): the late policy, due dates and
limits of its first `class` run, used by every later `class`, `export` and report until an
option changes them, with a line saying which applied. Fast: no kernel (the whole path,
graded, regraded and exported, is in test_classgrade.py)."""

from __future__ import annotations

import argparse
import csv

import pytest

from autograder import late
from autograder.errors import CourseError
from autograder.grading import rules
from autograder.limits import Limits
from conftest import ROOT

A = "01-autodiff"


def parser():
    """`class`'s options that matter here: the rules', two limits (one scored, one not)."""
    p = argparse.ArgumentParser()
    p.add_argument("input")
    rules.add_options(p)
    p.add_argument("--cell-timeout", type=int, default=None)
    p.add_argument("--kernel-threads", type=int, default=None)
    return p


def run(out, *argv):
    """settle, as `course-grade class IN --out out ARGV` does, and keep the rules."""
    p = parser()
    args = p.parse_args(["in", *argv])
    limits = Limits(cell_timeout=args.cell_timeout, kernel_threads=args.kernel_threads)
    settled = rules.settle(ROOT, out, args, rules.given(p, ["in", *argv]), limits)
    rules.keep(out, settled)
    return settled


def test_the_options_given_are_told_from_their_defaults():
    p = parser()
    assert rules.given(p, ["in", "--cell-timeout", "120", "--due", f"{A}=none"]) >= {
        "cell_timeout", "due", "input"}
    assert not rules.given(p, ["in"]) & {"cell_timeout", "due", "late_policy", "memory_mb"}


def test_the_first_run_keeps_its_policy_and_later_runs_use_it(tmp_path):
    policy = tmp_path / "late.toml"
    policy.write_text("percent_per_day = 10\n")
    out = tmp_path / "grading"
    out.mkdir()
    first = run(out, "--late-policy", str(policy))
    assert first.policy == late.Policy(percent_per_day=10.0) and not first.lines
    assert first.policy_line.startswith("late policy: 10% off per started day late (late.toml,"
                                        " given with --late-policy")
    policy.unlink()  # the folder keeps it: the file is no longer needed
    later = run(out)
    assert later.policy == first.policy and not later.lines
    assert f"kept in {out / rules.RULES}" in later.policy_line
    changed = run(out, "--no-late-policy")
    assert changed.policy is None
    assert changed.lines == ["the late policy changes from 10% off per started day late "
                             "(late.toml, given with --late-policy) to none (late work is "
                             "named, nothing taken off): the totals of late submissions change"
                             " in grades.csv, the feedback pages and the export"]
    assert run(out).policy is None


def test_without_a_policy_file_the_course_policy_applies_as_it_is_now(tmp_path):
    settled = rules.settle(ROOT, tmp_path, None, set())
    assert settled.policy is None and "the course sets none" in settled.policy_line
    with pytest.raises(CourseError, match="contradict"):
        run(tmp_path, "--late-policy", "x.toml", "--no-late-policy")


def test_due_dates_are_kept_changed_and_removed(tmp_path):
    assert run(tmp_path, "--due", f"{A}=2026-12-01T23:59+01:00").due == {A: "2026-12-01T22:59"}
    assert run(tmp_path).due == {A: "2026-12-01T22:59"}
    moved = run(tmp_path, "--due", f"{A}=2026-12-02 09:00")
    assert moved.due == {A: "2026-12-02T09:00"} and "due date changes from 2026-12-01T22:59 " \
        "to 2026-12-02T09:00 (UTC)" in moved.lines[0]
    assert run(tmp_path, "--due", f"{A}=none").due == {A: None}
    assert rules.load(tmp_path)["due"] == {}
    for bad, words in ((f"{A}=soon", "'soon' is not a time"), ("01-autodif=2026-12-01",
                                                               "give ASSIGNMENT=TIME")):
        with pytest.raises(CourseError, match=words):
            run(tmp_path, "--due", bad)


def test_limits_are_kept_and_a_change_grades_everyone_again(tmp_path):
    assert run(tmp_path, "--cell-timeout", "10").limits.cell_timeout == 10
    kept = run(tmp_path)
    assert kept.limits.cell_timeout == 10 and not kept.regrade
    assert kept.lines == ["limits kept in this folder: --cell-timeout 10"]
    changed = run(tmp_path, "--cell-timeout", "120", "--kernel-threads", "2")
    assert changed.regrade and changed.limits.kernel_threads == 2
    assert "the limits change (--cell-timeout 10 -> 120)" in changed.lines[0]


def test_a_change_of_grades_is_said(tmp_path):
    with open(tmp_path / "grades.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([["student", f"{A}/total"], ["ada", "13"], ["bob", "7"]])
    assert rules.grade_changes(tmp_path, {("ada", A): 11.7, ("bob", A): 7.0,
                                          ("new", A): 3.0}) == [
        "grades.csv changes for 1 submission(s): ada 01-autodiff 13 -> 11.7"]
