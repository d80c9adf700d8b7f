"""How fast the course grades a class, beside plain nbgrader.

Builds a class of --students students for each assignment (default: 01 to 03, 8 students,
24 submissions: perfect, blank, partial and typical mistakes from tests/mutants), then
times, in one run:

- course-grade: `autograder.grading.classgrade.grade_class` with --workers (default: every core),
  each kernel in the sandbox (bubblewrap), forked warm from a fork server that has
  TensorFlow loaded (autograder.engine.trusted.forkserver);
- course-grade, cold kernels (COURSE_GRADE_FORKSERVER=0): each kernel a fresh process in
  its own sandbox, for what warm kernels save;
- course-grade --no-sandbox: the kernels run plainly (and start cold), for the sandbox's
  cost beside the cold sandboxed run;
- nbgrader: plain sequential `nbgrader autograde ASSIGNMENT` over the same submissions,
  one command per assignment, in a course folder prepared beforehand (not timed);
- bare: each submission executed with nbclient, one after another, no grading at all;
- course-grade with one worker, for the overhead per submission above the bare run.

Prints a table and writes JSON (benchmarks/results/grading.json by default).

With --cluster it compares the ways of running course-grade instead, on the same class:
this machine's process pool (the default) with 2 and 1 workers, and a Dask cluster on this
machine (`dask scheduler` and `dask worker --nthreads 1` processes, started before the
clock runs, as an instructor's cluster is there before grading) with 2 and 1 workers; with
submissions per hour, the scheduler's cost per submission, and an estimate for 3,000
submissions on N workers (benchmarks/results/grading-cluster.json).

    .venv/bin/python benchmarks/bench_grading.py [--students 8] [--assignments 01-autodiff ...]
    .venv/bin/python benchmarks/bench_grading.py --cluster
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder import course  # noqa: E402
from autograder.authoring import demo  # noqa: E402
from autograder.grading import classgrade, store  # noqa: E402


def build(folder: Path, assignments: list[str], students: int) -> int:
    count = 0
    for assignment in assignments:
        c = demo.Course(ROOT, assignment)
        builders = [demo.perfect, demo.blank, demo.partial] + [
            b for _, b in demo.mistake_builders(c, limit=len(c.exercises))]
        for k in range(students):
            data = builders[k % len(builders)](c)[0]
            path = folder / f"student{k:02d}" / assignment / c.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            count += 1
    return count


def time_bare(folder: Path, limit: int | None = None) -> dict[str, float]:
    import nbformat
    from nbclient import NotebookClient

    seconds = {}
    for path in sorted(folder.glob("*/*/*.ipynb"))[:limit]:
        nb = nbformat.read(str(path), as_version=4)
        run_dir = Path(tempfile.mkdtemp(prefix="bare-"))
        started = time.monotonic()
        NotebookClient(nb, timeout=120, allow_errors=True,
                       resources={"metadata": {"path": str(run_dir)}}).execute()
        seconds[str(path.relative_to(folder))] = time.monotonic() - started
        shutil.rmtree(run_dir, ignore_errors=True)
    return seconds


def time_nbgrader(folder: Path, assignments: list[str], work: Path) -> float:
    base = course.make_course_dir(ROOT, work / "nbgrader-course", assignments)
    # the baseline is nbgrader as it ships: its own Execute and autograde steps, not the
    # course's engine, which the course's config puts into nbgrader's autograde
    with open(base / course.CONFIG_NAME, "a", encoding="utf-8") as config:
        config.write("from nbgrader.converters.autograde import Autograde as _Autograde\n"
                     "c.Autograde.autograde_preprocessors = "
                     "_Autograde.autograde_preprocessors.make_dynamic_default()\n")
    for assignment in assignments:
        course.run_nbgrader(["generate_assignment", assignment, "--force"], cwd=base)
    shutil.copytree(folder, base / "submitted")
    started = time.monotonic()
    for assignment in assignments:
        course.run_nbgrader(["autograde", assignment, "--force"], cwd=base)
    return time.monotonic() - started


def time_course_grade(folder: Path, assignments: list[str], out: Path,
                      workers: int | None, sandboxed: bool = True,
                      scheduler: str | None = None, warm: bool = True,
                      cluster_certs: Path | None = None) -> tuple[float, list]:
    from autograder.engine.trusted import forkserver

    store.prepare_out(ROOT, out, assignments)  # generating is set-up, as for nbgrader
    started = time.monotonic()
    settings = classgrade.Settings(workers=None if scheduler else workers, force=True,
                                   no_sandbox=not sandboxed, scheduler=scheduler,
                                   cluster_certs=cluster_certs)
    os.environ[forkserver.SWITCH] = "1" if warm else "0"  # the workers inherit it
    try:
        results = classgrade.grade_class(ROOT, folder, out, assignments, settings,
                                         log=lambda line: None)
    finally:
        os.environ.pop(forkserver.SWITCH, None)
    return time.monotonic() - started, results


def compare_clusters(folder: Path, assignments: list[str], n: int, work: Path,
                     out: str, repeat: int = 1, worker_counts=(2, 1)) -> None:
    """This machine's pool against a Dask cluster on this machine, 2 and 1 workers; with
    `repeat` > 1 the two take turns that many times and the medians are shown."""
    from autograder.scale.dask_local import LocalProcesses

    walls: dict = {}
    runs = {}
    for turn in range(repeat):
        for workers in worker_counts:
            print(f"[{turn + 1}/{repeat}] course-grade, this machine's pool, {workers} "
                  "worker(s) ...", flush=True)
            wall, results = time_course_grade(folder, assignments, work / f"pool{workers}",
                                              workers)
            walls.setdefault(("pool", workers), []).append(wall)
            runs[("pool", workers)] = results
            with LocalProcesses(workers, work / f"cluster{workers}") as cluster:
                print(f"[{turn + 1}/{repeat}] course-grade --scheduler, {workers} dask "
                      "worker(s) ...", flush=True)
                wall, results = time_course_grade(folder, assignments, work / f"dask{workers}",
                                                  workers, scheduler=cluster.address,
                                                  cluster_certs=cluster.certs)
            walls.setdefault(("dask", workers), []).append(wall)
            runs[("dask", workers)] = results
    runs = {key: (statistics.median(walls[key]), results) for key, results in runs.items()}
    print()
    print(f"{'how':44s} {'workers':>7s} {'wall s':>8s} {'s/subm.':>8s} {'subm./hour':>11s} "
          f"{'scheduler cost / subm.':>23s}")
    report = {"submissions": n, "assignments": assignments, "cores": os.cpu_count(),
              "python": platform.python_version(), "runs": []}
    report["repeat"] = repeat
    for workers in worker_counts:
        pool, _ = runs[("pool", workers)]
        for way, label in (("pool", "course-grade, this machine's pool"),
                           ("dask", "course-grade --scheduler (Dask, localhost)")):
            wall, results = runs[(way, workers)]
            # the scheduler's extra worker-seconds per submission, as a share of what a
            # worker of the pool spends on one: (wall - pool) * workers / n / (pool * workers / n)
            cost = None if way == "pool" else (wall - pool) / pool
            shown = "" if cost is None else f"{100 * cost:+.1f} %"
            print(f"{label:44s} {workers:>7d} {wall:>8.1f} {wall / n:>8.2f} "
                  f"{3600 * n / wall:>11.0f} {shown:>23s}")
            report["runs"].append({"way": way, "workers": workers, "wall_s": wall,
                                   "wall_s_each": walls[(way, workers)],
                                   "per_submission_s": wall / n,
                                   "submissions_per_hour": 3600 * n / wall,
                                   "scheduler_cost": cost,
                                   # inside the engine, per graded submission (last turn)
                                   "mean_grade_one_s": statistics.mean(
                                       [r.seconds for r in results if r.seconds] or [0.0]),
                                   "scores": sorted(r.score for r in results)})
    same = all(sorted(r.score for r in runs[("pool", w)][1])
               == sorted(r.score for r in runs[("dask", w)][1]) for w in worker_counts)
    two = next(r for r in report["runs"] if r["way"] == "dask"
               and r["workers"] == max(worker_counts))
    print()
    print(f"the scheduler costs {100 * two['scheduler_cost']:+.1f} % of a submission's grading"
          f" time with {two['workers']} workers (target: under 5 %)")
    print(f"the same scores on the pool and on the cluster: {same}")
    per_worker = two["wall_s"] * two["workers"] / n  # seconds a worker spends per submission
    estimate = {w: 3000 * per_worker / w for w in (2, 8, 32, 128)}
    print(f"3,000 submissions at {per_worker:.1f} s per submission per worker (one worker per"
          " core, as here): " + ", ".join(f"{w} workers {s / 3600:.1f} h"
                                          for w, s in estimate.items()))
    report.update(same_scores=same, scheduler_cost=two["scheduler_cost"],
                  seconds_per_submission_per_worker=per_worker,
                  estimate_3000_s={str(w): s for w, s in estimate.items()})
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(report, indent=1))
    print(f"wrote {out}")


ENGINE_CHANGED = "2026-12-04"  # the day the tests moved out of the kernel, into the grader


def previous_engine() -> dict | None:
    """The grading figures tracked before this run (benchmarks/figures.json): the engine
    that ran the tests in the student's kernel (guard and evidence), measured by this
    script on the same class, until the run that replaced it. None once replaced."""
    tracked = json.loads((ROOT / "benchmarks" / "figures.json").read_text())
    figure = tracked.get("grading.course_grade_s")
    if not figure or figure.get("measured", "") >= ENGINE_CHANGED:
        return None
    number = float(figure["text"].split()[0])
    nbgrader = float(tracked["grading.nbgrader_s"]["text"].split()[0])
    return {"wall": number, "nbgrader": nbgrader, "measured": figure["measured"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=8)
    parser.add_argument("--assignments", nargs="+",
                        default=["01-autodiff", "02-gather-gradients", "03-sparse-updates"])
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--skip-overhead", action="store_true",
                        help="skip the one-worker run (and the overhead figure)")
    parser.add_argument("--skip-bare", action="store_true",
                        help="do not time the bare execution (nor the overhead above it)")
    parser.add_argument("--cluster", action="store_true",
                        help="compare this machine's pool with a Dask cluster instead")
    parser.add_argument("--repeat", type=int, default=1,
                        help="with --cluster: turns of each way of running; medians shown")
    parser.add_argument("--cluster-workers", type=int, nargs="+", default=[2, 1],
                        help="with --cluster: the worker counts compared (default: 2 1)")
    parser.add_argument("--out", default=None,
                        help="the JSON (default: benchmarks/results/grading.json, or "
                             "grading-cluster.json with --cluster)")
    args = parser.parse_args()
    results_dir = ROOT / "benchmarks" / "results"
    args.out = args.out or str(results_dir / ("grading-cluster.json" if args.cluster
                                              else "grading.json"))
    os.environ["PATH"] = course.tool_env()["PATH"]
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    workers = args.workers or os.cpu_count() or 1
    work = Path(tempfile.mkdtemp(prefix="grading-bench-"))
    try:
        folder = work / "submitted"
        n = build(folder, args.assignments, args.students)
        print(f"{n} submissions ({args.students} students x {len(args.assignments)} "
              f"assignments), {os.cpu_count()} cores", flush=True)
        # not timed: the first TensorFlow import after a boot or an install reads about a
        # gigabyte of libraries from disk; whichever method ran first would pay for it
        print("warm-up: one submission executed bare (not timed) ...", flush=True)
        time_bare(folder, limit=1)
        if args.cluster:
            compare_clusters(folder, args.assignments, n, work, args.out, args.repeat,
                             args.cluster_workers)
            return 0
        threads = max(1, (os.cpu_count() or 1) // workers)
        print(f"course-grade, default workers ({workers}, {threads} thread(s) per kernel) ...",
              flush=True)
        ours, results = time_course_grade(folder, args.assignments, work / "out", workers)
        print("course-grade, cold kernels, same workers ...", flush=True)
        cold, cold_results = time_course_grade(folder, args.assignments, work / "out-cold",
                                               workers, warm=False)
        print("course-grade --no-sandbox, same workers ...", flush=True)
        plain, plain_results = time_course_grade(folder, args.assignments, work / "out-plain",
                                                 workers, sandboxed=False)
        sandbox_cost = (cold - plain) / plain  # both start each kernel cold
        print("plain sequential nbgrader autograde ...", flush=True)
        theirs = time_nbgrader(folder, args.assignments, work)
        bare, bare_total = {}, None
        if not args.skip_bare:
            print("bare execution of each notebook ...", flush=True)
            bare = time_bare(folder)
            bare_total = sum(bare.values())
        one = None
        if not args.skip_overhead:
            print("course-grade, one worker ...", flush=True)
            one, _ = time_course_grade(folder, args.assignments, work / "out1", 1)
        overhead = None if one is None or bare_total is None else (one - bare_total) / bare_total
        rows = [
            ("course-grade (sandboxed, warm kernels)", workers, ours, ours / n, theirs / ours),
            ("course-grade (sandboxed, cold kernels)", workers, cold, cold / n, theirs / cold),
            ("course-grade --no-sandbox (cold kernels)", workers, plain, plain / n,
             theirs / plain),
            ("nbgrader autograde, sequential", 1, theirs, theirs / n, 1.0),
        ]
        if bare_total is not None:
            rows.append(("bare execution (nbclient), sequential", 1, bare_total,
                         bare_total / n, theirs / bare_total))
        if one is not None:
            rows.append(("course-grade (sandboxed)", 1, one, one / n, theirs / one))
        before = previous_engine()
        if before is not None:  # the engine this course had before (figures.json)
            rows.insert(1, (f"previous engine, {before['measured']}: tests in the kernel",
                            workers, before["wall"], before["wall"] / n,
                            before["nbgrader"] / before["wall"]))
        print()
        print(f"{'how':50s} {'workers':>7s} {'wall s':>8s} {'s/subm.':>8s} "
              f"{'speed vs nbgrader':>18s}")
        for how, w, wall, per, ratio in rows:
            print(f"{how:50s} {w:>7d} {wall:>8.1f} {per:>8.2f} {ratio:>17.2f}x")
        print()
        print(f"course-grade is {theirs / ours:.2f} times as fast as sequential nbgrader "
              f"(target: at least 1.8)")
        print(f"warm kernels grade {cold / ours:.2f} times as fast as cold ones")
        print(f"the sandbox costs {100 * sandbox_cost:+.1f} % wall time against the same run "
              f"without it, both with cold kernels (target: under 10 %)")
        same = sorted(r.score for r in plain_results) == sorted(r.score for r in results) \
            == sorted(r.score for r in cold_results)
        print(f"the same scores warm, cold and without the sandbox: {same}")
        if overhead is not None:
            print(f"overhead per submission above bare execution, one worker: "
                  f"{100 * overhead:.1f} % (target: under 20 %)")
        scores = sorted(r.score for r in results)
        report = {
            "submissions": n, "students": args.students, "assignments": args.assignments,
            "cores": os.cpu_count(), "workers": workers, "kernel_threads": threads,
            "python": platform.python_version(),
            "course_grade_s": ours, "course_grade_cold_s": cold,
            "warm_speedup": cold / ours, "course_grade_no_sandbox_s": plain,
            "sandbox_cost": sandbox_cost, "same_scores_without_sandbox": same,
            "nbgrader_sequential_s": theirs, "bare_s": bare_total,
            "course_grade_one_worker_s": one, "speedup_vs_nbgrader": theirs / ours,
            "overhead_vs_bare": overhead, "scores": scores, "bare_per_notebook_s": bare,
            "previous_engine": before,
        }
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1))
        print(f"wrote {args.out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
