"""A hostile class (tests/hostile.py), graded through `course-grade class` and
`course-grade self`: every kind gets its expected score on every exercise both ways, no
hidden test reaches a student in any form (encoded ones decoded), a trickling or stalled
notebook costs only its own cells, nothing is left running or written."""

from __future__ import annotations

import html
import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import hostile
import nbformat
import psutil
import pytest

from autograder import course
from autograder.authoring import demo
from autograder.cells import read_notebook
from autograder.engine.trusted import sandbox, submission
from autograder.grading import classgrade, reports, selfgrade
from autograder.limits import Limits
from conftest import ROOT, SOLUTIONS

pytestmark = pytest.mark.slow
LIMITS = {"cell_timeout": 10, "memory_mb": 2048}
# graded by `course-grade self` too (the same engine as class grading, which grades every
# kind): the kinds whose report is read, and one of each family of attack whose outcome
# a report shows (requests to the kernel, leaks, tampering, crashes); the sandbox's limits
# (resources, network) are the same code both ways, proven by class grading
SELF_GRADED = ("perfect", "blank", "probes-the-requests", "leaks-encoded", "code-replaced",
               "exits-in-a-test")


def ours(process) -> bool:
    try:
        line = " ".join(process.cmdline())
    except psutil.Error:
        return False
    return ("autograder.engine.sandboxed.kernel" in line or line.startswith("bwrap") or
            line == f"sleep {hostile.SLEEPER}")


def hidden_fragments() -> list[str]:
    """Lines of the hidden tests of 01 long enough to be a quote and found nowhere a student
    may see them anyway (the release notebook, the answers)."""
    solution = read_notebook(SOLUTIONS / hostile.A / "autodiff.ipynb")
    seen = "\n".join(c.source for c in read_notebook(
        ROOT / "notebooks" / hostile.A / "autodiff.ipynb").cells)
    seen += "\n".join(c.source for c in solution.cells
                      if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
    fragments = []
    for cell in solution.cells:
        for block in submission.hidden_parts(cell.source):
            fragments += [line.strip() for line in block.splitlines()
                          if len(line.strip()) >= 30 and line.strip() not in seen]
    assert len(fragments) > 10
    return fragments


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if not sandbox.available()[0]:
        pytest.fail("the sandbox is not available: " + sandbox.available()[1])
    before = {p.pid for p in psutil.process_iter() if ours(p)}
    tmp = tmp_path_factory.mktemp("hostile")
    cache = tmp / "cache"
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache)
    try:  # first and alone: it fills the cache
        recorded = submission.Settings(Limits(**LIMITS))  # that self-grade's secret
        recording = record(tmp, recorded)
    finally:
        _restore_cache(saved)
    expected = hostile.build(ROOT, tmp / "submitted", recording)
    out = tmp / "out"
    settings = classgrade.Settings(workers=2, force=True, limits=Limits(**LIMITS))
    # the class's results hold every student's every assignment (those not submitted
    # too, as 0): each kind's is the one of the assignment it submitted
    results = {r.student: r for r in classgrade.grade_class(
        ROOT, tmp / "submitted", out, [hostile.A, *hostile.OTHER_ASSIGNMENTS], settings,
        log=lambda _: None) if r.assignment == hostile.assignment_of(r.student)}
    summary = classgrade.report(ROOT, out, list(results.values()))
    os.environ["XDG_CACHE_HOME"] = str(cache)

    def self_grade(student, secret=None):
        path = tmp / "submitted" / student / hostile.A / "autodiff.ipynb"
        settings = submission.Settings(Limits(**LIMITS))
        settings.secret = secret or settings.secret
        assignment, exercise_reports, seconds, notes = selfgrade.grade(
            path, ROOT, settings=settings)
        text = selfgrade.format_report(path, assignment, exercise_reports, seconds, notes)
        return student, ({r.name: r.score for r in exercise_reports if not r.manual}, text)

    try:
        with ThreadPoolExecutor(2) as pool:
            # the replay, self-graded with the secret of the self-grade it recorded
            replayed = pool.submit(self_grade, "replays-a-recording", recorded.secret)
            selves = dict(pool.map(self_grade, sorted(set(SELF_GRADED) & set(expected))))
            replayed = replayed.result()[1]
    finally:
        _restore_cache(saved)
    left = [p for p in psutil.process_iter() if ours(p) and p.pid not in before]
    yield {"expected": expected, "results": results, "out": out, "summary": summary,
           "selves": selves, "left": left, "recording": recording, "replayed": replayed}
    shutil.rmtree(tmp, ignore_errors=True)


def _restore_cache(saved: str | None) -> None:
    if saved is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = saved


def record(tmp: Path, settings) -> dict:
    """Self-grade the recorder (hostile.recorder) with `settings`; what its report carries:
    rows_changed's inputs (a digest) and answers, the hidden tests' included."""
    path = tmp / "recorder" / hostile.A / "autodiff.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(nbformat.writes(hostile.recorder(demo.Course(ROOT, hostile.A))),
                    encoding="utf-8")
    _, exercise_reports, _, _ = selfgrade.grade(path, ROOT, settings=settings)
    return hostile.recording_of([m for r in exercise_reports for _, m in r.failures])


def test_the_class_has_enough_kinds():
    assert len(hostile.KINDS) >= 25


def test_class_grading_scores_each_kind_as_expected(graded):
    layout = reports.Layout({a: read_notebook(next((graded["out"] / "notebooks" / a).glob(
        "*.ipynb"))) for a in [hostile.A, *hostile.OTHER_ASSIGNMENTS]})
    wrong = {}
    for student, want in graded["expected"].items():
        result = graded["results"][student]
        got = {ex: layout.exercise_score(result, ex)[0] for ex in want}
        if got != want:
            wrong[student] = (got, want, result.notes[:4])
    assert not wrong, wrong


def test_a_recording_made_through_self_grading_is_worth_nothing_in_class_grading(graded):
    """Issue 37: a self-grade records rows_changed's inputs, hidden ones included, with
    their answers; a notebook that answers from that recording alone scores full marks
    where the hidden tests draw those inputs again (a self-grade with the recording's
    secret: as every grading did while the seeds were fixed), and 0 on rows_changed in
    class grading, which draws others (test_class_grading_scores_each_kind_as_expected),
    while the honest notebook keeps full marks."""
    assert len(graded["recording"]) >= 8, graded["recording"]  # hidden inputs recorded too
    scores, _ = graded["replayed"]
    assert scores == graded["expected"]["perfect"], scores
    result = graded["results"]["replays-a-recording"]
    assert graded["expected"]["replays-a-recording"]["rows_changed"] == 0
    assert "no recorded answer" in result.cells["test_rows_changed"]["message"]
    assert graded["results"]["perfect"].score == sum(graded["expected"]["perfect"].values())


def test_self_grading_scores_each_kind_as_class_grading_does(graded):
    assert set(graded["selves"]) == set(SELF_GRADED)
    wrong = {s: (graded["selves"][s][0], want) for s, want in graded["expected"].items()
             if s in graded["selves"] and graded["selves"][s][0] != want}
    assert not wrong, wrong


def hidden_only_names() -> list[str]:
    """Names that only 01's hidden tests use (their own variables)."""
    import ast

    solution = read_notebook(SOLUTIONS / hostile.A / "autodiff.ipynb")
    seen = "\n".join(c.source for c in read_notebook(
        ROOT / "notebooks" / hostile.A / "autodiff.ipynb").cells)
    names = set()
    for cell in solution.cells:
        for block in submission.hidden_parts(cell.source):
            for node in ast.walk(ast.parse(block)):
                if isinstance(node, ast.Name) and len(node.id) > 3:
                    names.add(node.id)
    found = sorted(n for n in names if not re.search(rf"\b{n}\b", seen))
    assert len(found) > 5, found
    return found


def decoded(text: str) -> str:
    """`text` with every blob it carries decoded (base85 and base64, zlib or not)."""
    import base64
    import zlib

    found = [text]
    for blob in re.findall(r"[A-Za-z0-9+/=!#$%&()*;<>?@^_`{|}~-]{40,}", text):
        for decode in (base64.b85decode, base64.b64decode):
            try:
                raw = decode(blob)
            except ValueError:
                continue
            try:
                raw = zlib.decompress(raw)
            except zlib.error:
                pass
            found.append(raw.decode("utf-8", errors="replace"))
    return "\n".join(found)


def test_no_hidden_test_reaches_a_student(graded):
    fragments = hidden_fragments()
    shown = [text for _, text in graded["selves"].values()]
    shown += [p.read_text(errors="replace") for p in (graded["out"] / "feedback").rglob("*.html")]
    shown.append((graded["out"] / "grades.csv").read_text())
    for result in graded["results"].values():
        shown += [c["message"] for c in result.cells.values()] + list(result.notes)
    shown = [decoded(text) for text in shown]
    leaks = [f for f in fragments if any(f in text for text in shown)]
    assert not leaks, leaks[:5]
    # what the grader asks of a kernel names no test's own variable
    probe = decoded("\n".join(graded["selves"]["probes-the-requests"][1:]) + "\n".join(
        graded["results"]["probes-the-requests"].notes))
    assert "PROBE" in probe
    assert not [n for n in hidden_only_names() if re.search(rf"\b{n}\b", probe)]
    # the leaking kinds did try, and their messages reach the student whole: what they
    # found was the kernel's own code, never a test
    for kind, marker in (("reads-the-tests", "LEAK "), ("leaks-encoded", "LEAK85 ")):
        messages = [c["message"] for c in graded["results"][kind].cells.values()]
        assert any(marker in m for m in messages), (kind, messages[:1])
        assert not any("cut by the grader" in m and "characters" not in m for m in messages)


def page_text(path: Path) -> str:
    """What a browser shows of an HTML page: its text, without tags and entities."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(errors="replace")))


def test_nbgraders_own_feedback_shows_no_hidden_test(graded):
    """The formgrader's Generate Feedback is `nbgrader generate_feedback` on the class
    folder: it converts the autograded notebooks, which hold the hidden tests."""
    out = graded["out"]
    autograded = sorted((out / "autograded").glob(f"*/{hostile.A}/*.ipynb"))
    fragments = hidden_fragments()
    assert all(any(f in p.read_text() for f in fragments) for p in autograded)
    course.run_nbgrader(["generate_feedback", hostile.A, "--force"], cwd=out)
    pages = {p.parts[-3]: page_text(p) for p in (out / "feedback").glob(f"*/{hostile.A}/*.html")}
    assert set(pages) == {p.parts[-3] for p in autograded}
    leaks = {student: [f for f in fragments if f in text] for student, text in pages.items()}
    assert not any(leaks.values()), {s: f[:2] for s, f in leaks.items() if f}
    assert all("hidden tests: not shown" in text for text in pages.values())
    total = graded["results"]["perfect"].score
    assert re.search(rf"Score: {total:.1f} / {total:.1f}", pages["perfect"]), total


def test_crashes_and_cells_that_raised_are_named(graded):
    results = graded["results"]
    assert any("memory" in n for n in results["memory-in-a-test"].notes)
    assert any("did not stop when interrupted" in n for n in results["ignores-interrupts"].notes)
    assert any("processes" in n for n in results["fork-many"].notes)
    assert any("ConnectionRefusedError" in n or "OSError" in n for n in results["network"].notes)
    assert any("raised an error" in n and "No space left" in n
               for n in results["fills-the-disk"].notes), results["fills-the-disk"].notes
    assert "the kernel stopped in the test test_numerical_gradient" in \
        graded["selves"]["exits-in-a-test"][1]  # the self-grade report names it too
    # the host folder of the kernel's sockets is read-only to it
    assert any("PermissionError" in n for n in results["writes-runtime-folder"].notes), \
        results["writes-runtime-folder"].notes
    # a cell that prints forever is stopped at its deadline, and the rest is graded
    assert results["trickles-output"].cells and any(
        "limit" in n for n in results["trickles-output"].notes), results["trickles-output"].notes


def test_a_kernel_that_floods_the_grader_is_stopped_and_costs_only_its_cells(graded):
    """Issue 38: 4.8 GB of messages (the same buffer, signed afresh), for the cell, for no
    cell, or on shell and stdin while a test asks: each stopped once it sent 64 MB, said
    in the report and on the feedback page; the rest of the notebook graded as usual (the
    scores: test_class_grading_scores_each_kind_as_expected)."""
    results = graded["results"]
    for kind in ("floods-buffers", "floods-other-cells", "floods-in-a-test"):
        assert any("more than 64 MB of output" in n for n in results[kind].notes), \
            (kind, results[kind].notes)
    # course-grade's page says it in what the grader found; nbgrader's (generated by the
    # test above) in the cell's output
    pages = [page_text(p) for p in (graded["out"] / "feedback" / "floods-buffers").rglob(
        "*.html")]
    assert pages and all("the cell sent more than 64 MB of output" in text for text in pages)


def test_nothing_is_left_running_or_written_outside_the_sandbox(graded):
    assert not graded["left"], [" ".join(p.cmdline()) for p in graded["left"]]
    for folder in (Path.home(), Path("/tmp"), Path("/var/tmp"), ROOT, Path("/root")):
        assert not (folder / hostile.MARKER).exists(), folder
