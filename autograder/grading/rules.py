"""What a grading folder remembers: the rules its class was graded under, `OUT/rules.json`.

The first `course-grade class` into a folder keeps there its late policy (`--late-policy
FILE`, else the course's `[tool.course-grade.late]`), the due dates given (`--due
ASSIGNMENT=TIME`) and the limits that can change a score (`--cell-timeout`, `--memory-mb`,
...). Every later `class` and `export` into the same folder applies them without the
options being repeated, and says in one line which late policy applied and where it came
from. An option given again changes the rule, and the run says so before it grades: new
limits grade every submission again; a new policy or due date changes the totals, and the
report names each total that changes before it writes `grades.csv` (`grade_changes`).
"""

from __future__ import annotations

import argparse
import csv
import json
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path

from autograder import course, late
from autograder.errors import CourseError
from autograder.limits import Limits

RULES = "rules.json"
# the limits that can change a score (kernel_threads only changes the speed)
SCORED = tuple(f.name for f in fields(Limits) if f.name in (
    "cell_timeout", "memory_mb", "max_output_kb", "cpu_seconds", "cpu_cores",
    "submission_timeout", "max_received_mb", "grader_memory_mb"))
COURSE = "the course's pyproject.toml, [tool.course-grade.late]"


def add_options(parser, due: bool = True) -> None:
    """--late-policy and --no-late-policy (and --due) of `class` and `export`."""
    parser.add_argument("--late-policy", metavar="FILE", default=None,
                        help="a TOML file with the keys of [tool.course-grade.late] "
                             "(percent_per_day, cap_percent, cutoff_days, grace_minutes, "
                             "extensions); the folder keeps it for later runs (default: the "
                             "one it keeps, else the course's)")
    parser.add_argument("--no-late-policy", action="store_true",
                        help="no late penalty from now on in this folder (late work is named)")
    if due:
        parser.add_argument("--due", action="append", metavar="ASSIGNMENT=TIME", default=[],
                            help="an assignment's due date, e.g. 01-autodiff=2026-12-01T23:59"
                                 "+01:00 (no zone: UTC; 'none' removes it); kept for later runs")


def given(parser: argparse.ArgumentParser, argv: list[str]) -> set[str]:
    """The options `argv` gives `parser` explicitly (their dests), defaults left out."""
    unset = object()  # an appending option starts from None, the others from `unset`
    probe = argparse.Namespace(**{a.dest: None if isinstance(a, argparse._AppendAction)
                                  else unset for a in parser._actions
                                  if a.dest != argparse.SUPPRESS})
    parser.parse_known_args(argv, probe)
    return {name for name, value in vars(probe).items() if value not in (unset, None)}


@dataclass
class Settled:
    """The rules of one run, and what it says of them before it grades."""
    policy: late.Policy | None
    policy_line: str  # which late policy applied, and where it came from
    due: dict = field(default_factory=dict)  # assignment -> due date, ISO in UTC (None: none)
    limits: Limits | None = None
    lines: list = field(default_factory=list)  # said before grading: what changed
    regrade: bool = False  # the scored limits changed: every submission graded again
    late_changed: bool = False  # a policy given that the folder did not keep before
    stored: dict = field(default_factory=dict)  # what rules.json holds after the run


def load(out: Path) -> dict:
    path = Path(out) / RULES
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CourseError(f"{path} cannot be read ({error}): delete it, and give the late "
                          "policy, due dates and limits again.") from error


def keep(out: Path, settled: Settled) -> None:
    """Write the rules of a run that graded into `out`."""
    path = Path(out) / RULES
    path.write_text(json.dumps(settled.stored, indent=1, sort_keys=True) + "\n",
                    encoding="utf-8")


def settle(root: Path, out: Path, args, explicit: set[str], limits: Limits | None = None
           ) -> Settled:
    """The rules for a run of `class` (`limits` given) or `export` into `out`: the options
    given in `explicit` win and are kept, the others come from the folder, and on its first
    run from the course."""
    kept = load(out)
    first = not kept
    stored = {"late": _late_rule(root, args, kept.get("late"))}
    policy = _policy(root, stored["late"])
    settled = Settled(policy, "", stored=stored)
    old = kept.get("late")
    given_now = bool(getattr(args, "late_policy", None) or getattr(args, "no_late_policy", 0))
    settled.late_changed = old != stored["late"] and (given_now or bool(old))
    if old and old.get("table") != stored["late"].get("table"):
        was = _policy(root, old)
        settled.lines.append(
            f"the late policy changes from {_said(was)} ({old['from']}) to {_said(policy)}: "
            "the totals of late submissions change in grades.csv, the feedback pages and "
            "the export")
    settled.policy_line = (f"late policy: {_said(policy)} ({stored['late']['from']}"
                           + ("" if first else f"; kept in {Path(out) / RULES}") + "; "
                           "--late-policy FILE or --no-late-policy changes it)")
    settled.due = dict(kept.get("due", {}))  # None: taken off the gradebook
    settled.due.update(_due(root, item) for item in getattr(args, "due", None) or [])
    stored["due"] = {a: when for a, when in settled.due.items() if when}
    for assignment in sorted(settled.due):
        before, now = kept.get("due", {}).get(assignment), settled.due[assignment]
        if before != now and not first:
            settled.lines.append(f"{assignment}'s due date changes from {before or 'none'} "
                                 f"to {now or 'none'} (UTC): how late each was changes")
    if limits is not None:
        settled.limits, settled.regrade = _limits(kept.get("limits"), limits, explicit,
                                                  settled.lines)
        stored["limits"] = {name: getattr(settled.limits, name) for name in SCORED}
    elif "limits" in kept:
        stored["limits"] = kept["limits"]
    stored["since"] = kept.get("since") or datetime.now(UTC).isoformat(
        timespec="seconds")
    return settled


def _late_rule(root: Path, args, kept: dict | None) -> dict:
    if getattr(args, "late_policy", None) and getattr(args, "no_late_policy", False):
        raise CourseError("--late-policy and --no-late-policy contradict each other: give one.")
    if getattr(args, "late_policy", None):
        path = Path(args.late_policy)
        policy = late.load(path, course.assignments(root))
        return {"from": f"{path.name}, given with --late-policy", "table": table_of(policy)}
    if getattr(args, "no_late_policy", False):
        return {"from": "--no-late-policy", "table": None}
    if kept and not kept.get("course"):
        return kept
    policy = course.facts(root).late  # the course's, as it is now
    return {"from": COURSE if policy else "the course sets none",
            "table": table_of(policy) if policy else None, "course": True}


def _policy(root: Path, rule: dict) -> late.Policy | None:
    if rule.get("course"):  # the course's own, as it is now
        return course.facts(root).late
    table = rule.get("table")
    return None if table is None else late.parse(table, f"the late policy in {RULES}")


def table_of(policy: late.Policy) -> dict:
    """`policy` as the TOML table it is written in."""
    table = {"percent_per_day": policy.percent_per_day, "cap_percent": policy.cap_percent,
             "grace_minutes": policy.grace_minutes, "extensions": dict(policy.extensions)}
    if policy.cutoff_days is not None:
        table["cutoff_days"] = policy.cutoff_days
    return table


def _said(policy: late.Policy | None) -> str:
    return "none (late work is named, nothing taken off)" if policy is None \
        else policy.describe()


def _due(root: Path, item: str) -> tuple[str, str | None]:
    assignment, sep, when = item.partition("=")
    known = course.assignments(root)
    if not sep or assignment not in known:
        raise CourseError(f"--due {item!r}: give ASSIGNMENT=TIME, an assignment of "
                          f"{', '.join(known)}, e.g. {known[0]}=2026-12-01T23:59+01:00.")
    if when.strip().lower() == "none":
        return assignment, None
    from nbgrader.utils import parse_utc

    try:
        return assignment, parse_utc(when.strip()).isoformat(timespec="minutes")
    except (ValueError, OverflowError) as error:
        raise CourseError(f"--due {item!r}: {when!r} is not a time; write it as "
                          "2026-12-01T23:59+01:00 (without a zone: UTC).") from error


def _limits(kept: dict | None, limits: Limits, explicit: set[str], lines: list
            ) -> tuple[Limits, bool]:
    """The limits of a class run: an option given wins, else the folder's; and whether
    they differ from the folder's (every submission is then graded again)."""
    if not kept:
        return limits, False
    values = {name: getattr(limits, name) if name in explicit else kept.get(
        name, getattr(limits, name)) for name in SCORED}
    chosen = Limits.from_dict({**limits.as_dict(), **values})
    changed = [f"--{n.replace('_', '-')} {kept.get(n)} -> {values[n]}" for n in SCORED
               if n in kept and kept[n] != values[n]]
    if changed:
        lines.append(f"the limits change ({', '.join(changed)}): every submission is graded "
                     "again under the new ones, so that the whole class has the same")
    kept_given = [f"--{n.replace('_', '-')} {kept[n]}" for n in SCORED
                  if n in kept and n not in explicit and getattr(limits, n) != kept[n]]
    if kept_given:
        lines.append(f"limits kept in this folder: {', '.join(kept_given)}")
    return chosen, bool(changed)


def apply_due(out: Path, due: dict) -> None:
    """Set the due dates in `due` (assignment -> ISO time in UTC; None: no due date) in the
    gradebook of `out`, where how late each submission was is read (store.lateness)."""
    if not due:
        return
    from nbgrader.api import Gradebook

    with Gradebook("sqlite:///" + str(Path(out) / "gradebook.db")) as gradebook:
        for assignment, when in due.items():
            gradebook.update_or_create_assignment(
                assignment, duedate=datetime.fromisoformat(when) if when else None)


def grade_changes(out: Path, totals: dict) -> list[str]:
    """Lines naming each total of `grades.csv` in `out` that `totals` ((student,
    assignment) -> the score that counts) changes, said before it is written."""
    path = Path(out) / "grades.csv"
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    changed = []
    for (student, assignment), score in sorted(totals.items()):
        before = rows.get(student, {}).get(f"{assignment}/total")
        if before not in (None, "") and abs(float(before) - score) > 1e-9:
            changed.append(f"{student} {assignment} {float(before):g} -> {score:g}")
    if not changed:
        return []
    return [f"grades.csv changes for {len(changed)} submission(s): "
            + ", ".join(changed[:10]) + (f" and {len(changed) - 10} more"
                                         if len(changed) > 10 else "")]
