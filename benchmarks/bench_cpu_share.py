"""How much a CPU hog beside it slows an honest submission, with and without a kernel's share.

Grades 01-autodiff's perfect notebook (the honest submission) with `course-grade class`
(2 workers, one TensorFlow thread per kernel), alone, then beside a hog: the same
notebook with a cell after sgd_step's tests that starts --busy processes spinning in
`while True: pass`, each in a session of its own (start_new_session: a scheduler
autogroup each, so that sharing the CPU per session does not hold it), and sleeps
--hog-factor times the honest time alone (so the hog outlasts the honest submission). One
row per way a kernel gets its share (autograder.engine.trusted.cpushare, COURSE_GRADE_CPU_SHARE),
each with its own time alone (the throttle nices every kernel, which costs it against
anything else the machine runs):

- none: nothing but the scheduler (the grader before the cgroups);
- cgroup: each kernel in a cgroup of its own, equal weights;
- cgroup-cap: the same, each kernel also capped at 1 core (--cpu-cores 1: its share);
- throttle: no cgroup; each kernel niced and stopped whenever it takes more than its share
  (here 1 core: `kernel_threads`).

With --autogroup-off (as root), every row is measured again with
/proc/sys/kernel/sched_autogroup_enabled set to 0, and the setting is put back after.
Prints a table and writes JSON (benchmarks/results/cpu-share.json by default).

    .venv/bin/python benchmarks/bench_cpu_share.py [--modes none cgroup throttle] [--autogroup-off]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from autograder.authoring import demo  # noqa: E402
from autograder.cells import grade_id  # noqa: E402
from autograder.engine.trusted import cpushare  # noqa: E402
from autograder.grading import classgrade  # noqa: E402
from autograder.limits import Limits  # noqa: E402

A = "01-autodiff"
AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")


def hog_cell(busy: int, seconds: float) -> str:
    return ("import subprocess, sys, time\n"
            "hogs = [subprocess.Popen([sys.executable, '-c', 'while True: pass'],\n"
            f"                         start_new_session=True) for _ in range({busy})]\n"
            f"time.sleep({seconds:.0f})\n"
            "for h in hogs:\n    h.kill()")


def notebooks(busy: int, seconds: float) -> dict:
    c = demo.Course(ROOT, A)
    honest = c.filled(c.answers)
    hog = c.filled(c.answers)
    after = next(i for i, x in enumerate(hog.cells) if grade_id(x) == "test_sgd_step_none")
    hog.cells.insert(after + 1, nbformat.v4.new_code_cell(hog_cell(busy, seconds)))
    return {"honest": honest, "hog": hog}


def grade(work: Path, students: dict, mode: str) -> dict:
    """Seconds and score of each student, graded with COURSE_GRADE_CPU_SHARE=`mode`
    (`cgroup-cap`: cgroups, each kernel capped at 1 core, --cpu-cores 1)."""
    folder = Path(tempfile.mkdtemp(dir=work))
    for student, nb in students.items():
        path = folder / "submitted" / student / A / "autodiff.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(nbformat.writes(nb), encoding="utf-8")
    os.environ[cpushare.SWITCH] = mode.split("-")[0]  # read by the pool's workers
    settings = classgrade.Settings(workers=2, force=True, limits=Limits(
        kernel_threads=1, cell_timeout=600, submission_timeout=1200,
        cpu_cores=1 if mode == "cgroup-cap" else None))
    started = time.monotonic()
    results = classgrade.grade_class(ROOT, folder / "submitted", folder / "out", [A],
                                     settings, log=lambda _: None)
    return {"wall_s": time.monotonic() - started,
            **{r.student: {"seconds": r.seconds, "score": r.score, "max": r.max_score,
                           "notes": r.notes[:2]} for r in results}}


def measure(work: Path, modes: list[str], busy: int, hog_factor: float, rows: dict,
            save) -> dict:
    """For each mode: the honest submission alone, then beside the hog, into `rows`
    (`save()` after each: a run cut short keeps what it measured)."""
    for mode in modes:
        print(f"  {mode}: alone, then beside the hog ...", file=sys.stderr, flush=True)
        alone = grade(work, {"honest": notebooks(busy, 0)["honest"]}, mode)
        seconds = alone["honest"]["seconds"]
        rows[mode] = {"alone": alone, "beside": grade(
            work, notebooks(busy, hog_factor * seconds), mode)}
        print(f"  {mode}: {seconds:.1f} s alone, "
              f"{rows[mode]['beside']['honest']['seconds']:.1f} s beside the hog",
              file=sys.stderr, flush=True)
        save()
    return rows


def table(runs: dict) -> str:
    lines = [f"{'autogroup':<10} {'kernel share':<13} {'alone s':>8} {'beside s':>9} "
             f"{'x alone':>8} {'honest points':>14}"]
    for autogroup, rows in runs.items():
        for mode, row in rows.items():
            alone, honest = row["alone"]["honest"], row["beside"]["honest"]
            lines.append(f"{autogroup:<10} {mode:<13} {alone['seconds']:>8.1f} "
                         f"{honest['seconds']:>9.1f} {honest['seconds'] / alone['seconds']:>8.2f}"
                         f" {honest['score']:>8g} / {honest['max']:g}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", nargs="+", default=["none", "cgroup", "throttle"],
                        choices=["none", "cgroup", "cgroup-cap", "throttle"])
    parser.add_argument("--busy", type=int, default=56, help="the hog's busy processes")
    parser.add_argument("--hog-factor", type=float, default=3.0,
                        help="the hog sleeps this many times the honest time alone")
    parser.add_argument("--autogroup-off", action="store_true",
                        help="measure again with sched_autogroup_enabled=0 (root)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "cpu-share.json"))
    args = parser.parse_args(argv)
    saved = AUTOGROUP.read_text().strip() if AUTOGROUP.exists() else None
    load = os.getloadavg()  # other work on the machine makes every row slower
    runs: dict = {}

    def save() -> None:
        report = {"benchmark": "cpu_share", "config": vars(args),
                  "environment": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                  "kernel": platform.release(), "autogroup": saved,
                                  "load_before": load, "load_after": os.getloadavg()},
                  "runs": runs}
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1), encoding="utf-8")

    with tempfile.TemporaryDirectory(prefix="bench-cpu-share-") as tmp:
        print(f"autogroup as it is ({saved}) ...", file=sys.stderr, flush=True)
        measure(Path(tmp), args.modes, args.busy, args.hog_factor,
                runs.setdefault(f"as is ({saved})", {}), save)
        if args.autogroup_off and saved is not None:
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # the setting put back
            try:
                AUTOGROUP.write_text("0")
                print("autogroup off ...", file=sys.stderr, flush=True)
                measure(Path(tmp), args.modes, args.busy, args.hog_factor,
                        runs.setdefault("off (0)", {}), save)
            finally:
                AUTOGROUP.write_text(saved)
    print(table(runs))
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
