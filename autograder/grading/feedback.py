"""The feedback pages: the course's page for each student and assignment, and nbgrader's
own (`nbgrader generate_feedback`, the formgrader's *Generate Feedback*) without a hidden test.

`page` is what `course-grade class` writes to `OUT/feedback/<student>/<assignment>.html`:
per exercise and test, passed, failed or not answered, its points and the check's message,
the late penalty, and what the grader found outside the tests; never a test's source.

nbgrader makes its page from the autograded notebook, which holds the hidden
tests (autograde puts them back to run them). The course's nbgrader_config.py adds
`WithoutHiddenTests` to that conversion: each hidden block leaves the cells' source. The
outputs stay as they are: the tests ran in the grader, never in the student's kernel
(autograder.engine.trusted.testcells), so a test cell's output is the test's own message,
written by the
course's author, or what the student's code printed.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from autograder.cells import HIDDEN_MARKERS, grade_id, nbgrader_meta
from autograder.grading.reports import Layout, late_score
from autograder.late import Policy

NOTE = "# (hidden tests: not shown)"


def without_hidden(source: str) -> str:
    begin, end = HIDDEN_MARKERS
    return re.sub(re.escape(begin) + r".*?" + re.escape(end), NOTE, source, flags=re.S)


class WithoutHiddenTests(Preprocessor):
    """Takes the hidden tests out of an autograded notebook turned into feedback."""

    enabled = Bool(True, help="nbconvert applies only enabled preprocessors").tag(config=True)

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            cell.source = without_hidden(cell.source)
        return nb, resources


NOT_ANSWERED = ("Not answered yet: write your answer in the cell that says # YOUR CODE HERE, "
                "and delete its line raise NotImplementedError().")


def unanswered(message: str) -> bool:
    """A test's recorded message says the release's stub raised: `raise
    NotImplementedError()` without a message (one with a message is a failed answer)."""
    return (message or "").strip().rstrip(":") == "NotImplementedError"


_STYLE = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
color:#222}h1{font-size:1.5rem}table{border-collapse:collapse;width:100%;margin:.5rem 0 1.5rem}
td,th{border-bottom:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top}
.pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}
.manual{color:#9a6700;font-weight:600}pre{white-space:pre-wrap;margin:0;font-size:.85rem}
.notes{background:#fff8c5;padding:.5rem 1rem;border-radius:6px}.score{font-size:1.2rem}
.late{color:#9a6700;font-weight:600}.todo{color:#57606a;font-weight:600}
"""


def page(result, layout: Layout, answers: dict[str, str],
                  late: float | None = None, policy: Policy | None = None) -> str:
    """The page a student reads: per exercise and test, passed or failed, points, message
    (and when it was submitted after the due date, `late` seconds, and what the late
    `policy` took off its total)."""
    e = html.escape
    score, note = late_score(result, late, policy)
    penalty = f" after the late penalty ({result.score:g} before it)" \
        if score != result.score else ""
    parts = [f"<!doctype html><meta charset='utf-8'><title>{e(result.assignment)}: "
             f"{e(result.student)}</title><style>{_STYLE}</style>",
             f"<h1>{e(result.assignment)}: feedback for {e(result.student)}</h1>",
             f"<p class='score'>{score:g} of {result.max_score:g} points{penalty}"
             + (" (a written answer is still to be graded by hand)"
                if any(c["score"] is None for c in result.cells.values()) else "") + "</p>"]
    if note:
        parts.append(f"<p class='late'>Late: {e(note)}.</p>")
    if result.fatal or result.notes:
        items = ([f"<li><b>Not graded: {e(result.fatal)}.</b> Every test scores 0.</li>"]
                 if result.fatal else [])
        items += [f"<li>{e(note)}</li>" for note in result.notes]
        parts.append("<div class='notes'><p>What the grader found:</p><ul>"
                     + "".join(items) + "</ul></div>")
    for exercise in layout.exercises[result.assignment]:
        score, total = layout.exercise_score(result, exercise)
        shown = "to be graded by hand" if score is None else f"{score:g} / {total:g}"
        tests = [result.cells.get(t) for t in layout.tests[result.assignment].get(exercise, [])]
        if score is not None and score < total and all(
                unanswered(c.get("message", "")) for c in tests if c and c["score"] is not None
                and c["score"] < c["max_score"]):
            shown += " <span class='todo'>not answered</span>"
        parts.append(f"<h2 id='ex-{e(exercise)}'><code>{e(exercise)}</code>: {shown}</h2>"
                     "<table><tr><th>test</th>"
                     "<th>checks</th><th>result</th><th>points</th><th>message</th></tr>")
        for test in layout.tests[result.assignment].get(exercise, []):
            cell = result.cells.get(test, {"score": 0.0, "max_score": 0.0, "message": ""})
            if cell["score"] is None:
                verdict = "<span class='manual'>by hand</span>"
            elif cell["score"] >= cell["max_score"]:
                verdict = "<span class='pass'>passed</span>"
            elif unanswered(cell.get("message", "")):
                verdict = "<span class='todo'>not answered</span>"
                cell = {**cell, "message": NOT_ANSWERED}
            else:
                verdict = "<span class='fail'>failed</span>"
            points = "" if cell["score"] is None else f"{cell['score']:g} / {cell['max_score']:g}"
            parts.append(f"<tr><td><code>{e(test)}</code></td>"
                         f"<td>{e(layout.docs.get((result.assignment, test), ''))}</td>"
                         f"<td>{verdict}</td><td>{points}</td>"
                         f"<td><pre>{e(cell.get('message', ''))}</pre></td></tr>")
        parts.append("</table>")
        if exercise in answers:
            parts.append(f"<details><summary>your answer</summary><pre>"
                         f"{e(answers[exercise])}</pre></details>")
    parts.append("<p><small>Hidden tests ran as well; their code is not shown. A failing "
                 "check's message says what it expected and what it got.</small></p>")
    return "\n".join(parts)


def student_answers(autograded_path: Path) -> dict[str, str]:
    if not autograded_path.exists():
        return {}
    nb = nbformat.read(str(autograded_path), as_version=4)
    return {grade_id(c): c.source for c in nb.cells
            if nbgrader_meta(c).get("solution") and grade_id(c)}
