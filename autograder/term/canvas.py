"""Canvas's gradebook CSV: reading the roster (Canvas's own export) and writing the file its
gradebook import takes.

The format, as Canvas reads it (the source of Canvas LMS's import, instructure/canvas-lms
app/models/gradebook_importer.rb: `header?`, `update_column_count`, `parse_assignments`,
`check_for_non_student_row`, `process_student`; what each column holds:
https://nemogb-dev.github.io/nemogb-r/articles/detailed-canvas-export-info.html and
https://teaching.resources.osu.edu/toolsets/carmencanvas/guides/calculating-final-grades/import-csv-file-carmen-grades):

- the first row is the header: `Student, ID, SIS User ID, SIS Login ID, Section`, then a
  column per assignment headed `Title (assignment id)`, as Canvas's own export heads it (a
  bare title is matched to the assignment of that title; an unknown one is created);
- a row whose first cell says `Points Possible` holds each assignment's maximum;
- every other row is a student, found by Canvas user ID (`ID`), else SIS User ID, else
  SIS Login ID, else by name.
"""

from __future__ import annotations

import csv
import io
import os
import re
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from autograder.errors import CourseError
from autograder.grading.store import Result

HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_ROW = "Points Possible"
TITLE_AND_ID = re.compile(r"^(?P<title>.*?)\s*\((?P<id>\d+)\)$")  # "01-autodiff (12345)"
# columns Canvas computes and its import ignores (gradebook_importer.rb)
READ_ONLY = re.compile(r"Current Score|Current Points|Current Grade|Final Score|Final Points"
                       r"|Final Grade")
HOW_TO_GET = "Canvas: Grades > Export > Export Entire Gradebook"


# ---------------------------------------------------------------------------------------
# The roster: Canvas's gradebook export
# ---------------------------------------------------------------------------------------

@dataclass
class Person:
    """A student row of Canvas's gradebook."""

    name: str  # as Canvas shows it, "Last, First"
    canvas_id: str
    sis_user_id: str
    sis_login_id: str
    section: str


@dataclass
class Roster:
    people: list[Person]
    columns: list[str]  # its assignment columns, headed as Canvas heads them
    points: dict[str, str]  # column -> its Points Possible


def read_roster(path: Path) -> Roster:
    """Canvas's gradebook export at `path`; CourseError for anything else."""
    rows = _csv_rows(Path(path))
    header = [cell.strip() for cell in rows[0]]
    _check_header(path, header)
    section = header.index("Section")
    columns = [c for c in header[section + 1:] if c and not READ_ONLY.search(c)]
    people, points = [], {}
    for row in rows[1:]:
        cells = dict(zip(header, (c.strip() for c in row), strict=False))  # short rows
        if POINTS_ROW in cells.get("Student", ""):
            points = {c: cells.get(c, "") for c in columns}
        elif cells.get("ID", "").isdigit():  # not Canvas's "Muted"/posting-policy rows
            people.append(Person(cells["Student"], cells["ID"], cells.get("SIS User ID", ""),
                                 cells.get("SIS Login ID", ""), cells.get("Section", "")))
    if not people:
        raise CourseError(f"The roster {path} lists no student with a Canvas ID: export the "
                          f"whole gradebook ({HOW_TO_GET}).")
    ids = [p.canvas_id for p in people]
    if len(set(ids)) != len(ids):
        twice = sorted({i for i in ids if ids.count(i) > 1})
        raise CourseError(f"The roster {path} lists Canvas ID {', '.join(twice)} more than "
                          "once: it is not one export of Canvas's gradebook.")
    return Roster(people, columns, points)


def _csv_rows(path: Path) -> list[list[str]]:
    if not path.is_file():
        raise CourseError(f"The roster {path} does not exist: download it from {HOW_TO_GET}.")
    try:
        text = path.read_text(encoding="utf-8-sig")
        first = text.splitlines()[0] if text.strip() else ""
        delimiter = ";" if first.count(";") > first.count(",") else ","  # some locales
        rows = [r for r in csv.reader(io.StringIO(text), delimiter=delimiter)
                if any(c.strip() for c in r)]
    except (UnicodeDecodeError, csv.Error) as error:
        raise CourseError(f"The roster {path} is not a CSV file exported by Canvas "
                          f"({error}).") from error
    if not rows:
        raise CourseError(f"The roster {path} is empty: download it from {HOW_TO_GET}.")
    return rows


def _check_header(path: Path, header: list[str]) -> None:
    if len(header) < 3 or not header[0].startswith("Student") or header[1] != "ID" \
            or "Section" not in header:
        raise CourseError(f"The roster {path} is not Canvas's gradebook export: its first row "
                          f"should start {', '.join(HEADER)} and it starts "
                          f"{', '.join(header[:5]) or 'empty'} (download it from "
                          f"{HOW_TO_GET}).")


# ---------------------------------------------------------------------------------------
# Assignments and their columns
# ---------------------------------------------------------------------------------------

def parse_columns(pairs: list[str] | None) -> dict[str, str]:
    """`--column ASSIGNMENT=COLUMN` options as a dict."""
    chosen = {}
    for pair in pairs or []:
        assignment, sep, column = pair.partition("=")
        if not sep or not assignment.strip() or not column.strip():
            raise CourseError(f"--column takes ASSIGNMENT=CANVAS_COLUMN, e.g. "
                              f"01-autodiff='Autodiff (12345)' (got {pair!r}).")
        chosen[assignment.strip()] = column.strip()
    return chosen


def canvas_columns(assignments: list[str], roster: Roster,
                   chosen: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """Assignment -> its column header in the Canvas CSV: the column of the roster titled
    as `chosen` says (default: the assignment's name), ids included; else that title, which
    Canvas's import makes a new assignment of (said in the notes returned)."""
    unknown = sorted(set(chosen) - set(assignments))
    if unknown:
        raise CourseError(f"--column names {', '.join(unknown)}, which is not exported here "
                          f"(exported: {', '.join(assignments)}).")
    by_title = defaultdict(list)
    for column in roster.columns:
        match = TITLE_AND_ID.match(column)
        by_title[match["title"] if match else column].append(column)
    headers, notes = {}, []
    for assignment in assignments:
        title = chosen.get(assignment, assignment)
        found = [title] if title in roster.columns else by_title.get(title, [])
        if len(found) > 1:
            raise CourseError(f"The roster has {len(found)} columns titled {title!r} "
                              f"({'; '.join(found)}): choose one with "
                              f"--column {assignment}='{found[0]}'.")
        headers[assignment] = found[0] if found else title
        if not found:
            notes.append(f"note: the roster has no column {title!r}: Canvas's import makes a "
                         f"new assignment of it (to fill an existing one: --column "
                         f"{assignment}='TITLE (ID)' as the roster heads it).")
    twice = sorted({h for h in headers.values() if list(headers.values()).count(h) > 1})
    if twice:
        raise CourseError(f"Two assignments would fill the Canvas column {twice[0]!r}: give "
                          "each its own with --column.")
    return headers, notes


# ---------------------------------------------------------------------------------------
# The file
# ---------------------------------------------------------------------------------------

def number(value: float) -> str:
    return f"{round(value, 2):.2f}".rstrip("0").rstrip(".")


def canvas_rows(roster: Roster, headers: dict[str, str], maxima: dict[str, float],
                table: dict[tuple[str, str], Result], counted: dict) -> list[list[str]]:
    rows = [[*HEADER, *headers.values()],
            [POINTS_ROW, "", "", "", "", *(number(maxima[a]) for a in headers)]]
    for p in roster.people:
        found = [table.get((p.canvas_id, a)) for a in headers]
        scores = [counted[(r.student, r.assignment)][0] if r else 0.0 for r in found]
        rows.append([p.name, p.canvas_id, p.sis_user_id, p.sis_login_id, p.section,
                     *map(number, scores)])
    return rows


def write_csv(path: Path, rows: list[list[str]]) -> None:
    """`rows` into `path` whole or not at all: a file beside it, renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.",
                                         suffix=".tmp", delete=False, newline="",
                                         encoding="utf-8")
    try:
        with handle:
            csv.writer(handle).writerows(rows)
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
