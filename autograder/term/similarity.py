"""Answers that look alike across a graded class: a list for a person to read, never a grade.

`course-grade similar OUT` reads the answer cells (nbgrader's solution cells) of every
student's autograded notebook in a class folder that `course-grade class` wrote, and
compares the answers to each exercise pairwise:

1. Normalised: names the answer binds renamed in order of use; comments, docstrings and
   formatting dropped (`autograder.term.fingerprints`).
2. Fingerprinted: every run of `k` tokens, in order and with each block's statements
   sorted, so that reordered independent lines still match (the same module).
3. Discounted: the release's own code (the stub's lines, their fingerprints) is removed;
   answers with fewer than `min_tokens` tokens of their own are not compared; fingerprints
   in the answers of more than max(`common_min`, `common_fraction` x the answers compared)
   students count for no pair.
4. Scored: the share of the shorter answer's fingerprints that the two share (common ones
   left out); pairs at or above `threshold` are listed.

It writes `OUT/similarity.html` (each pair side by side, the matching lines marked) and
`OUT/similarity.json`, and changes no grade: a high score is a reason to look, not proof.
"""

from __future__ import annotations

import html
import json
import os
from collections import Counter
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path

from autograder import course
from autograder.cells import grade_id, is_answer, read_notebook
from autograder.errors import CourseError
from autograder.term.fingerprints import fingerprints, flatten, own_tokens, statements

NOTE = ("A list for a person to read: similar code is a reason to look at two answers, not "
        "proof of copying, and this report changes no grade.")


@dataclass(frozen=True)
class Settings:
    threshold: float = 0.6  # a pair is listed at or above this score
    k: int = 8  # tokens per fingerprint
    min_tokens: int = 20  # an answer with fewer tokens of its own is not compared
    common_fraction: float = 0.25  # a fingerprint in more students' answers than this share
    common_min: int = 4  # ... and than this count counts for no pair

    def check(self) -> None:
        if not 0 < self.threshold <= 1:
            raise CourseError(f"--threshold must be above 0 and at most 1 (got {self.threshold}).")
        if self.k < 2 or self.min_tokens < self.k:
            raise CourseError(f"k must be at least 2 and min_tokens at least k (got k={self.k}, "
                              f"min_tokens={self.min_tokens}).")
        if not 0 < self.common_fraction <= 1 or self.common_min < 2:
            raise CourseError("common_fraction must be in (0, 1] and common_min at least 2.")


@dataclass
class Answer:
    student: str
    source: str
    tokens: int  # tokens of its own (the release's statements left out)
    prints: dict[str, set]  # fingerprint -> lines of `source` it covers


@dataclass
class Stub:
    """The release's answer cell: its statements and fingerprints count for no pair."""
    statements: set
    prints: set

    @classmethod
    def of(cls, release: str, k: int) -> Stub:
        block = statements(release)
        return cls(flatten(block), set(fingerprints(block, k)))


def answer(student: str, source: str, stub: Stub, k: int) -> Answer:
    """`source` normalised and fingerprinted, the release's code removed."""
    mine = statements(source)
    prints = {fp: lines for fp, lines in fingerprints(mine, k, stub.statements).items()
              if fp not in stub.prints}
    return Answer(student, source, own_tokens(mine, stub.statements), prints)


# --- comparing the answers to one exercise -----------------------------------------------

@dataclass
class Pair:
    a: str
    b: str
    score: float
    shared: int  # fingerprints shared (common ones left out)
    lines_a: list[int]
    lines_b: list[int]


@dataclass
class Exercise:
    assignment: str
    name: str
    compared: list[str]
    short: list[str]  # too short, or unchanged from the release
    missing: list[str]  # no answer cell, or no autograded notebook
    common: int  # fingerprints in too many answers, counted for no pair
    common_limit: int
    pairs: list[Pair]
    sources: dict[str, str]  # the answers of the students in pairs


def compare(assignment: str, name: str, answers: list[Answer], missing: list[str],
            settings: Settings) -> Exercise:
    compared = [a for a in answers if a.tokens >= settings.min_tokens and a.prints]
    short = sorted({a.student for a in answers} - {a.student for a in compared})
    counts = Counter(fp for a in compared for fp in a.prints)
    limit = max(settings.common_min, int(settings.common_fraction * len(compared)))
    common = {fp for fp, n in counts.items() if n > limit}
    pairs = []
    for a, b in combinations(compared, 2):
        shared = (a.prints.keys() & b.prints.keys()) - common
        score = len(shared) / min(len(a.prints), len(b.prints))
        if shared and score >= settings.threshold:
            pairs.append(Pair(a.student, b.student, round(score, 3), len(shared),
                              sorted(set().union(*(a.prints[fp] for fp in shared))),
                              sorted(set().union(*(b.prints[fp] for fp in shared)))))
    pairs.sort(key=lambda p: (-p.score, p.a, p.b))
    listed = {p.a for p in pairs} | {p.b for p in pairs}
    return Exercise(assignment, name, sorted(a.student for a in compared), short,
                    sorted(missing), len(common), limit, pairs,
                    {a.student: a.source for a in compared if a.student in listed})


# --- the class folder --------------------------------------------------------------------

def _graded(out: Path) -> dict[tuple[str, str], dict[str, Path]]:
    """{(assignment, notebook): {student: autograded notebook path}} from OUT/results/."""
    found: dict[tuple[str, str], dict[str, Path]] = {}
    for path in sorted((out / "results").glob("*/*.json")):
        try:
            notebook = json.loads(path.read_text(encoding="utf-8"))["notebook"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            notebook = None
        if not isinstance(notebook, str) or not notebook or Path(notebook).name != notebook:
            raise CourseError(f"{path} is not a result that `course-grade class` wrote: "
                              "grade the class again.")
        assignment, student = path.parent.name, path.stem  # as the grader names them
        found.setdefault((assignment, notebook), {})[student] = \
            out / "autograded" / student / assignment / notebook
    if not found:
        raise CourseError(f"{out} is not a graded class folder (it has no results/*/*.json): "
                          f"grade the class into it with `course-grade class INPUT --out {out}`.")
    return found


def read_class(out: Path, assignments: list[str] | None = None) -> list[tuple]:
    """(assignment, release notebook, {student: autograded notebook, or None}) for each
    assignment graded into `out`."""
    out = Path(out)
    if not out.is_dir():
        raise CourseError(f"{out} is not a folder: give the class folder that "
                          "`course-grade class --out` graded the class into.")
    found = _graded(out)
    held = sorted({a for a, _ in found})
    for name in assignments or []:
        if name not in held:
            raise CourseError(f"{out} holds no graded submission of {name!r} (it holds "
                              f"{', '.join(held)}).")
    classes = []
    for (assignment, notebook), paths in sorted(found.items()):
        if assignments and assignment not in assignments:
            continue
        release = out / course.RELEASE_DIR / assignment / notebook
        if not release.is_file():
            raise CourseError(f"{out} lacks the release notebook {release.relative_to(out)} "
                              "that grading writes: grade the class into it again.")
        students = {}
        for student, path in paths.items():
            try:  # none: the grader could not run it (not a notebook, another assignment's)
                students[student] = read_notebook(path) if path.is_file() else None
            except CourseError:
                students[student] = None
        classes.append((assignment, read_notebook(release), students))
    return classes


def answer_source(nb, exercise: str) -> str | None:
    """The student's answer cell(s) of `exercise`, or None where there is none."""
    cells = [c.source for c in nb.cells if is_answer(c) and grade_id(c) == exercise]
    return "\n\n".join(cells) if cells else None


def analyse(out: Path, assignments: list[str] | None = None,
            settings: Settings | None = None) -> list[Exercise]:
    settings = settings or Settings()
    settings.check()
    exercises = []
    for assignment, release, students in read_class(out, assignments):
        for cell in release.cells:
            if not (is_answer(cell) and grade_id(cell)):
                continue
            answers, missing = [], []
            stub = Stub.of(cell.source, settings.k)
            for student, nb in sorted(students.items()):
                source = answer_source(nb, grade_id(cell)) if nb is not None else None
                if source is None:
                    missing.append(student)
                else:
                    answers.append(answer(student, source, stub, settings.k))
            exercises.append(compare(assignment, grade_id(cell), answers, missing, settings))
    return exercises


# --- what it writes and prints -----------------------------------------------------------

def _write(path: Path, text: str) -> None:
    """Written whole or not at all."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def write(out: Path, exercises: list[Exercise], settings: Settings) -> None:
    data = {"note": NOTE, "settings": asdict(settings),
            "exercises": [{k: v for k, v in asdict(e).items() if k != "sources"}
                          for e in exercises]}
    _write(Path(out) / "similarity.json", json.dumps(data, indent=1))
    _write(Path(out) / "similarity.html", page(exercises, settings))


def _side(source: str, marked: list[int]) -> str:
    rows = [f'<span class="{"line hit" if n in marked else "line"}"><i>{n:3d}</i> '
            f"{html.escape(line)}</span>"
            for n, line in enumerate(source.splitlines(), 1)]
    return "<pre>" + "".join(rows) + "</pre>"


def _section(e: Exercise, settings: Settings) -> str:
    parts = [f"<h2>{html.escape(e.assignment)} / {html.escape(e.name)}</h2>",
             f"<p>{len(e.compared)} answers compared; {len(e.pairs)} pair(s) at or above "
             f"{settings.threshold:g}.</p><ul>"]
    if e.short:
        parts.append(f"<li>Not compared, fewer than {settings.min_tokens} tokens of their own "
                     f"(too short, or the release's stub unchanged): "
                     f"{html.escape(', '.join(e.short))}.</li>")
    if e.missing:
        parts.append("<li>No answer cell or no autograded notebook: "
                     f"{html.escape(', '.join(e.missing))}.</li>")
    parts.append(f"<li>{e.common} fingerprint(s) were in the answers of more than "
                 f"{e.common_limit} students: common code, counted for no pair.</li></ul>")
    for p in e.pairs:
        parts.append(f"<h3>{html.escape(p.a)} and {html.escape(p.b)}: {p.score:.2f} "
                     f"({p.shared} shared fingerprints)</h3><table><tr>"
                     f"<th>{html.escape(p.a)}</th><th>{html.escape(p.b)}</th></tr><tr>"
                     f"<td>{_side(e.sources[p.a], p.lines_a)}</td>"
                     f"<td>{_side(e.sources[p.b], p.lines_b)}</td></tr></table>")
    return "\n".join(parts)


def page(exercises: list[Exercise], settings: Settings) -> str:
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;width:100%}"
             "td,th{border:1px solid #ccc;vertical-align:top;padding:4px;width:50%}"
             "pre{margin:0;white-space:pre-wrap}.line{display:block;min-height:1em}"
             ".hit{background:#ffe08a}"
             "i{color:#999;font-style:normal}")
    intro = (f"<p><b>{html.escape(NOTE)}</b></p><p>Answers are compared after renaming "
             "variables and dropping comments, docstrings and formatting, in their order and "
             "with independent lines sorted. A score is the share of the shorter answer's "
             f"{settings.k}-token fingerprints that the two share. The release's own code "
             "(the stub, its docstring, <code>raise NotImplementedError()</code>) counts for "
             "no pair, nor does code common to many students. Marked lines are the ones the "
             "two share.</p>")
    body = "\n".join(_section(e, settings) for e in exercises)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Similar answers</title>"
            f"<style>{style}</style></head><body><h1>Similar answers</h1>{intro}{body}"
            "</body></html>\n")


def table(exercises: list[Exercise], settings: Settings, shown: int = 20) -> str:
    lines = [f"{'exercise':44s} {'compared':>8s} {'short':>5s} {'common':>6s} {'pairs':>5s}"]
    for e in exercises:
        lines.append(f"{e.assignment + '/' + e.name:44s} {len(e.compared):8d} "
                     f"{len(e.short):5d} {e.common:6d} {len(e.pairs):5d}")
    listed = sorted(((e, p) for e in exercises for p in e.pairs), key=lambda ep: -ep[1].score)
    if listed:
        lines.append(f"\npairs at or above {settings.threshold:g}, highest first:")
        lines += [f"  {e.assignment}/{e.name:30s} {p.a} and {p.b}: {p.score:.2f}"
                  for e, p in listed[:shown]]
        if len(listed) > shown:
            lines.append(f"  ... and {len(listed) - shown} more in similarity.html")
    return "\n".join(lines)


def report(out: Path, assignments: list[str] | None = None,
           settings: Settings | None = None) -> str:
    """Compare, write OUT/similarity.html and .json, and return the table to print."""
    settings = settings or Settings()
    exercises = analyse(out, assignments, settings)
    write(out, exercises, settings)
    return (table(exercises, settings) + f"\n\nwrote {Path(out) / 'similarity.html'} and "
            f"similarity.json. {NOTE}")
