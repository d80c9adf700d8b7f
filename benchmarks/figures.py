"""The measured figures that the notebooks and READMEs quote, taken from the benchmarks' JSON.

A file quotes a figure between two markers: `<!--fig:ner.test_f1-->0.459<!--/fig-->`
(Markdown, JupyterLab and nbgrader's feedback show only `0.459`). This script computes
every figure from the JSON the benchmarks wrote in `benchmarks/results/` (git-ignored),
keeps them in `benchmarks/figures.json` (tracked: each figure's text, the benchmark run it
comes from and the command that makes that run), and writes each text between its markers
in the README files and the solution notebooks (then regenerates `notebooks/`).
`tests/course/test_figures.py` fails when a quoted text is not the one in `figures.json`, when a
marker names no figure, and when a notebook quotes a measurement without markers.

    .venv/bin/python benchmarks/figures.py          # each figure: quoted, measured now, run
    .venv/bin/python benchmarks/figures.py --write  # take what was measured, rewrite quotes

A figure whose run is missing from `benchmarks/results/` keeps its tracked text.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TRACKED = ROOT / "benchmarks" / "figures.json"
MARKER = re.compile(r"<!--fig:([\w+-]+\.[\w.+-]+)-->(.*?)<!--/fig-->", re.DOTALL)
# the files that quote figures; solution notebooks are regenerated into notebooks/
QUOTING = ("README.md", "library/README.md", "benchmarks/README.md", "data/README.md",
           "solutions/*/*.ipynb")

# benchmark run (its JSON in benchmarks/results/) -> the command that makes it
RUNS = {
    "notebooks": ".venv/bin/python benchmarks/bench_notebooks.py --run",
    "grading": ".venv/bin/python benchmarks/bench_grading.py --skip-bare --skip-overhead",
    "grading-cluster": ".venv/bin/python benchmarks/bench_grading.py --cluster --repeat 2",
    "dask-idle": ".venv/bin/python benchmarks/bench_dask_idle.py",
    "sparse_step": ".venv/bin/python benchmarks/bench_sparse_step.py",
    "ner": ".venv/bin/python benchmarks/bench_ner.py --seeds 0,1,2",
    "ner-argmax": (".venv/bin/python benchmarks/bench_ner.py --seeds 0,1,2 --models glove+chars "
                   "--decode argmax --out benchmarks/results/ner-argmax.json"),
    "ner-dropout": (".venv/bin/python benchmarks/bench_ner.py --seeds 0,1,2 --models glove+chars "
                    "--word-dropout 0.1 --out benchmarks/results/ner-dropout.json"),
    "similarity": ".venv/bin/python benchmarks/bench_similarity.py",
    "cpu-share": ".venv/bin/python benchmarks/bench_cpu_share.py --autogroup-off",
    "suite": "make test (tests/conftest.py writes it after a run of the whole suite)",
}

FIGURES: dict[str, tuple[tuple[str, ...], Callable[..., str]]] = {}


def figure(key: str, *runs: str):
    """Register `fn(*reports) -> text` as figure `key`, computed from `runs`' JSON."""
    def register(fn):
        FIGURES[key] = (runs, fn)
        return fn
    return register


# --- notebooks.json: each solution notebook run top to bottom ---------------------------

def _run_s(report, prefixes) -> list[float]:
    return [r["run_seconds"] for r in report["notebooks"] if r["notebook"][:2] in prefixes]


@figure("notebooks.run_s.01-05", "notebooks")
def _(r):
    times = _run_s(r, {"01", "02", "03", "04", "05"})
    return f"{min(times):.0f} to {max(times):.0f} s"


for _nb in ("06", "07"):
    figure(f"notebooks.run_s.{_nb}", "notebooks")(
        lambda r, nb=_nb: f"{_run_s(r, {nb})[0]:.0f} s")


# --- grading.json: course-grade beside sequential nbgrader ------------------------------

figure("grading.course_grade_s", "grading")(lambda r: f"{r['course_grade_s']:.1f} s")
figure("grading.cold_s", "grading")(lambda r: f"{r['course_grade_cold_s']:.1f} s")
figure("grading.warm_speedup", "grading")(lambda r: f"{r['warm_speedup']:.2f} times")
figure("grading.no_sandbox_s", "grading")(lambda r: f"{r['course_grade_no_sandbox_s']:.1f} s")
figure("grading.nbgrader_s", "grading")(lambda r: f"{r['nbgrader_sequential_s']:.1f} s")
figure("grading.speedup", "grading")(lambda r: f"{r['speedup_vs_nbgrader']:.2f} times")
figure("grading.sandbox_cost", "grading")(lambda r: f"{100 * r['sandbox_cost']:.1f} %")


# --- similarity.json: planted copies and honest variants in the demo class -------------

def _at_default(r) -> dict:
    return next(t for t in r["thresholds"] if t["threshold"] == r["settings"]["threshold"])


@figure("similarity.recall", "similarity")
def _(r):
    listed = [v for kind, v in _at_default(r)["listed"].items()
              if not kind.startswith("both hold")]  # pairs that must not be listed
    return f"{100 * sum(n for n, _ in listed) / sum(total for _, total in listed):.0f} %"


@figure("similarity.false_pairs", "similarity")
def _(r):
    at = _at_default(r)
    wrongly = sum(n for kind, (n, _) in at["listed"].items() if kind.startswith("both hold"))
    return f"{len(at['false_pairs']) + wrongly}"


# --- grading-cluster.json: the pool beside a Dask cluster -------------------------------

def _cluster_run(r, way, workers) -> dict:
    return next(x for x in r["runs"] if x["way"] == way and x["workers"] == workers)


@figure("grading_cluster.table", "grading-cluster")
def _(r):
    lines = ["| how | workers | wall s | submissions / hour | scheduler's cost |",
             "| --- | --- | --- | --- | --- |"]
    for run in r["runs"]:
        how = ("this machine's pool" if run["way"] == "pool"
               else "`--scheduler` (Dask on localhost)")
        cost = "" if run["scheduler_cost"] is None else f"{100 * run['scheduler_cost']:+.1f} %"
        lines.append(f"| {how} | {run['workers']} | {run['wall_s']:.1f} | "
                     f"{run['submissions_per_hour']:.0f} | {cost} |")
    return "\n" + "\n".join(lines) + "\n"


figure("grading_cluster.cost_2", "grading-cluster")(
    lambda r: f"{100 * _cluster_run(r, 'dask', 2)['scheduler_cost']:+.1f} %")


@figure("grading_cluster.turns_2", "grading-cluster")
def _(r):
    pool, dask = _cluster_run(r, "pool", 2), _cluster_run(r, "dask", 2)
    return ", ".join(f"{p:.1f} against {d:.1f} s"
                     for p, d in zip(pool["wall_s_each"], dask["wall_s_each"], strict=True))


@figure("grading_cluster.turn_costs_1", "grading-cluster")
def _(r):
    pool, dask = _cluster_run(r, "pool", 1), _cluster_run(r, "dask", 1)
    return " and ".join(f"{100 * (d - p) / p:+.1f} %"
                        for p, d in zip(pool["wall_s_each"], dask["wall_s_each"], strict=True))


figure("grading_cluster.per_worker", "grading-cluster")(
    lambda r: f"{r['seconds_per_submission_per_worker']:.1f} s")


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 1200 else f"{seconds / 60:.0f} min"


@figure("grading_cluster.estimate", "grading-cluster")
def _(r):
    est = r["estimate_3000_s"]
    return (f"{_duration(est['8'])} on 8 workers, {_duration(est['32'])} on 32 and "
            f"{_duration(est['128'])} on 128")


# --- dask-idle.json ---------------------------------------------------------------------

def _idle(r, settings) -> str:
    row = next(x for x in r["rows"] if x["settings"] == settings)
    return f"{100 * row['core_share']:.1f} %"


figure("dask_idle.defaults", "dask-idle")(lambda r: _idle(r, "Dask's defaults"))
figure("dask_idle.course", "dask-idle")(lambda r: _idle(r, "autograder/dask.yaml"))


# --- sparse_step.json: one update of a large table --------------------------------------

def _step_ms(r, method) -> float:
    rows = max(x["rows"] for x in r["results"])
    return next(x["median_ms"] for x in r["results"]
                if x["rows"] == rows and x["method"] == method)


figure("sparse_step.rows", "sparse_step")(
    lambda r: f"{max(x['rows'] for x in r['results']):,}")
figure("sparse_step.lazy_adam_ms", "sparse_step")(
    lambda r: f"{_step_ms(r, 'lazy_adam'):.2f} ms")
figure("sparse_step.keras_adam_ms", "sparse_step")(
    lambda r: f"{_step_ms(r, 'keras_adam'):.0f} ms")
figure("sparse_step.sparse_sgd_ms", "sparse_step")(
    lambda r: f"{_step_ms(r, 'tf_sparse_sgd'):.2f} ms")


# --- ner*.json: notebook 06's tagger trained in full ------------------------------------

def _runs(r, model="glove+chars") -> list[dict]:
    return [x for x in r["runs"] if x["model"] == model]


def _f1(r, part, model="glove+chars") -> float:
    return statistics.mean(x["scores"][part]["f1"] for x in _runs(r, model))


def _tps(r, model="glove+chars") -> float:
    return statistics.mean(x["tokens_per_second"] for x in _runs(r, model))


def _train_s(r, model="glove+chars") -> float:
    return statistics.mean(x["train_seconds"] for x in _runs(r, model))


def _ner_report(r) -> str:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_ner as bench  # noqa: PLC0415 - benchmarks/bench_ner.py, a script beside this one

    return "\n```\n" + bench.format_report(r) + "\n```\n"


for _run in ("ner", "ner-argmax"):
    figure(f"{_run.replace('-', '_')}.table", _run)(_ner_report)

for _model, _name in (("glove+chars", "ner"), ("glove", "ner.glove"),
                      ("random+chars", "ner.random")):
    for _part, _short in (("validation", "val_f1"), ("test", "test_f1")):
        figure(f"{_name}.{_short}", "ner")(
            lambda r, m=_model, p=_part: f"{_f1(r, p, m):.3f}")
for _run in ("ner-argmax", "ner-dropout"):
    for _part, _short in (("validation", "val_f1"), ("test", "test_f1")):
        figure(f"{_run.replace('-', '_')}.{_short}", _run)(
            lambda r, p=_part: f"{_f1(r, p):.3f}")


def _test_f1s(r) -> list[float]:
    """Test F1 of the notebook's model, one per seed."""
    return [x["scores"]["test"]["f1"] for x in _runs(r)]


@figure("ner.test_f1_seeds", "ner")
def _(r):
    return (", ".join(f"{f1:.3f}" for f1 in _test_f1s(r)) + " for seeds "
            + ", ".join(str(x["seed"]) for x in _runs(r)))


figure("ner.test_f1_range", "ner")(
    lambda r: f"{min(_test_f1s(r)):.3f} to {max(_test_f1s(r)):.3f}")


@figure("ner.train_s_range", "ner")
def _(r):
    secs = [x["train_seconds"] for x in r["runs"] if x["model"] != "glove"]
    return f"{min(secs):.0f} to {max(secs):.0f} s"


figure("ner.train_s", "ner")(lambda r: f"{_train_s(r):.0f} s")
figure("ner.margin_test", "ner")(
    lambda r: f"{_f1(r, 'test') - _f1(r, 'test', 'random+chars'):.3f}")
figure("ner.margin_val", "ner")(
    lambda r: f"{_f1(r, 'validation') - _f1(r, 'validation', 'random+chars'):.3f}")
figure("ner.chars_gain_val", "ner")(
    lambda r: f"{_f1(r, 'validation') - _f1(r, 'validation', 'glove'):.3f}")
figure("ner.chars_gain_test", "ner")(
    lambda r: f"{_f1(r, 'test') - _f1(r, 'test', 'glove'):.3f}")
figure("ner.chars_time", "ner")(
    lambda r: f"{_train_s(r) / _train_s(r, 'glove'):.1f} times")


figure("ner.seed_spread", "ner")(
    lambda r: f"{max(_test_f1s(r)) - min(_test_f1s(r)):.2f}")


@figure("ner.precision_recall", "ner")
def _(r):
    test = _runs(r)[0]["scores"]["test"]
    return f"{test['precision']:.2f} and {test['recall']:.2f}"


@figure("ner.best_types", "ner")
def _(r):
    per_type = _runs(r)[0]["scores"]["test"]["per_type"]
    f1 = {t: statistics.mean(x["scores"]["test"]["per_type_f1"].get(t, 0.0) for x in _runs(r))
          for t in per_type}
    best = sorted(f1, key=lambda t: -f1[t])[:3]
    return ", ".join(f"{t} {f1[t]:.2f} ({per_type[t]['support']} entities)" for t in best)


figure("ner.decode_gain_val", "ner", "ner-argmax")(
    lambda bio, arg: f"{_f1(bio, 'validation') - _f1(arg, 'validation'):.3f}")
figure("ner.decode_gain_test", "ner", "ner-argmax")(
    lambda bio, arg: f"{_f1(bio, 'test') - _f1(arg, 'test'):.3f}")
figure("ner.tokens_per_s", "ner")(lambda r: f"{_tps(r):,.0f}")
figure("ner_argmax.tokens_per_s", "ner-argmax")(lambda r: f"{_tps(r):,.0f}")


# --- cpu-share.json: an honest submission beside a CPU hog, autogroups on and off ---------

def _slowdowns(report, mode) -> list[float]:
    """How many times its time alone the honest submission took beside the hog, per run."""
    found = []
    for modes in report["runs"].values():
        run = modes.get(mode) or {}
        alone, beside = run.get("alone", {}).get("honest"), run.get("beside", {}).get("honest")
        if alone and beside and alone.get("seconds"):
            found.append(beside["seconds"] / alone["seconds"])
    return found


def _span(values: list[float]) -> str:
    low, high = f"{min(values):.1f}", f"{max(values):.1f}"
    return f"{low} times" if low == high else f"{low} to {high} times"


for _mode in ("none", "cgroup", "throttle"):
    figure(f"cpu_share.slowdown_{_mode}", "cpu-share")(
        lambda r, mode=_mode: _span(_slowdowns(r, mode)))


# --- suite.json: make test --------------------------------------------------------------

figure("suite.tests", "suite")(lambda r: f"{r['tests']} tests")


@figure("suite.time", "suite")
def _(r):
    minutes, seconds = divmod(round(r["seconds"]), 60)
    return f"{minutes} min {seconds} s"


@figure("suite.loop", "suite")
def _(r):
    """The machine's speed: the slow limit's loop (tests/conftest.py) in seconds."""
    return f"{r['loop_s']:.2f} s" if r.get("loop_s") else "not recorded"


def _file_seconds(r, path: str) -> float:
    """Seconds of one test file, keyed by its path under tests/ ("hub/test_hub.py"); a
    record written while tests/ was flat keys it by file name ("test_hub.py")."""
    files = r["files"]
    return files[path] if path in files else files[path.rpartition("/")[2]]


for _file, _name in (("grading/test_hostile.py", "hostile"), ("hub/test_hub.py", "hub"),
                     ("authoring/test_mutants.py", "mutants"),
                     ("course/test_browser.py", "browser")):
    figure(f"suite.{_name}", "suite")(
        lambda r, f=_file: f"{round(_file_seconds(r, f) / 60)} min")


# --- measuring, quoting ------------------------------------------------------------------

def load_run(run: str) -> dict | None:
    """The JSON of a benchmark run, or None when it is missing or not quotable (a run of
    the suite that failed)."""
    path = RESULTS / f"{run}.json"
    if not path.is_file():
        return None
    report = json.loads(path.read_text())
    if run == "suite" and (report.get("exit_status") or report.get("failed")
                           or report.get("error")):
        return None
    return report


def measure() -> dict[str, dict]:
    """Every figure whose runs are all in benchmarks/results/: {key: entry}."""
    reports = {run: load_run(run) for run in RUNS}
    found = {}
    for key, (runs, fn) in FIGURES.items():
        if any(reports[run] is None for run in runs):
            continue
        dates = [datetime.date.fromtimestamp((RESULTS / f"{run}.json").stat().st_mtime)
                 for run in runs]
        try:
            text = fn(*(reports[run] for run in runs))
        except KeyError:  # a run from before this figure existed
            continue
        found[key] = {"text": text,
                      "runs": {run: RUNS[run] for run in runs},
                      "measured": max(dates).isoformat()}
    return found


def tracked() -> dict[str, dict]:
    return json.loads(TRACKED.read_text()) if TRACKED.is_file() else {}


def quoting_files() -> list[Path]:
    return sorted(p for pattern in QUOTING for p in ROOT.glob(pattern))


def quotes(text: str) -> list[tuple[str, str]]:
    """(key, quoted text) of every marker in `text`."""
    return MARKER.findall(text)


def requote(text: str, figures: dict[str, dict]) -> str:
    def one(match):
        key = match.group(1)
        if key not in figures:
            raise KeyError(f"no figure {key!r} in {TRACKED.name}")
        return f"<!--fig:{key}-->{figures[key]['text']}<!--/fig-->"
    return MARKER.sub(one, text)


def rewrite(figures: dict[str, dict]) -> list[Path]:
    """Write every figure between its markers; returns the files that changed."""
    from autograder.cells import read_notebook, write_notebook

    changed = []
    for path in quoting_files():
        if path.suffix == ".ipynb":
            nb = read_notebook(path)
            before = [c.source for c in nb.cells]
            for cell in nb.cells:
                if cell.cell_type == "markdown":
                    cell.source = requote(cell.source, figures)
            if [c.source for c in nb.cells] != before:
                write_notebook(nb, path)
                changed.append(path)
        else:
            text = path.read_text()
            new = requote(text, figures)
            if new != text:
                path.write_text(new)
                changed.append(path)
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true",
                        help="store what was measured in benchmarks/figures.json and rewrite "
                        "every quote (then regenerate notebooks/)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    old, new = tracked(), measure()
    used = {key for path in quoting_files() for key, _ in quotes(path.read_text())}
    # what the course quotes, no more
    merged = {key: new.get(key) or old.get(key) for key in FIGURES
              if key in used and (key in new or key in old)}

    def short(text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= 34 else text[:31] + "..."

    print(f"{'figure':<30} {'tracked':<36} {'measured now':<36} quoted")
    for key in FIGURES:
        was = short(old[key]["text"]) if key in old else "-"
        now = short(new[key]["text"]) if key in new else "(no run)"
        print(f"{key:<30} {was:<36} {now:<36} {'yes' if key in used else 'no'}")
    missing = sorted(used - set(merged))
    if missing:
        print(f"quoted but never measured: {', '.join(missing)}", file=sys.stderr)
    if not args.write:
        return 1 if missing else 0
    TRACKED.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
    changed = rewrite(merged)
    print(f"wrote {TRACKED.relative_to(ROOT)}; requoted: "
          + (", ".join(str(p.relative_to(ROOT)) for p in changed) or "nothing changed"))
    if any(p.suffix == ".ipynb" for p in changed):
        subprocess.run([str(Path(sys.executable).parent / "course"), "release"], check=True,
                       cwd=ROOT)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
