"""The measured figures the course quotes come from the benchmarks' JSON
(`benchmarks/figures.py`): every quote is the tracked figure, every tracked figure names the
run and command that measure it, and no notebook quotes a measurement by hand."""

import importlib.util
import json
import re
import sys

import pytest

from autograder.cells import read_notebook
from conftest import ROOT, release_paths, solution_paths

spec = importlib.util.spec_from_file_location("figures", ROOT / "benchmarks" / "figures.py")
figures = importlib.util.module_from_spec(spec)
sys.modules["figures"] = figures
spec.loader.exec_module(figures)

# what reads as a measured figure in prose: a time, a share, a ratio, a score
MEASUREMENT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?\s?(?:ms|s|seconds?|min|minutes?|h|hours?|%)"
                         r"(?!\w)|0\.\d{2,}"
                         r"|\d+(?:\.\d+)? times)")


def quoted_prose(markdown: str) -> str:
    """A markdown cell without its quoted figures, code spans and quoted lines."""
    text = figures.MARKER.sub("", markdown)
    text = re.sub(r"`[^`]*`", "", text)
    return "\n".join(line for line in text.split("\n") if not line.startswith(">"))


def test_every_quote_is_the_tracked_figure():
    tracked = figures.tracked()
    quoted = 0
    for path in [*figures.quoting_files(), *release_paths()]:
        for key, text in figures.quotes(path.read_text() if path.suffix != ".ipynb" else
                                        "\n".join(c.source for c in read_notebook(path).cells)):
            assert key in tracked, f"{path.relative_to(ROOT)} quotes {key}, never measured"
            assert text == tracked[key]["text"], (
                f"{path.relative_to(ROOT)} quotes {key} as {text!r}; benchmarks/figures.json "
                f"has {tracked[key]['text']!r}: run benchmarks/figures.py --write")
            quoted += 1
    assert quoted >= 40


def test_every_tracked_figure_names_its_run_and_is_quoted():
    tracked = figures.tracked()
    used = {key for path in figures.quoting_files() for key, _ in
            figures.quotes(path.read_text())}
    for key, entry in tracked.items():
        assert key in figures.FIGURES, f"{key} is tracked but no longer computed"
        runs, _ = figures.FIGURES[key]
        assert entry["runs"] == {run: figures.RUNS[run] for run in runs}, key
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", entry["measured"]), key
        assert key in used, f"{key} is tracked but quoted nowhere"


@pytest.mark.parametrize("path", solution_paths(), ids=lambda p: p.parent.name)
def test_no_notebook_quotes_a_measurement_by_hand(path):
    found = []
    for cell in read_notebook(path).cells:
        if cell.cell_type == "markdown":
            found += [m.group(0) for m in MEASUREMENT.finditer(quoted_prose(cell.source))]
    assert not found, (f"{path.parent.name} quotes {found} by hand: put the figure in "
                       "benchmarks/figures.py and between <!--fig:KEY--> markers")


def test_the_measurement_pattern_sees_figures_typed_by_hand():
    prose = "It trains in about 90 s and reaches 0.459 (13 % faster, 2.5 times the cost)."
    assert [m.group(0) for m in MEASUREMENT.finditer(prose)] == ["90 s", "0.459", "13 %",
                                                                 "2.5 times"]
    assert not MEASUREMENT.findall(quoted_prose("a `0.5` in code and <!--fig:a.b-->3 s"
                                                "<!--/fig--> quoted"))


def test_figures_are_computed_from_a_run_and_requoted(tmp_path, monkeypatch):
    results = tmp_path / "results"
    results.mkdir()
    (results / "grading.json").write_text(json.dumps({
        "course_grade_s": 100.04, "course_grade_no_sandbox_s": 95.0,
        "nbgrader_sequential_s": 250.0, "speedup_vs_nbgrader": 2.499, "sandbox_cost": 0.053}))
    (results / "suite.json").write_text(json.dumps({"tests": 12, "seconds": 125.4,
                                                    "failed": 1, "exit_status": 1}))
    monkeypatch.setattr(figures, "RESULTS", results)
    found = figures.measure()
    assert found["grading.course_grade_s"]["text"] == "100.0 s"
    assert found["grading.speedup"]["text"] == "2.50 times"
    assert found["grading.sandbox_cost"]["text"] == "5.3 %"
    assert found["grading.speedup"]["runs"] == {"grading": figures.RUNS["grading"]}
    assert "suite.time" not in found  # a run of the suite that failed is never quoted
    assert not any(key.startswith("ner") for key in found)  # no run, no figure
    text = "took <!--fig:grading.course_grade_s-->1 s<!--/fig--> in all"
    assert figures.requote(text, found) == "took <!--fig:grading.course_grade_s-->100.0 s" \
        "<!--/fig--> in all"
    with pytest.raises(KeyError, match="no figure"):
        figures.requote("<!--fig:no.such-->1 s<!--/fig-->", found)


def test_no_figure_in_a_sentence_begins_a_line():
    """A line that begins with `<!--` starts an HTML block in Markdown and breaks its
    paragraph: a figure inside a sentence never begins a line (tables do, on their own)."""
    starts = re.compile(r"^\s*<!--fig:(?![\w.+-]*table-->)", re.MULTILINE)
    for path in figures.quoting_files():
        texts = ([c.source for c in read_notebook(path).cells if c.cell_type == "markdown"]
                 if path.suffix == ".ipynb" else [path.read_text()])
        for text in texts:
            assert not starts.search(text), f"{path.relative_to(ROOT)}: {text[:80]!r}"


# what the READMEs may name that is not a measurement of this course: settings (the cell
# time limit, Dask's tick and poll intervals), the benchmarks' targets, and reference
# points from the course brief (COURSE.md: the WNUT-16 shared task's best test F1 and a
# GloVe BiLSTM's dev F1)
# settings, not measurements: limits, defaults and polling intervals
NOT_MEASURED = {"120 s", "600 s", "10 ms", "20 ms", "50 ms", "0.1 s", "1 s",
                "5 %", "10 %", "20 %", "1.8 times", "2 times", "100 times", "90 minutes",
                "0.524", "0.20"}


@pytest.mark.parametrize("name", ["README.md", "benchmarks/README.md", "data/README.md"])
def test_no_readme_quotes_a_measurement_by_hand(name):
    text = re.sub(r"```.*?```", "", (ROOT / name).read_text(), flags=re.DOTALL)
    found = {m.group(0) for m in MEASUREMENT.finditer(quoted_prose(text))} - NOT_MEASURED
    assert not found, (f"{name} quotes {sorted(found)} by hand: put each in "
                       "benchmarks/figures.py and between <!--fig:KEY--> markers")
