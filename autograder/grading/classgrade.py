"""Grading a whole class on top of nbgrader: parallel, robust to bad submissions, incremental.

`course-grade class INPUT -a 01-autodiff` reads a folder in nbgrader's
`submitted/{student}/{assignment}/` layout or an LMS zip, and grades every submission:

1. The main process reads each file and sorts out what nbgrader cannot grade (empty, not
   JSON, not a notebook, another assignment's notebook); those score 0 with the reason.
   It converts old notebook formats, puts back deleted test cells, notes edited test cells
   and duplicated grade ids (autograder.grading.intake, autograder.grading.repair).
2. The grading engine (autograder.engine) grades each submission with nbgrader's own
   autograde in a private copy of the course folder (no solution notebook in it, no other
   student's work), running the cells in a sandbox (autograder.engine.trusted.executor):
   per-cell time,
   memory and output limits, and a dead kernel that does not stop the run. Its worker
   processes run on this machine (`--workers`, default: the number of cores), or as tasks on
   a Dask cluster (`--scheduler ADDRESS`, autograder.scale.dask_cluster).
3. The main process is the one writer of the class gradebook (`OUT/gradebook.db`, nbgrader's
   own): it records each result as it arrives, with the autograded notebook, so nbgrader's
   formgrader and `generate_feedback` work on `OUT` as on any course.
4. Reports, from every result kept in `OUT/results/`: `grades.csv`, a feedback page per
   student and assignment (`OUT/feedback/`), a class summary (`summary.png` and the
   terminal), each assignment's total after the course's late policy (autograder.late),
   raw beside it.

A submission whose file and assignment have not changed since the last run is not graded
again (`--force` regrades), so adding a student grades that student only.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import nbformat

from autograder import course
from autograder.cells import grade_id, read_notebook
from autograder.engine.trusted import sandbox, submission
from autograder.engine.trusted.session import START_FAILED
from autograder.errors import CourseError
from autograder.grading import mistakes, reports, rules
from autograder.grading.intake import SKIPPED, Submission, collect, notebook_names
from autograder.grading.repair import Prepared, prepare_submission
from autograder.grading.store import (
    ClassGradebook,
    Result,
    load_results,
    prepare_out,
    results_path,
    save_result,
    zero_cells,
)
from autograder.limits import Limits
from autograder.scale.runner import LocalRunner


@dataclass
class Settings:
    workers: int | None = None
    limits: Limits = field(default_factory=Limits)  # kernel_threads None: cores / workers
    force: bool = False
    keep_logs: bool = False  # keep the workers' folders (nbgrader's and the kernels' logs)
    no_sandbox: bool = False  # the instructor's explicit choice to grade without one
    scheduler: str | None = None  # a Dask scheduler's address: its workers grade
    cluster_certs: Path | str | None = None  # its certificates (default: certs.default_folder)
    insecure_cluster: bool = False  # grade on a scheduler that admits anyone
    due: dict = field(default_factory=dict)  # assignment -> due date (ISO, UTC; None: none)


def grade_class(root: Path, source: Path, out: Path, assignments: list[str] | None = None,
                settings: Settings | None = None, log=print) -> list[Result]:
    """Grade every submission in `source` into `out`; returns every result `out` holds."""
    settings = settings or Settings()
    course.facts(root)  # a table it cannot use (a bad late policy too) stops here
    if settings.workers is not None and settings.workers < 1:
        raise CourseError(f"--workers must be at least 1 (got {settings.workers}).")
    settings.limits.check()
    if settings.scheduler and settings.workers:
        raise CourseError("--workers sets how many processes grade on this machine; with "
                          "--scheduler the cluster's workers grade: leave --workers out.")
    if settings.scheduler and settings.keep_logs:
        raise CourseError("--keep-logs keeps the grading folders of this machine's workers; "
                          "with --scheduler they are on the cluster's machines (each "
                          "worker's --local-directory) and are removed after the run: leave "
                          "--keep-logs out.")
    # on a cluster, each worker's sandbox is checked when connecting
    sandboxed = not settings.no_sandbox if settings.scheduler else \
        require_sandbox(settings.no_sandbox)
    out = Path(out).resolve()
    # nbgrader's gradebook calls `alembic` by name: this Python's scripts come first.
    os.environ["PATH"] = course.tool_env()["PATH"]
    skipped: list = []
    submissions = collect(root, Path(source), assignments, log=log, skipped=skipped)
    if not submissions:
        raise CourseError(f"{source} holds no submission of this course's notebooks.")
    names = sorted({s.assignment for s in submissions})
    cluster = None
    if settings.scheduler:  # before anything is written: a bad cluster stops here
        from autograder.scale.dask_cluster import Cluster

        cluster = Cluster(settings.scheduler, root, names, sandboxed, log=log,
                          certs_folder=settings.cluster_certs,
                          insecure=settings.insecure_cluster)
    try:
        return _grade(root, out, submissions, names, settings, sandboxed, cluster, log,
                      skipped)
    finally:
        if cluster is not None:
            cluster.close()


def _grade(root: Path, out: Path, submissions: list[Submission], names: list[str],
           settings: Settings, sandboxed: bool, cluster, log, skipped=()) -> list[Result]:
    prepare_out(root, out, names, log=log)
    rules.apply_due(out, {a: d for a, d in settings.due.items() if a in names})
    (out / SKIPPED).write_text("".join(f"{name}\t{why}\n" for name, why in skipped),
                               encoding="utf-8")
    releases = {a: read_notebook(out / course.RELEASE_DIR / a / notebook_names(root, a)[0])
                for a in names}
    all_ids = {}
    for a in course.assignments(root):
        for path in course.solution_notebooks(root, a):
            all_ids[a] = {grade_id(c) for c in read_notebook(path).cells if grade_id(c)}
    digests = {a: course.assignment_digest(root, a) for a in names}
    writer = ClassGradebook(out)

    todo, unchanged = [], 0
    for sub in submissions:
        path = results_path(out, sub.assignment, sub.student)
        if path.exists() and not settings.force:
            old = json.loads(path.read_text(encoding="utf-8"))
            if (old["digest"], old["assignment_digest"], old.get("timestamp")) == (
                    sub.digest, digests[sub.assignment], sub.timestamp) and \
                    not str(old.get("fatal") or "").startswith(START_FAILED):  # no kernel
                unchanged += 1
                continue
        todo.append(sub)
    log(f"{len(submissions)} submission(s) of {', '.join(names)}: {len(todo)} to grade, "
        f"{unchanged} unchanged since the last run")

    def finish(sub: Submission, prepared: Prepared, run: dict | None) -> Result:
        result = Result(sub.student, sub.assignment, sub.notebook, sub.origin, sub.digest,
                        digests[sub.assignment], notes=list(prepared.notes),
                        fatal=prepared.fatal, timestamp=sub.timestamp,
                        exchange_files=dict(sub.exchange_files))
        autograded = None
        if run is None or run.get("error"):
            result.cells = zero_cells(releases[sub.assignment])
            if run is not None:
                result.fatal = run["error"]
        else:
            result.cells = run["cells"]
            result.seconds = run["seconds"]
            result.notes += reports.describe_findings(run["findings"], cell_seconds)
            autograded = run["autograded"]
        writer.record(result, autograded)
        save_result(out, result)
        return result

    cell_seconds = settings.limits.cell_timeout or course_cell_timeout(root)
    progress = Progress(len(todo), log, settings.workers or os.cpu_count() or 1,
                        getattr(settings.limits, "submission_timeout", None))
    runnable = []
    for sub in todo:
        others = {a: ids for a, ids in all_ids.items() if a != sub.assignment}
        prepared = prepare_submission(sub, releases[sub.assignment], others)
        if prepared.fatal:
            progress.done(finish(sub, prepared, None))
        else:
            runnable.append((sub, prepared))
    if runnable:
        workers = max(1, min(settings.workers or os.cpu_count() or 1, len(runnable)))
        # on a cluster, each worker's share of its machine's cores (scale.dask_cluster)
        threads = settings.limits.kernel_threads or (
            None if cluster else max(1, (os.cpu_count() or 1) // workers))
        engine_settings = submission.Settings(replace(settings.limits, kernel_threads=threads),
                                          sandbox=sandboxed)
        jobs, by_key = [], {}
        for sub, prepared in runnable:
            key = (sub.student, sub.assignment)
            by_key[key] = (sub, prepared)
            jobs.append(submission.Job.of(key, sub.student, sub.assignment, sub.notebook,
                                      nbformat.writes(prepared.notebook),
                                      releases[sub.assignment]))
        def on_result(job, run):
            progress.done(finish(*by_key[job.key], run))

        keep = Path(tempfile.mkdtemp(prefix="course-grade-logs-")) if \
            settings.keep_logs and cluster is None else None
        runner = cluster or LocalRunner(root, workers, keep)  # the same interface
        runner.run(out, jobs, engine_settings, on_result=on_result)
        if keep is not None:
            log(f"worker logs kept in {keep}")
    log(f"graded {len(todo)} submission(s) in {progress.elapsed():.1f} s")
    return load_results(out)


def run(root: Path, args, settings: Settings, log=print) -> str:
    """`course-grade class`: grade `args.input` into `args.out` under the folder's rules
    (autograder.grading.rules: the options in `args.given` win and are kept, the others are
    the folder's), said before grading; return the summary."""
    out = Path(args.out)
    settled = rules.settle(root, out, args, args.given, settings.limits)
    log("\n".join([*settled.lines, settled.policy_line]))
    settings = replace(settings, limits=settled.limits, due=settled.due,
                       force=settings.force or settled.regrade)
    results = grade_class(root, Path(args.input), out, args.assignment or None, settings, log)
    rules.keep(out, settled)
    return report(root, out, results, settled.policy, settled.policy_line, log=log)


def adopt(root: Path, out: Path, settled) -> None:
    """After `course-grade export` with another late policy than the folder's: keep it, and
    write grades.csv and the feedback pages with it, as the export has it."""
    if not settled.late_changed:
        return
    rules.keep(out, settled)
    results = load_results(out)
    if all((out / course.RELEASE_DIR / r.assignment / r.notebook).is_file() for r in results):
        report(root, out, results, settled.policy, settled.policy_line, log=print)
    else:  # not a folder `class` graded into: its reports follow at the next `class`
        print(f"the folder keeps this late policy; grades.csv follows it at the next "
              f"`course-grade class ... --out {out}`")


def course_cell_timeout(root: Path) -> float:
    """The seconds a cell gets without --cell-timeout: the course's Execute.timeout."""
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.limits import DEFAULT_CELL_TIMEOUT

    try:
        loaded = PyFileConfigLoader(course.CONFIG_NAME, path=str(root)).load_config()
    except Exception:  # noqa: BLE001 - nbgrader itself says what is wrong with it
        return DEFAULT_CELL_TIMEOUT
    return float(loaded.get("Execute", {}).get("timeout") or DEFAULT_CELL_TIMEOUT)


def require_sandbox(no_sandbox: bool) -> bool:
    """True when grading runs sandboxed; CourseError when it cannot and was not told to go
    without (--no-sandbox)."""
    ok, why = sandbox.available()
    if ok:
        return not no_sandbox
    if no_sandbox:
        return False
    raise CourseError(f"Class grading runs each student's code in a sandbox, and {why}. "
                      "Install it, or pass --no-sandbox to grade without one (student code "
                      "then runs as you, with your files).")


class Progress:
    """A line per submission graded: its score, the problems so far, the time left."""

    def __init__(self, total: int, log, workers: int = 1, most: float | None = None):
        self.total, self.log, self.count, self.failures = total, log, 0, 0
        self.workers, self.most, self.took = max(1, workers), most, []
        self.started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def done(self, result: Result) -> None:
        self.count += 1
        self.failures += result.failed
        if result.seconds:
            self.took.append(result.seconds)
        reason = f"  ({result.fatal})" if result.fatal else ""
        self.log(f"[{self.count:>3}/{self.total}] {result.student} {result.assignment}: "
                 f"{result.score:g}/{result.max_score:g}{reason}  | problems so far "
                 f"{self.failures}, {self.left()}")

    def left(self) -> str:
        """The time left: from the submissions that ran (an unreadable file takes none),
        and for the last ones, which are grading already, what one takes."""
        remaining = self.total - self.count
        if not remaining:
            return "done"
        if not self.took:
            return "time left: known once a submission has run"
        typical = sorted(self.took)[len(self.took) // 2]
        if remaining <= self.workers:
            return (f"the last {remaining} grading now (one takes about {typical:.0f} s"
                    + (f", at most {self.most:g} s" if self.most else "") + ")")
        rate = max(self.elapsed() / len(self.took), typical / self.workers)
        return f"about {rate * remaining:.0f} s left"


def report(root: Path, out: Path, results: list[Result], policy=None,
           policy_line: str | None = None, log=None) -> str:
    """Write grades.csv, the feedback pages, the summary and the mistakes report with the
    late `policy` (default: the folder's rules, else the course's: autograder.late; said by
    `policy_line`); return the terminal summary. The totals that change are said first,
    through `log` before anything is written (else at the top of the summary)."""
    if policy is None and policy_line is None:
        kept = rules.settle(root, out, None, set())
        policy, policy_line = kept.policy, kept.policy_line if (out / rules.RULES).is_file() \
            else None
    names = sorted({r.assignment for r in results})
    releases = {a: read_notebook(out / course.RELEASE_DIR / a / notebook_names(root, a)[0])
                for a in names}
    late = reports.lateness(out) if (out / "gradebook.db").is_file() else {}
    changes = rules.grade_changes(out, {(r.student, r.assignment): reports.late_score(
        r, late.get((r.student, r.assignment)), policy)[0] for r in results})
    for line in changes if log else ():
        log(line)
    stats = reports.write_all(results, releases, out, policy)
    (out / "summary.json").write_text(json.dumps(stats, indent=1), encoding="utf-8")
    problems = [r for r in results if r.fatal]
    lines = [reports.summary_text(stats), "",
             f"{len(results)} submission(s); {len(problems)} could not be run"]
    for r in problems:
        lines.append(f"  {r.student} {r.assignment}: {r.fatal}")
    stopped = [r for r in results if reports.stopped_note(r)]
    if stopped:
        lines.append(f"{len(stopped)} stopped at a limit (their points so far kept):")
        lines += [f"  {r.student} {r.assignment}: {reports.stopped_note(r)}" for r in stopped]
    if policy_line:
        lines.append(policy_line)
    elif policy is not None:
        lines.append(f"late policy: {policy.describe()} (grades.csv: each assignment's "
                     "total after it, its raw total beside it; the gradebook stays raw)")
    marked = sorted(f"{r.student} {r.assignment}" for r in results
                    if reports.CANVAS_LATE in reports.problem_notes(r))
    if marked:
        lines.append(f"{len(marked)} submission(s) Canvas marked _LATE_, with no submission "
                     f"time here, so not penalised: {', '.join(marked[:8])}"
                     + (f" and {len(marked) - 8} more" if len(marked) > 8 else "")
                     + "; Canvas's own late policy (if you set one) applies when you import")
    lines += ["", *mistakes.write(results, releases, out), ""]
    lines += [f"grades:   {out / 'grades.csv'}", f"feedback: {out / 'feedback'}/<student>/"
              "<assignment>.html (the page each student gets)",
              f"summary:  {out / 'summary.png'}",
              f"gradebook (nbgrader formgrader works here): {out / 'gradebook.db'}"]
    skipped = out / SKIPPED
    if skipped.is_file() and skipped.stat().st_size:
        lines.append(f"skipped:  {skipped} (files of the input not graded, and why)")
    return "\n".join(([] if log else changes) + lines)
