"""The feedback pages: the course's page for each student and assignment, and nbgrader's
own (`nbgrader generate_feedback`, the formgrader's *Generate Feedback*) without a hidden test.

`page` is what `course-grade class` writes to `OUT/feedback/<student>/<assignment>.html`:
per exercise and test, passed, failed or not answered, its points and the check's message,
the late penalty, and what the grader found outside the tests; never a test's source.

nbgrader makes its page from the autograded notebook, which holds the hidden
tests (autograde puts them back to run them). The course's nbgrader_config.py adds
`WithoutHiddenTests` to that conversion: each hidden block leaves the cells' source, and
no output or metadata of any cell quotes one. With the course's engine a test cell's
output is the test's own message (the tests ran in the grader, never in the student's
kernel: autograder.engine.trusted.testcells) and what the student's code printed; a
notebook autograded without it (nbgrader's own Execute) holds IPython's tracebacks,
whose context lines are the test's source. So, whoever autograded it, in every output
and metadata string: a line that holds a hidden marker or a line of a hidden block
(compared without ANSI colours, as written or HTML-escaped) is replaced by `CUT`; a
name that only hidden blocks use (bound there, found nowhere else in the notebook, with
an underscore or a digit in it) by `NAME`; and a test cell's traceback is its error's
one line, `ename: evalue`, as the engine writes it.
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
from autograder.late import Policy, parse

NOTE = "# (hidden tests: not shown)"


def without_hidden(source: str) -> str:
    begin, end = HIDDEN_MARKERS
    return re.sub(re.escape(begin) + r".*?" + re.escape(end), NOTE, source, flags=re.S)


CUT = "(a line that quotes a hidden test: not shown)"
NAME = "(hidden)"
MIN_LINE = 8  # characters of a hidden line worth cutting where quoted (not "else:")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Hidden:
    """What of a notebook's hidden tests no page may show: the markers, the lines of the
    hidden blocks, and the names only the hidden blocks use."""

    def __init__(self, nb):
        begin, end = HIDDEN_MARKERS
        blocks, elsewhere = [], []
        for cell in nb.cells:
            source = cell.get("source", "")
            blocks += [m.group(1) for m in re.finditer(
                re.escape(begin) + r"(.*?)" + re.escape(end), source, flags=re.S)]
            elsewhere.append(without_hidden(source))
        shown = {line.strip() for text in elsewhere for line in text.splitlines()}
        lines = {line.strip() for block in blocks for line in block.splitlines()} - shown
        self.lines = sorted({line for line in lines if len(line) >= MIN_LINE}
                            | {begin, end, begin.lstrip("# "), end.lstrip("# ")}, key=len)
        self.lines += [html.escape(line) for line in self.lines if html.escape(line) != line]
        seen = set(_WORD.findall("\n".join(elsewhere)))
        # a name of the test's own making (a plain word such as `kernel` tells nothing,
        # and is also the grader's word in its messages)
        self.names = sorted({name for block in blocks for name in _bound(block)
                             if len(name) >= 4 and name not in seen
                             and re.search(r"[A-Za-z0-9]_|[0-9]", name)})
        self._names = re.compile(r"\b(" + "|".join(map(re.escape, self.names)) + r")\b") \
            if self.names else None

    def text(self, value: str) -> str:
        """`value` with each line that quotes a hidden line cut and hidden names replaced."""
        kept = []
        for line in value.splitlines(keepends=True):
            plain = _ANSI.sub("", line)
            if any(hidden in plain for hidden in self.lines):
                line = CUT + ("\n" if line.endswith("\n") else "")
            elif self._names is not None:
                line = self._names.sub(NAME, line) if self._names.search(plain) else line
            kept.append(line)
        return "".join(kept)

    def value(self, value):
        """Every string in a notebook's output or metadata value, as `text` leaves it."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            for key in list(value):
                if not str(key).startswith(("image/", "application/pdf")):  # base64
                    value[key] = self.value(value[key])
            return value
        return value


def _bound(block: str) -> set[str]:
    """Names a hidden block binds (assigns, defines, imports, loops over)."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(block))
    except SyntaxError:  # a block inside an indented suite: its assignments' targets
        return set(re.findall(r"^\s*([A-Za-z_]\w*)\s*(?:,[^=]*)?=(?!=)", block, flags=re.M))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


class WithoutHiddenTests(Preprocessor):
    """Takes the hidden tests out of an autograded notebook turned into feedback: from the
    cells' source, and from every output and metadata string that quotes one."""

    enabled = Bool(True, help="nbconvert applies only enabled preprocessors").tag(config=True)

    def preprocess(self, nb, resources):
        hidden = Hidden(nb)
        begin = HIDDEN_MARKERS[0]
        for cell in nb.cells:
            test = begin in cell.get("source", "")
            cell.source = hidden.text(without_hidden(cell.source))
            for output in cell.get("outputs", []):
                if test and output.get("output_type") == "error":
                    output["traceback"] = [f"{output.get('ename', '')}: "
                                           f"{output.get('evalue', '')}"]
                hidden.value(output)
            hidden.value(cell.get("metadata", {}))
        hidden.value(nb.get("metadata", {}))
        return nb, resources


class CourseLatePenalty(Preprocessor):
    """nbgrader's page with the course's late penalty (after nbgrader's `GetGrades`): the
    score counted is the one `grades.csv` and the course's page give, and a note at the top
    says why. The policy is the one the grading folder keeps (its rules.json, next to the
    gradebook: autograder.grading.rules), else the course's; how late, the gradebook's
    submission time against the assignment's due date. nbgrader's own penalty, where its
    config sets one, is left as it is."""

    enabled = Bool(True, help="nbconvert applies only enabled preprocessors").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        db_url = str(info.get("db_url", ""))
        if info.get("late_penalty") or not db_url.startswith("sqlite:///"):
            return nb, resources
        policy = _kept_policy(Path(db_url[len("sqlite:///"):]).parent)
        from nbgrader.api import Gradebook

        with Gradebook(db_url) as gradebook:
            submission = gradebook.find_submission(info["assignment"], info["student"])
            seconds = submission.total_seconds_late
        raw = float(info.get("score") or 0.0)
        score, note = (policy or Policy()).apply(raw, seconds, info["student"],
                                                 info["assignment"])
        if note:
            nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"**Late**: {note}."))
        if score != raw:
            info["score"], info["late_penalty"] = score, round(raw - score, 6)
        return nb, resources


def _kept_policy(out: Path) -> Policy | None:
    """The late policy a grading folder `out` keeps, else the course's."""
    from autograder import course
    from autograder.grading import rules

    rule = rules.load(out).get("late")
    if not rule or rule.get("course"):
        return course.facts().late
    table = rule.get("table")
    return None if table is None else parse(table, f"the late policy in {out / rules.RULES}")


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
