"""The late policy: what a submission after its due date costs.

Set in the course's pyproject.toml (or a TOML file given to `course-grade class
--late-policy FILE`, with the same keys at its top level):

    [tool.course-grade.late]
    percent_per_day = 10          # taken off the assignment's total per started day late
    cap_percent = 50              # the most taken off (default 100)
    cutoff_days = 7               # later than this: 0 points (default: none)
    grace_minutes = 15            # the due date moves this much later for everyone
    extensions = { "ada" = 2, "bob/01-autodiff" = 1 }   # days, per student or submission

How late a submission is comes from nbgrader's gradebook (the due date set in the
formgrader, the time the exchange gave the submission: `autograder.grading.store.lateness`). The
due date moves by the student's extension ("student/assignment" wins over "student") and
the grace period; a submission after it is late by the started days since it (a minute
late is one day, 24 h 1 min two), `percent_per_day` each, at most `cap_percent`; one later than
`cutoff_days` after it scores 0. The penalty is on the assignment's total: per-exercise
scores and nbgrader's gradebook stay raw. No table: no penalty, a late submission is
only named.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from autograder.errors import CourseError

DAY = 86400.0
KEYS = ("percent_per_day", "cap_percent", "cutoff_days", "grace_minutes", "extensions")


@dataclass(frozen=True)
class Policy:
    percent_per_day: float = 0.0
    cap_percent: float = 100.0
    cutoff_days: float | None = None
    grace_minutes: float = 0.0
    extensions: tuple[tuple[str, float], ...] = ()  # ("ada", 2), ("bob/01-autodiff", 1)

    def extension_days(self, student: str, assignment: str) -> float:
        given = dict(self.extensions)
        return given.get(f"{student}/{assignment}", given.get(student, 0.0))

    def apply(self, raw_score: float, seconds_late: float | None, student: str,
              assignment: str) -> tuple[float, str]:
        """The score that counts, and a note saying why ("" for one on time)."""
        if not seconds_late or seconds_late <= 0:
            return raw_score, ""
        said = describe_late(seconds_late)
        extension = self.extension_days(student, assignment)
        if extension:
            said += f" (with an extension of {_days(extension)})"
        counted = seconds_late - extension * DAY - self.grace_minutes * 60
        if counted <= 0:
            within = "extension" if extension else "grace period"
            return raw_score, f"{said}: within the {within}, no penalty"
        if self.cutoff_days is not None and counted > self.cutoff_days * DAY:
            return 0.0, (f"{said}: more than {_days(self.cutoff_days)} late, 0 points "
                         f"(raw {raw_score:g})")
        if not self.percent_per_day:
            return raw_score, said
        days = math.ceil(counted / DAY)
        percent = min(self.cap_percent, days * self.percent_per_day)
        score = round(raw_score * (1 - percent / 100), 6)
        capped = " (the cap)" if percent < days * self.percent_per_day else ""
        return score, (f"{said}: {days} started day{'s' * (days != 1)} late, "
                       f"\u2212{percent:g}%{capped} (score {score:g} of raw {raw_score:g})")


    def describe(self) -> str:
        """The policy in a line, for the class summary."""
        rules = []
        if self.percent_per_day:
            rules.append(f"{self.percent_per_day:g}% off per started day late"
                         + (f", at most {self.cap_percent:g}%" if self.cap_percent < 100
                            else ""))
        if self.cutoff_days is not None:
            rules.append(f"0 points after {_days(self.cutoff_days)}")
        if self.grace_minutes:
            rules.append(f"{self.grace_minutes:g} min of grace")
        if self.extensions:
            rules.append(f"{len(self.extensions)} extension(s)")
        return "; ".join(rules) or "no penalty"


def describe_late(seconds: float) -> str:
    hours, minutes = divmod(round(seconds / 60), 60)
    days, hours = divmod(hours, 24)
    parts = [f"{days} d"] * bool(days) + [f"{hours} h"] * bool(hours) + [f"{minutes} min"]
    return "submitted " + " ".join(parts) + " after the due date"


def _days(days: float) -> str:
    return f"{days:g} day{'s' * (days != 1)}"


def parse(table, where: str, assignments=None) -> Policy:
    """The policy of a `late` table; CourseError, one sentence naming `where` and the key,
    for one it cannot use. `assignments`: the course's, to check extensions' names."""
    if not isinstance(table, dict):
        raise CourseError(f"{where} must be a table of {_keys()}.")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise CourseError(f"{where} has no key {unknown[0]!r}; it takes {_keys()}.")
    values = {}
    for key in KEYS[:-1]:
        if key in table:
            values[key] = _number(table[key], f"{where}: {key}",
                                  most=100 if "percent" in key else None)
    extensions = table.get("extensions", {})
    if not isinstance(extensions, dict):
        raise CourseError(f"{where}: extensions must be a table of student (or "
                          f"student/assignment) = days, such as {{ \"ada\" = 2 }}.")
    given = []
    for name, days in sorted(extensions.items()):
        parts = name.split("/")
        if len(parts) > 2 or not all(p.strip() for p in parts):
            raise CourseError(f"{where}: extensions key {name!r} must be a student or "
                              "student/assignment.")
        if len(parts) == 2 and assignments is not None and parts[1] not in assignments:
            raise CourseError(f"{where}: extensions key {name!r} names no assignment of "
                              f"the course (it has {', '.join(assignments) or 'none'}).")
        given.append((name, _number(days, f"{where}: extensions.{name}")))
    return Policy(**values, extensions=tuple(given))


def load(path: Path, assignments=None) -> Policy:
    """The policy in a TOML file whose top level holds the keys of the `late` table."""
    try:
        table = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise CourseError(f"The late policy {path} cannot be read ({error}).") from error
    return parse(table, str(path), assignments)


def _keys() -> str:
    return ", ".join(KEYS[:-1]) + f" and {KEYS[-1]}"


def _number(value, what: str, most: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) \
            or math.isinf(value):
        raise CourseError(f"{what} must be a number (got {value!r}).")
    if value < 0:
        raise CourseError(f"{what} must be 0 or more (got {value!r}).")
    if most is not None and value > most:
        raise CourseError(f"{what} must be at most {most:g} (got {value!r}).")
    return float(value)
