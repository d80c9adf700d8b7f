"""What class grading writes: grades.csv, a feedback page per student, a class summary.

Everything is built from the results kept in `OUT/results/` and the release notebooks, so a
run that grades one more student rewrites the reports with every student in them. Feedback
shows each test's name, its docstring (the first line of the visible test), passed or
failed, points and the check's message; never the source of a test, hidden or visible.
A late policy (autograder.late) takes its penalty off each assignment's total in the
reports; per-exercise scores stay raw, and so does the gradebook.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path

import nbformat

from autograder.cells import (
    grade_id,
    is_answer,
    is_manual,
    is_test,
    test_owners,
)
from autograder.grading.store import lateness
from autograder.late import Policy


def _first_docstring_line(source: str) -> str:
    text = source.strip()
    for quote in ('"""', "'''"):
        if text.startswith(quote):
            end = text.find(quote, 3)
            return text[3:end].strip().splitlines()[0] if end > 3 else ""
    return ""


class Layout:
    """Exercises and test cells of each assignment, from its release notebook."""

    def __init__(self, releases: dict[str, nbformat.NotebookNode]):
        self.exercises: dict[str, list[str]] = {}
        self.tests: dict[str, dict[str, list[str]]] = {}
        self.docs: dict[tuple[str, str], str] = {}
        self.manual: dict[str, set[str]] = {}
        for assignment, release in sorted(releases.items()):
            answers = [grade_id(c) for c in release.cells if is_answer(c)]
            manual = [grade_id(c) for c in release.cells if is_manual(c)]
            self.exercises[assignment] = answers + manual
            self.manual[assignment] = set(manual)
            tests: dict[str, list[str]] = defaultdict(list)
            owners = test_owners(release)
            for cell in release.cells:
                if is_test(cell):
                    owner = owners[grade_id(cell)] or grade_id(cell)
                    if owner not in self.exercises[assignment]:  # above every answer
                        self.exercises[assignment].append(owner)
                    tests[owner].append(grade_id(cell))
                    self.docs[(assignment, grade_id(cell))] = _first_docstring_line(cell.source)
                elif is_manual(cell):
                    tests[grade_id(cell)].append(grade_id(cell))
                    self.docs[(assignment, grade_id(cell))] = "graded by hand"
            self.tests[assignment] = dict(tests)

    def exercise_score(self, result, exercise: str) -> tuple[float | None, float]:
        cells = [result.cells.get(t) for t in self.tests[result.assignment].get(exercise, [])]
        cells = [c for c in cells if c]
        total = sum(c["max_score"] for c in cells)
        if any(c["score"] is None for c in cells):
            return None, total
        return sum(c["score"] for c in cells), total


def late_score(result, seconds_late: float | None, policy: Policy | None = None,
               raw: float | None = None) -> tuple[float, str]:
    """The score that counts for `result` (its raw score `raw`, default its own) submitted
    `seconds_late` after its due date, and a note on its lateness ("" for one on time); no
    `policy`: no penalty."""
    return (policy or Policy()).apply(result.score if raw is None else raw, seconds_late,
                                      result.student, result.assignment)


def write_csv(results, layout: Layout, path: Path, late: dict | None = None,
              policy: Policy | None = None) -> None:
    """One row per student; a column per exercise of each assignment (raw), its total after
    the late `policy` and its raw total, the total and the raw total; problems: what stopped
    grading, and a submission after the due date (`late`: seconds after it)."""
    late = late or {}
    columns = []
    for assignment, names in layout.exercises.items():
        columns += [f"{assignment}/{n}" for n in names] + [f"{assignment}/total",
                                                           f"{assignment}/raw"]
    by_student = defaultdict(dict)
    for result in results:
        by_student[result.student][result.assignment] = result
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *columns, "total", "raw", "max", "problems"])
        for student in sorted(by_student):
            row, total, raw, maximum, problems = [student], 0.0, 0.0, 0.0, []
            for assignment, names in layout.exercises.items():
                result = by_student[student].get(assignment)
                subtotal = 0.0
                for name in names:
                    if result is None:
                        row.append("")
                        continue
                    score, _ = layout.exercise_score(result, name)
                    row.append("manual" if score is None else f"{score:g}")
                    subtotal += score or 0.0
                if result is None:
                    row += ["", ""]
                    continue
                score, note = late_score(result, late.get((student, assignment)), policy,
                                         subtotal)
                row += [f"{score:g}", f"{subtotal:g}"]
                total += score
                raw += subtotal
                maximum += result.max_score
                if result.fatal:
                    problems.append(f"{assignment}: {result.fatal}")
                if stopped_note(result):
                    problems.append(f"{assignment}: {stopped_note(result)}")
                if note:
                    problems.append(f"{assignment}: {note}")
                problems += [f"{assignment}: {p}" for p in problem_notes(result)]
            writer.writerow([*row, f"{round(total, 6):g}", f"{raw:g}", f"{maximum:g}",
                             "; ".join(problems)])


def summary(results, layout: Layout, late: dict | None = None,
            policy: Policy | None = None) -> dict:
    """Mean score per exercise (raw, as a fraction of its points) and the totals (after the
    late `policy`; raw beside them), per assignment, with how many were late."""
    late = late or {}
    out = {}
    for assignment, names in layout.exercises.items():
        mine = [r for r in results if r.assignment == assignment]
        if not mine:
            continue
        means = {}
        for name in names:
            scores = [layout.exercise_score(r, name) for r in mine]
            graded = [(s, t) for s, t in scores if s is not None and t > 0]
            if graded:
                means[name] = sum(s / t for s, t in graded) / len(graded)
        seconds = [late.get((r.student, r.assignment)) for r in mine]
        out[assignment] = {"students": len(mine), "mean_fraction": means,
                           "totals": sorted(late_score(r, s, policy)[0]
                                            for r, s in zip(mine, seconds, strict=True)),
                           "raw_totals": sorted(r.score for r in mine),
                           "late": sum(bool(s and s > 0) for s in seconds),
                           "max": max(r.max_score for r in mine)}
    return out


def summary_text(stats: dict, width: int = 30) -> str:
    lines = []
    for assignment, info in stats.items():
        mean = sum(info["totals"]) / len(info["totals"])
        raw = sum(info.get("raw_totals", info["totals"])) / len(info["totals"])
        lines.append(f"{assignment}: {info['students']} student(s), mean {mean:.1f} of "
                     f"{info['max']:g}" + (f", {info['late']} late" if info.get("late") else "")
                     + (f" ({raw:.1f} before the late penalty)" if raw != mean else ""))
        for name, fraction in info["mean_fraction"].items():
            bar = "#" * round(fraction * width)
            lines.append(f"  {name:28s} {fraction:6.0%} {bar}")
        bins = _histogram(info["totals"], info["max"])
        lines.append("  scores:")
        for low, high, count in bins:
            lines.append(f"  {low:5.1f}-{high:<5.1f} {'*' * count} {count}")
    return "\n".join(lines)


def _histogram(totals, maximum, bins: int = 5):
    maximum = maximum or 1.0
    step = maximum / bins
    counts = [0] * bins
    for total in totals:
        counts[min(bins - 1, int(math.floor(total / step)))] += 1
    return [(i * step, (i + 1) * step, counts[i]) for i in range(bins)]


def summary_png(stats: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = len(stats)
    fig, axes = plt.subplots(rows, 2, figsize=(11, 3.2 * rows), squeeze=False)
    for (assignment, info), (left, right) in zip(stats.items(), axes, strict=True):
        names = list(info["mean_fraction"])
        left.barh(names, [100 * info["mean_fraction"][n] for n in names], color="#4c72b0")
        left.set_xlim(0, 100)
        left.invert_yaxis()
        left.set_xlabel("mean score, % of the exercise's points")
        left.set_title(f"{assignment}: mean per exercise", fontsize=10)
        right.hist(info["totals"], bins=max(5, int(info["max"]) + 1),
                   range=(0, info["max"] + 1), color="#dd8452", align="left")
        right.set_xlabel(f"total score (of {info['max']:g})")
        right.set_ylabel("students")
        right.set_title(f"{assignment}: scores of {info['students']} student(s)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_all(results, releases: dict, out: Path, policy: Policy | None = None) -> dict:
    """grades.csv, feedback/<student>/<assignment>.html, summary.png, with the late `policy`
    (none: no penalty); returns the summary."""
    from autograder.grading import feedback

    layout = Layout(releases)
    late = lateness(out)
    write_csv(results, layout, out / "grades.csv", late, policy)
    for result in results:
        graded = out / "autograded" / result.student / result.assignment / result.notebook
        page = out / "feedback" / result.student / f"{result.assignment}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(feedback.page(result, layout, feedback.student_answers(graded),
                                      late.get((result.student, result.assignment)), policy),
                        encoding="utf-8")
    stats = summary(results, layout, late, policy)
    summary_png(stats, out / "summary.png")
    return stats


STOPPED = "grading stopped"  # how the note of a submission past its time limit begins


def stopped_note(result) -> str | None:
    """The limit that stopped `result`'s grading, in a line (None: none did)."""
    for note in result.notes:
        if note.startswith(STOPPED):
            return note.split(";")[0]
    return None


def problem_notes(result) -> list[str]:
    """What grades.csv's problems column says of `result` besides its fatal reason, the
    limit that stopped it and its lateness: cells stopped at the time limit, kernel crashes,
    and Canvas's _LATE_ mark on a submission without a time."""
    from autograder.grading.intake import canvas_marked_late

    found = [n.split(" (--cell-timeout)")[0] for n in result.notes
             if "ran past the time limit" in n]
    found += [n.split(";")[0] for n in result.notes if n.startswith("the kernel stopped")]
    if canvas_marked_late(result.origin) and not result.timestamp:
        found.append(CANVAS_LATE)
    return found


CANVAS_LATE = ("Canvas marked it late (_LATE_ in the file name), but its download holds no "
               "submission time: no late penalty taken here")


def describe_findings(findings: dict, cell_timeout: float | None = None) -> list[str]:
    """What the executor found, in sentences for the student and the instructor; cells
    named as JupyterLab shows them (autograder.cells.place_of); `cell_timeout`: the seconds
    a cell was given."""
    places = findings.get("places", {})

    def where(cell: int) -> str:
        return places.get(str(cell), f"cell {cell + 1}")

    notes = []
    cores = findings.get("cpu_cores")
    cores = f" with {cores:g} CPU core(s) (--cpu-cores)" if cores else ""
    stopped = findings.get("stopped")
    if stopped:
        seconds, left = stopped["seconds"], stopped.get("not_run", 0)
        notes.append(
            f"{STOPPED} in {where(stopped['cell'])}: the notebook passed the time limit for a "
            f"whole submission, {seconds} s (--submission-timeout){cores}; that cell"
            + (f" and the {left} code cell(s) after it" if left else "")
            + " did not finish, and their tests score 0. Make the notebook run faster from "
            "top to bottom (fewer training steps or epochs, no long searches or sleeps), well "
            f"within {seconds} s, then submit again")
    limit = f" of {cell_timeout:g} s per cell" if cell_timeout else " per cell"
    for cell in findings.get("timeouts", []):
        notes.append(f"{where(cell)} ran past the time limit{limit} (--cell-timeout){cores} "
                     "and was stopped, and a test stopped scores 0; make the code it runs "
                     "finish well within it (an endless loop, a long training run or a sleep "
                     "is the usual cause), then submit again")
    for crash in findings.get("crashes", []):
        when = " while the grader rebuilt the state after a crash" if crash.get(
            "rebuilding") else ""
        notes.append(f"the kernel stopped in {where(crash['cell'])}{when}: {crash['reason']};"
                     " a fresh kernel ran the cells before it again and grading went on")
    if findings.get("not_run"):
        notes.append(f"{len(findings['not_run'])} cell(s) did not run: the kernel kept dying")
    for cell in findings.get("truncated", []):
        notes.append(f"{where(cell)} printed more output than the limit; the rest was dropped")
    for item in findings.get("cell_errors", []):
        stub = str(item["error"]).strip().rstrip(":") == "NotImplementedError"
        notes.append(f"{where(item['cell'])} raised an error: {item['error']}"
                     + (" (an exercise it runs is not answered yet)" if stub else ""))
    return notes
