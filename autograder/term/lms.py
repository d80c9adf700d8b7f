"""Grades back to the LMS: `course-grade export` turns the results kept in `OUT/results/`
into the CSV that Canvas's gradebook import takes, one row per student of the course's
Canvas roster, and a CSV of every exercise's score for the instructor.

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

The roster (`--roster`) is Canvas's own gradebook export (Grades > Export), in that same
format. Graded students are matched to it by the Canvas user ID in the name of the file
they submitted (Canvas's download: `name_[LATE_]userid_submissionid_file.ipynb`, see
`intake.canvas_user_id`); without one, by their student id as a Canvas ID, SIS User ID or
SIS Login ID, or by name, and the summary names each of these. A roster student without a
result of an exported assignment gets 0 for it; a graded student not in the roster is a
warning, never dropped in silence. A score is the one that counts, as in grades.csv: after
the late policy (autograder.late; the course's, or `--late-policy FILE`).
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

from autograder import course
from autograder.cells import read_notebook
from autograder.errors import CourseError
from autograder.grading.intake import canvas_user_id, notebook_names
from autograder.grading.reports import Layout, late_score
from autograder.grading.store import Result, lateness, load_results

HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_ROW = "Points Possible"
TITLE_AND_ID = re.compile(r"^(?P<title>.*?)\s*\((?P<id>\d+)\)$")  # "01-autodiff (12345)"
# columns Canvas computes and its import ignores (gradebook_importer.rb)
READ_ONLY = re.compile(r"Current Score|Current Points|Current Grade|Final Score|Final Points"
                       r"|Final Grade")
CANVAS_CSV = "canvas-grades.csv"
EXERCISES_CSV = "exercise-scores.csv"
HOW_TO_GET = "Canvas: Grades > Export > Export Entire Gradebook"
SHOWN = 8  # names listed in a summary line
FALLBACKS = ("SIS User ID", "SIS Login ID", "name")  # matches the summary names


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
# Assignments and their Canvas columns
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


def exported_assignments(root: Path, results: list[Result],
                         wanted: list[str] | None) -> list[str]:
    """The assignments to export: `wanted`, else every one with results."""
    graded = sorted({r.assignment for r in results})
    known = course.assignments(root)
    for name in wanted or []:
        if name not in known:
            raise CourseError(f"There is no assignment {name!r} (known: {', '.join(known)}).")
        if name not in graded:
            raise CourseError(f"No result of {name} is kept: grade it first "
                              f"(`course-grade class INPUT -a {name}`).")
    return sorted(set(wanted)) if wanted else graded


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
# Who is who: graded students and the roster
# ---------------------------------------------------------------------------------------

@dataclass
class Match:
    person: Person
    how: str  # "Canvas ID in the file names", "SIS Login ID", "name", ...


def name_key(name: str) -> str:
    """A name as Canvas writes it in a download's file names: "Doe, Jane" -> "doejane"."""
    return re.sub(r"[^0-9a-z]", "", name.lower())


def _keys(person: Person) -> list[tuple[str, set[str]]]:
    last, _, first = person.name.partition(",")
    names = {name_key(person.name), name_key(first + last)} - {""}
    return [("Canvas ID", {person.canvas_id}), ("SIS User ID", {person.sis_user_id.lower()}),
            ("SIS Login ID", {person.sis_login_id.lower()}), ("name", names)]


def match_students(results: list[Result], roster: Roster
                   ) -> tuple[dict[str, Match], dict[str, str]]:
    """Graded student -> their roster row; and the graded students not found, with why."""
    ids = defaultdict(set)
    for result in results:
        found = canvas_user_id(result.origin)
        if found:
            ids[result.student].add(found)
    by_id = {p.canvas_id: p for p in roster.people}
    matches, missing = {}, {}
    for student in sorted({r.student for r in results}):
        named = sorted(ids.get(student, ()))
        if len(named) > 1:
            missing[student] = f"its files name Canvas IDs {', '.join(named)}"
        elif named and named[0] not in by_id:
            missing[student] = f"Canvas ID {named[0]} is not in the roster"
        elif named:
            matches[student] = Match(by_id[named[0]], "Canvas ID in the file names")
        else:
            _match_by_key(student, roster, matches, missing)
    return matches, missing


def _match_by_key(student: str, roster: Roster, matches: dict, missing: dict) -> None:
    for kind in ("Canvas ID", *FALLBACKS):
        key = name_key(student) if kind == "name" else student.lower()
        found = [p for p in roster.people if key in dict(_keys(p))[kind]]
        if len(found) == 1:
            matches[student] = Match(found[0], kind)
            return
        if found:
            missing[student] = f"{len(found)} roster students have that {kind}"
            return
    missing[student] = "no Canvas ID in its file names, and no roster ID or name matches"


def counted_scores(out: Path, results: list[Result], policy
                   ) -> dict[tuple[str, str], tuple[float, str]]:
    """(student, assignment) -> the score that counts after the late `policy` (None: no
    penalty), and its note; how late each was: nbgrader's gradebook in `out`, as
    grades.csv has it."""
    late = lateness(out) if (out / "gradebook.db").is_file() else {}
    return {(r.student, r.assignment):
            late_score(r, late.get((r.student, r.assignment)), policy) for r in results}


def scores_by_person(results: list[Result], matches: dict[str, Match]
                     ) -> dict[tuple[str, str], Result]:
    """(Canvas ID, assignment) -> the result; CourseError where two students are one."""
    table, whose = {}, {}
    for result in results:
        match = matches.get(result.student)
        if match is None:
            continue
        key = (match.person.canvas_id, result.assignment)
        if key in table:
            raise CourseError(f"{whose[key]} and {result.student} both match "
                              f"{match.person.name} (Canvas ID {key[0]}) and both have a "
                              f"result of {result.assignment}: keep one of them.")
        table[key], whose[key] = result, result.student
    return table


# ---------------------------------------------------------------------------------------
# The files
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


def exercise_rows(root: Path, out: Path, results: list[Result]) -> list[list[str]]:
    """student, assignment, exercise, score, max: every exercise of every result (raw, as
    in grades.csv)."""
    layout = Layout({a: _release(root, out, a) for a in {r.assignment for r in results}})
    rows = [["student", "assignment", "exercise", "score", "max"]]
    for result in sorted(results, key=lambda r: (r.student, r.assignment)):
        for exercise in layout.exercises[result.assignment]:
            score, maximum = layout.exercise_score(result, exercise)
            rows.append([result.student, result.assignment, exercise,
                         "manual" if score is None else number(score), number(maximum)])
    return rows


def _release(root: Path, out: Path, assignment: str):
    """The release notebook `out` was graded with, else the course's."""
    name = notebook_names(root, assignment)[0]
    for folder in (out, root):
        path = folder / course.RELEASE_DIR / assignment / name
        if path.is_file():
            return read_notebook(path)
    raise CourseError(f"No release notebook of {assignment} in {out / course.RELEASE_DIR} or "
                      f"{root / course.RELEASE_DIR}: run `course release`.")


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


# ---------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------

def kept_results(out: Path) -> list[Result]:
    folder = Path(out) / "results"
    if not folder.is_dir():
        raise CourseError(f"{folder} does not exist: grade the class into {out} first "
                          f"(`course-grade class INPUT --out {out}`).")
    try:
        results = load_results(Path(out))
    except (ValueError, TypeError) as error:  # not JSON, or not a result's fields
        raise CourseError(f"A result in {folder} cannot be read ({error}): grade the class "
                          "again with --force.") from error
    if not results:
        raise CourseError(f"{folder} holds no result: grade the class into {out} first.")
    return results


def export(root: Path, out: Path, roster_path: Path, assignments: list[str] | None = None,
           columns: dict[str, str] | None = None, output: Path | None = None,
           policy=None) -> list[str]:
    """Write the Canvas import CSV and the per-exercise CSV; return the summary's lines.
    Everything is checked before either file is written. `policy`: the late policy
    (default: the course's)."""
    out = Path(out)
    results = kept_results(out)
    names = exported_assignments(root, results, assignments)
    results = [r for r in results if r.assignment in names]
    roster = read_roster(Path(roster_path))
    headers, notes = canvas_columns(names, roster, columns or {})
    matches, missing = match_students(results, roster)
    table = scores_by_person(results, matches)
    counted = counted_scores(out, results, policy or course.facts(root).late)
    maxima = {a: max(r.max_score for r in results if r.assignment == a) for a in names}
    canvas_path = Path(output) if output else out / CANVAS_CSV
    if canvas_path.resolve() == Path(roster_path).resolve():
        raise CourseError(f"--output {canvas_path} is the roster: write the import elsewhere.")
    exercises_path = out / EXERCISES_CSV
    rows = canvas_rows(roster, headers, maxima, table, counted)
    per_exercise = exercise_rows(root, out, results)
    write_csv(canvas_path, rows)
    write_csv(exercises_path, per_exercise)
    return [f"Canvas gradebook import: {canvas_path} ({len(roster.people)} students of the "
            f"roster; import it in Canvas: Grades > Import, and check the preview)",
            *_assignment_lines(roster, headers, maxima, table, results),
            *_late_lines(counted), *notes, *_fallback_lines(matches),
            *_missing_lines(missing, results, counted),
            f"per exercise: {exercises_path}"]


def _shown(names: list[str]) -> str:
    return ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more"
                                       if len(names) > SHOWN else "")


def _assignment_lines(roster, headers, maxima, table, results) -> list[str]:
    lines = []
    for assignment, header in headers.items():
        absent = [p.name for p in roster.people if (p.canvas_id, assignment) not in table]
        graded = len(roster.people) - len(absent)
        line = (f"  {assignment} -> column {header!r}, out of {number(maxima[assignment])}: "
                f"{graded} graded")
        if absent:
            line += f"; {len(absent)} without a submission get 0: {_shown(absent)}"
        lines.append(line)
        stated = roster.points.get(header, "")
        try:
            differs = stated and float(stated) != maxima[assignment]
        except ValueError:
            differs = False
        if differs:
            lines.append(f"note: Canvas gives {header!r} {stated} points, the course "
                         f"{number(maxima[assignment])}: the file's Points Possible says "
                         f"{number(maxima[assignment])} (check Canvas's import preview).")
        manual = sorted(r.student for r in results if r.assignment == assignment
                        and any(c.get("score") is None for c in r.cells.values()))
        if manual:
            lines.append(f"note: {len(manual)} submission(s) of {assignment} have cells to "
                         f"grade by hand, counted as 0 here: {_shown(manual)}")
    return lines


def _late_lines(counted: dict) -> list[str]:
    return [f"late: {student} {assignment}: {note}"
            for (student, assignment), (_, note) in sorted(counted.items()) if note]


def _fallback_lines(matches: dict[str, Match]) -> list[str]:
    found = [f"{s} -> {m.person.name} (by {m.how})" for s, m in sorted(matches.items())
             if m.how in FALLBACKS]
    if not found:
        return []
    return [f"matched without a Canvas ID in the file names (check them): {_shown(found)}"]


def _missing_lines(missing: dict[str, str], results: list[Result], counted: dict
                   ) -> list[str]:
    if not missing:
        return []
    lines = [f"warning: {len(missing)} graded student(s) are not in the roster and not in "
             "the Canvas file:"]
    for student, why in sorted(missing.items()):
        theirs = [f"{r.assignment} {number(counted[(student, r.assignment)][0])}/"
                  f"{number(r.max_score)}" for r in results if r.student == student]
        lines.append(f"  {student} ({why}): {', '.join(theirs)}")
    return lines
