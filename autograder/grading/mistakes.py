"""What the class got wrong, and who to follow up: the mistakes report.

`course-grade class` writes it after grading (and `course-grade mistakes OUT` again, from a
graded folder), from what grading already recorded: each test's score and message in
`OUT/results/`. No test runs again.

For each exercise: the share of the graded students who passed it, and its failing checks
grouped by the mistake they name: the check's hint where it gives one ("Hint: ..." in the
message, as the course's check helpers write it), else the check itself (the test and its
message's first clause, numbers and lists left out, so that "got 2, expected 2.1" and "got
5, expected 5.1" are one group). An answer left as the release's stub (`raise
NotImplementedError()`), a test stopped at the time limit and a test the kernel died in
are groups of their own. The exercises come in order of the share of the class that lost
points there. Students are followed up when they lost points to the same mistake in
several exercises, left several unanswered, handed in nothing or the blank notebook,
could not be graded, crashed, ran past a time limit, or scored under half.

The page (`autograder.grading.mistakes_page`) and `OUT/mistakes.json` show it all; the
terminal gets the three most common mistakes and the follow-up count.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autograder.errors import CourseError
from autograder.grading.reports import Layout

UNANSWERED, TIMEOUT, CRASH, HINT, CHECK = "unanswered", "timeout", "crash", "hint", "check"
TITLES = {UNANSWERED: "not answered: the answer cell is as it was handed out",
          TIMEOUT: "ran past the time limit of a cell: the code it calls did not finish",
          CRASH: "the kernel died in the test: the code it calls crashed it"}
EXAMPLE_CHARS = 240  # of a failing check's message, shown as what a student got
TOP = 3  # mistakes in the terminal summary
PAGE, DATA = "mistakes.html", "mistakes.json"


@dataclass
class Group:
    """One mistake in one exercise, and the students who made it."""
    kind: str  # UNANSWERED, TIMEOUT, CRASH, HINT or CHECK
    key: str  # what makes two failures one mistake
    title: str  # the hint, the check, or one of TITLES
    test: str = ""  # for a CHECK: its test cell; else the first test it failed in
    doc: str = ""  # that test's docstring line
    example: str = ""  # what the first student got, anonymised and cut
    students: list = field(default_factory=list)
    hidden: bool = True  # every failure of the group was in a hidden test (Validate passes)


@dataclass
class Exercise:
    assignment: str
    name: str
    points: float
    graded: list = field(default_factory=list)  # students whose submission was graded
    passed: list = field(default_factory=list)  # ... with every point
    lost: list = field(default_factory=list)  # ... without
    groups: list = field(default_factory=list)

    @property
    def lost_share(self) -> float:
        return len(self.lost) / len(self.graded) if self.graded else 0.0


@dataclass
class FollowUp:
    student: str
    reasons: list = field(default_factory=list)  # (sentence, [(assignment, exercise)])


def classify(message: str) -> tuple[str, str, str]:
    """(kind, key, title) of a failing test's recorded message ("Type: text")."""
    text = (message or "").strip()
    kind_name, _, rest = text.partition(":")
    if kind_name == "NotImplementedError" and not rest.strip():
        return UNANSWERED, UNANSWERED, TITLES[UNANSWERED]
    if kind_name in ("CellTimeout", "SubmissionTimeout"):
        return TIMEOUT, TIMEOUT, TITLES[TIMEOUT]
    if kind_name == "KernelDied":
        return CRASH, CRASH, TITLES[CRASH]
    hint = re.search(r"^Hint: (.+)$", text, flags=re.M | re.S)
    if hint:
        title = " ".join(hint[1].split())
        return HINT, _masked(title), title
    first = text.splitlines()[0] if text else ""
    if not first:
        return CHECK, "(no message)", "failed without a message (a test that wrote to " \
                                      "stderr, or scored part of its points)"
    clause = re.split(r";\s|\.\s|\.$", _masked(first))[0]
    shown = first if kind_name not in ("CheckFailed", "AssertionError") or not rest.strip() \
        else rest.strip()
    if not rest.strip():
        shown = f"{kind_name} (no message)"
    return CHECK, clause, re.split(r";\s|\.\s|\.$", shown)[0]


def _masked(text: str) -> str:
    """`text` with what differs from student to student left out: numbers, lists, tuples."""
    text = re.sub(r"\[[^\[\]]*\]", "[...]", text)
    text = re.sub(r"\([^()]*\)", "(...)", text)
    return re.sub(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", "#", text)


def anonymised(message: str, students: list[str]) -> str:
    """A failing check's message to show the class's instructor as one student's: without
    the hint (the group's title), without any student's id, cut to EXAMPLE_CHARS."""
    text = re.sub(r"\nHint: .*", "", (message or "").strip(), flags=re.S)
    for student in sorted(students, key=len, reverse=True):
        if len(student) > 2:
            text = re.sub(rf"\b{re.escape(student)}\b", "<student>", text)
    return text if len(text) <= EXAMPLE_CHARS else text[:EXAMPLE_CHARS - 3] + "..."


def not_submitted(result) -> bool:
    return bool(result.fatal) and result.fatal.startswith("no ") and \
        result.fatal.endswith(" was submitted")


def analyse(results, layout: Layout) -> dict:
    """Exercises (each with its groups, most students first) in the order of the share of
    the class that lost points there; the follow-up list; the submissions not graded."""
    everyone = sorted({r.student for r in results})
    exercises, not_graded = [], []
    for result in results:
        if result.fatal:
            not_graded.append(result)
    for assignment, names in layout.exercises.items():
        mine = [r for r in results if r.assignment == assignment and not r.fatal]
        for name in names:
            manual = name in layout.manual.get(assignment, ())
            tests = layout.tests[assignment].get(name, [])
            exercise = Exercise(assignment, name, 0.0)
            groups: dict[str, Group] = {}
            for result in mine:
                cells = {t: result.cells[t] for t in tests if t in result.cells}
                if any(c["score"] is None for c in cells.values()):
                    continue  # still to grade by hand
                exercise.points = max(exercise.points,
                                      sum(c["max_score"] for c in cells.values()))
                exercise.graded.append(result.student)
                failing = [(t, c) for t, c in cells.items()
                           if c["score"] is not None and c["score"] < c["max_score"]]
                (exercise.lost if failing else exercise.passed).append(result.student)
                for test, cell in failing:
                    # nbgrader scores an answer graded by hand only when it is left blank
                    kind, key, title = (UNANSWERED, UNANSWERED, TITLES[UNANSWERED]) if \
                        manual else classify(cell.get("message", ""))
                    if kind == CHECK:
                        key = f"{test}: {key}"
                    group = groups.get(key)
                    if group is None:
                        group = groups[key] = Group(
                            kind, key, title, test, layout.docs.get((assignment, test), ""),
                            anonymised(cell.get("message", ""), everyone))
                    group.hidden = group.hidden and bool(cell.get("hidden"))
                    if result.student not in group.students:
                        group.students.append(result.student)
            exercise.groups = sorted(groups.values(), key=lambda g: (-len(g.students),
                                                                     g.kind == UNANSWERED,
                                                                     g.title))
            if exercise.graded:
                exercises.append(exercise)
    exercises.sort(key=lambda e: (-e.lost_share, -e.points * e.lost_share, e.assignment))
    return {"exercises": exercises, "follow_up": follow_up(results, exercises, layout),
            "not_graded": not_graded, "students": len(everyone),
            "assignments": list(layout.exercises)}


def follow_up(results, exercises: list[Exercise], layout: Layout) -> list[FollowUp]:
    """The students to follow up, each with why and where (assignment, exercise)."""
    reasons: dict[str, list] = defaultdict(list)
    mistakes = defaultdict(lambda: defaultdict(list))  # student -> group key -> places
    titles = {}
    for exercise in exercises:
        for group in exercise.groups:
            titles[group.key] = group
            for student in group.students:
                mistakes[student][group.key].append((exercise.assignment, exercise.name))
    for result in sorted(results, key=lambda r: (r.student, r.assignment)):
        student, where = result.student, [(result.assignment, "")]
        if not_submitted(result):
            reasons[student].append((f"submitted nothing for {result.assignment}", where))
            continue
        if result.fatal:
            reasons[student].append((f"{result.assignment} could not be graded: "
                                     f"{result.fatal}", where))
            continue
        answerable = [n for n in layout.exercises[result.assignment]
                      if n not in layout.manual.get(result.assignment, ())]
        blank = [n for n in answerable if (result.assignment, n) in
                 mistakes[student].get(UNANSWERED, [])]
        if answerable and len(blank) == len(answerable):
            reasons[student].append((f"handed in {result.assignment} with no exercise "
                                     "answered", where))
        crashed = [n for n in result.notes if n.startswith("the kernel stopped")]
        if crashed:
            reasons[student].append((f"{result.assignment}: {crashed[0].split(';')[0]}",
                                     where))
        stopped = [n for n in result.notes if "past the time limit" in n
                   or n.startswith("grading stopped")]
        if stopped:
            said = re.split(r" \(--| and was stopped|;", stopped[0])[0]
            reasons[student].append((f"{result.assignment}: {said}", where))
        if result.max_score and result.score < result.max_score / 2 and len(blank) < len(
                answerable):
            reasons[student].append((f"scored {result.score:g} of {result.max_score:g} in "
                                     f"{result.assignment}", where))
    for student, by_key in sorted(mistakes.items()):
        for key, places in sorted(by_key.items()):
            if len(places) < 2:
                continue
            if key == UNANSWERED:
                whole = {a for a, _ in places if any(
                    f"handed in {a} with no exercise" in s for s, _ in reasons[student])}
                places = [p for p in places if p[0] not in whole]
                if len(places) >= 2:
                    reasons[student].append((f"left {len(places)} exercises unanswered",
                                             places))
                continue
            reasons[student].append((f"the same mistake in {len(places)} exercises: "
                                     f"{titles[key].title}", places))
    return [FollowUp(s, r) for s, r in sorted(reasons.items())]


def top_mistakes(analysis: dict, count: int = TOP) -> list[tuple[Exercise, Group]]:
    """The class's most common mistakes (hints and checks; not unanswered, time-outs or
    crashes, which the follow-up names), most students first."""
    found = [(e, g) for e in analysis["exercises"] for g in e.groups if g.kind in (HINT, CHECK)]
    found.sort(key=lambda eg: (-len(eg[1].students), -eg[0].lost_share))
    chosen = []
    for exercise, group in found:  # one mistake often fails two checks: name it once
        if not any(e is exercise and set(group.students) <= set(g.students)
                   for e, g in chosen):
            chosen.append((exercise, group))
    return chosen[:count]


def summary_lines(analysis: dict, page: str) -> list[str]:
    """The terminal's part: the three most common mistakes, the unanswered and stopped
    tests, and how many students to follow up."""
    lines = ["most common mistakes:"]
    for rank, (exercise, group) in enumerate(top_mistakes(analysis), start=1):
        lines.append(f"  {rank}. {exercise.assignment} {exercise.name}: {group.title} "
                     f"({len(group.students)} of {len(exercise.graded)} students"
                     + (", hidden tests only" if group.hidden else "") + ")")
    if len(lines) == 1:
        lines[0] += " none (every failing check was an unanswered exercise, a time-out or "\
                    "a crash)" if analysis["exercises"] else " none"
    special = Counter()
    for exercise in analysis["exercises"]:
        for group in exercise.groups:
            if group.kind in TITLES:
                special[group.kind] += len(group.students)
    if special:
        said = {UNANSWERED: "answers left as handed out", TIMEOUT: "tests stopped at the "
                "time limit", CRASH: "tests the kernel died in"}
        lines.append("  also: " + ", ".join(f"{special[k]} {said[k]}" for k in TITLES
                                           if special[k]))
    follow = analysis["follow_up"]
    kinds = Counter(_reason_kind(s) for f in follow for s, _ in f.reasons)
    lines.append(f"follow up: {len(follow)} student(s)"
                 + (f" ({', '.join(f'{n} {k}' for k, n in kinds.most_common())})"
                    if kinds else ""))
    lines.append(f"mistakes: {page} (each exercise's mistakes, who made them, links to "
                 "their feedback)")
    return lines


def _reason_kind(sentence: str) -> str:
    for words, kind in (("submitted nothing", "submitted nothing"),
                        ("could not be graded", "not gradable"),
                        ("no exercise answered", "blank notebook"),
                        ("kernel stopped", "crashed"), ("time limit", "timed out"),
                        ("grading stopped", "timed out"), ("unanswered", "several blank"),
                        ("same mistake", "same mistake again"), ("scored", "under half")):
        if words in sentence:
            return kind
    return "other"


def as_json(analysis: dict) -> dict:
    """`analysis` as plain data for OUT/mistakes.json."""
    return {"students": analysis["students"], "assignments": analysis["assignments"],
            "exercises": [{**{k: v for k, v in asdict(e).items() if k != "groups"},
                           "lost_share": e.lost_share,
                           "groups": [asdict(g) for g in e.groups]}
                          for e in analysis["exercises"]],
            "follow_up": [asdict(f) for f in analysis["follow_up"]],
            "not_graded": [{"student": r.student, "assignment": r.assignment,
                            "reason": r.fatal} for r in analysis["not_graded"]]}


def write(results, releases: dict, out: Path) -> list[str]:
    """Write OUT/mistakes.html and OUT/mistakes.json for `results` (the release notebook of
    each assignment in `releases`); return the terminal summary's lines."""
    from autograder.grading import mistakes_page

    analysis = analyse(results, Layout(releases))
    title = f"What the class got wrong: {', '.join(sorted(releases))}"
    (out / PAGE).write_text(mistakes_page.render(analysis, title), encoding="utf-8")
    (out / DATA).write_text(json.dumps(as_json(analysis), indent=1), encoding="utf-8")
    return summary_lines(analysis, str(out / PAGE))


def write_folder(out: Path) -> list[str]:
    """`course-grade mistakes OUT`: the report of a folder `course-grade class` graded into,
    from its results and the release notebooks it was graded with."""
    from autograder.cells import read_notebook
    from autograder.grading.store import load_results

    out = Path(out)
    if not (out / "results").is_dir():
        raise CourseError(f"{out / 'results'} does not exist: grade the class into {out} "
                          f"first (`course-grade class INPUT --out {out}`).")
    try:
        results = load_results(out)
    except (ValueError, TypeError) as error:
        raise CourseError(f"A result in {out / 'results'} cannot be read ({error}): grade "
                          "the class again with --force.") from error
    if not results:
        raise CourseError(f"{out / 'results'} holds no result: grade the class first.")
    releases = {}
    for result in results:
        path = out / "notebooks" / result.assignment / result.notebook
        if result.assignment not in releases and path.is_file():
            releases[result.assignment] = read_notebook(path)
    missing = sorted({r.assignment for r in results} - set(releases))
    if missing:
        raise CourseError(f"{out} holds no release notebook of {', '.join(missing)} "
                          f"(notebooks/{missing[0]}/): grade the class into {out} again.")
    return write(results, releases, out)
