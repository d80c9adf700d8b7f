"""Grades back to the LMS: `course-grade export` turns the results kept in `OUT/results/`
into the CSV that Canvas's gradebook import takes (its format: `autograder.term.canvas`),
one row per student of the course's Canvas roster, and a CSV of every exercise's score for
the instructor.

The roster (`--roster`) is Canvas's own gradebook export (Grades > Export), in that same
format. Graded students are matched to it by the Canvas user ID in the name of the file
they submitted (Canvas's download: `name_[LATE_]userid_submissionid_file.ipynb`, see
`intake.canvas_user_id`); without one, by their student id as a Canvas ID, SIS User ID or
SIS Login ID, or by name, and the summary names each of these. A roster student without a
result of an exported assignment gets 0 for it; a graded student not in the roster is a
warning, never dropped in silence. A score is the one that counts, as in grades.csv: after
the late policy (autograder.late) that the grading folder keeps (autograder.grading.rules:
the one `course-grade class` applied, or a `--late-policy FILE` given here, which the
folder keeps from then on). Canvas's `_LATE_` mark is named: its download holds no time.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from autograder import course
from autograder.cells import read_notebook
from autograder.errors import CourseError
from autograder.grading import rules
from autograder.grading.intake import canvas_marked_late, canvas_user_id, notebook_names
from autograder.grading.reports import Layout, late_score
from autograder.grading.store import Result, lateness, load_results
from autograder.term.canvas import (
    Person,
    Roster,
    canvas_columns,
    canvas_rows,
    number,
    read_roster,
    write_csv,
)

CANVAS_CSV = "canvas-grades.csv"
EXERCISES_CSV = "exercise-scores.csv"
SHOWN = 8  # names listed in a summary line
FALLBACKS = ("SIS User ID", "SIS Login ID", "name")  # matches the summary names


# ---------------------------------------------------------------------------------------
# Assignments
# ---------------------------------------------------------------------------------------

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
# The per-exercise file
# ---------------------------------------------------------------------------------------

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


FOLDER = "the folder's"  # export's default late policy: the one the grading folder keeps


def export(root: Path, out: Path, roster_path: Path, assignments: list[str] | None = None,
           columns: dict[str, str] | None = None, output: Path | None = None,
           policy=FOLDER) -> list[str]:
    """Write the Canvas import CSV and the per-exercise CSV; return the summary's lines.
    Everything is checked before either file is written. `policy`: the late policy (None:
    none; default: the one `out` keeps, autograder.grading.rules, else the course's)."""
    out = Path(out)
    results = kept_results(out)
    names = exported_assignments(root, results, assignments)
    results = [r for r in results if r.assignment in names]
    roster = read_roster(Path(roster_path))
    headers, notes = canvas_columns(names, roster, columns or {})
    matches, missing = match_students(results, roster)
    table = scores_by_person(results, matches)
    if policy is FOLDER:
        policy = rules.settle(root, out, None, set()).policy
    counted = counted_scores(out, results, policy)
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
            *_late_lines(counted, results), *notes, *_fallback_lines(matches),
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


def _late_lines(counted: dict, results: list[Result] = ()) -> list[str]:
    marked = sorted(f"{r.student} {r.assignment}" for r in results
                    if canvas_marked_late(r.origin) and not counted[(r.student,
                                                                     r.assignment)][1])
    return [f"late: {student} {assignment}: {note}"
            for (student, assignment), (_, note) in sorted(counted.items()) if note] + (
        [f"note: Canvas marked {len(marked)} submission(s) _LATE_ ({_shown(marked)}); its "
         "download holds no submission time, so no late penalty is taken here: Canvas's "
         "own late policy, if you set one, applies to the grades you import"] if marked else [])


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
