"""`course`: the course's command line (also `python -m autograder`).

    course doctor                 is everything installed and readable?
    course release [--check]      regenerate notebooks/ from solutions/ (or compare only)
    course points                 points per notebook and exercise
    course validate NB [--invert] nbgrader's Validator, with an exit code that means it
    course mutants ASSIGNMENT     grade the mutant submissions of one assignment
    course hub [--config FILE]    a JupyterHub for a class on this machine (as root)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from autograder import course
from autograder.errors import CourseError
from autograder.grading import rules
from autograder.limits import Limits, add_limit_options


def _problems_of_environment() -> list[str]:
    found = []
    if sys.version_info[:2] != (3, 11):
        found.append(f"The course was checked on Python 3.11; this is "
                     f"{sys.version_info.major}.{sys.version_info.minor}.")
    try:
        from embeddings_course import data
    except ImportError as error:  # EnvironmentProblem: a wrong or missing TensorFlow
        return [*found, str(error)]
    for locate in (data.wnut16_train_path, data.glove_dir):
        try:
            locate()
        except data.DataProblem as error:
            found.append(str(error))
    return found


def cmd_doctor(args) -> int:
    root = course.find_root()
    found = _problems_of_environment()
    from autograder.cells import read_notebook

    for folder in (course.SOURCE_DIR, course.RELEASE_DIR):
        for path in sorted((root / folder).rglob("*.ipynb")):
            if ".ipynb_checkpoints" in path.parts:
                continue
            try:
                read_notebook(path)
            except CourseError as error:
                found.append(str(error))
    from autograder.engine.trusted import sandbox

    ok, why = sandbox.available()
    if not ok:  # grading still works, unsandboxed: a note, not a problem
        print(f"note: grading runs without its sandbox here, since {why}.")
    for problem in found:
        print(f"problem: {problem}")
    if not found:
        print(f"All set: the course at {root} has what it needs.")
    return 1 if found else 0


def cmd_release(args) -> int:
    from autograder.authoring import release

    root = course.find_root()
    if not args.check:
        release.update_release(root)
        print(f"{course.RELEASE_DIR}/ regenerated from {course.SOURCE_DIR}/.")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        release.generate(root, Path(tmp), log=lambda *_: None)
        diffs = release.differences(Path(tmp), root / course.RELEASE_DIR)
    for line in diffs:
        print(f"differs: {course.RELEASE_DIR}/{line}")
    if diffs:
        print("Run `make release` to regenerate the student notebooks.")
        return 1
    print(f"{course.RELEASE_DIR}/ is up to date with {course.SOURCE_DIR}/.")
    return 0


def points_table(root: Path) -> list[tuple[str, str, float]]:
    """(assignment, exercise or 'total', points) rows for every solution notebook."""
    from autograder.cells import exercises, notebook_points, read_notebook

    rows = []
    for name in course.assignments(root):
        for path in course.solution_notebooks(root, name):
            nb = read_notebook(path)
            rows.extend((name, ex.name, ex.points) for ex in exercises(nb).values())
            rows.append((name, "total", notebook_points(nb)))
    return rows


def cmd_points(args) -> int:
    for name, exercise, points in points_table(course.find_root()):
        print(f"{name:<26} {exercise:<28} {points:>5g}")
    return 0


def cmd_validate(args) -> int:
    from autograder.authoring import validation

    root = course.find_root()
    results = validation.validate(Path(args.notebook).resolve(), root, invert=args.invert)
    if results:
        print(validation.summary(results))
        return 1
    print("passed" + (" (every test fails on the stub, as it should)" if args.invert else ""))
    return 0


def cmd_mutants(args) -> int:
    from autograder.authoring import mutants

    root = course.find_root()
    verdicts = mutants.run(root, args.assignment, root / "tests" / "mutants" / args.assignment,
                           workers=args.workers)
    bad = [v for v in verdicts if not v.ok]
    for verdict in verdicts:
        own = verdict.mutant.exercise == verdict.exercise if verdict.mutant else \
            verdict.student in (mutants.BLANK, mutants.PERFECT)
        if own or not verdict.ok:
            print(("ok   " if verdict.ok else "BAD  ") + verdict.describe())
    return 1 if bad else 0


def cmd_hub(args) -> int:
    from autograder.hub import server

    root = course.find_root()
    return server.serve(Path(args.config) if args.config else root / "hub.toml", root,
                     log=lambda line: print(line, flush=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="course", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="check the installation and the notebooks")
    p = sub.add_parser("release", help="regenerate notebooks/ from solutions/")
    p.add_argument("--check", action="store_true", help="only compare with a fresh release")
    sub.add_parser("points", help="points per notebook and exercise")
    p = sub.add_parser("validate", help="validate a notebook with nbgrader's Validator")
    p.add_argument("notebook")
    p.add_argument("--invert", action="store_true", help="every test must fail (blank stubs)")
    p = sub.add_parser("mutants", help="grade an assignment's mutant submissions")
    p.add_argument("assignment")
    p.add_argument("--workers", type=int, default=None)
    p = sub.add_parser("hub", help="a JupyterHub for a class on this machine (run as root)")
    p.add_argument("--config", help="the hub's accounts, ports and folders "
                                    "(default: hub.toml in the course)")
    args = parser.parse_args(argv)
    handler = {"doctor": cmd_doctor, "release": cmd_release, "points": cmd_points,
               "validate": cmd_validate, "mutants": cmd_mutants, "hub": cmd_hub}[args.command]
    try:
        return handler(args)
    except CourseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except ImportError as error:  # a wrong TensorFlow, said in one sentence by the course
        print(f"error: {error}", file=sys.stderr)
        return 2


def _add_grading_options(p, out: str = "grading", cell_timeout: int | None = None,
                         memory_mb: int = 4096) -> None:
    p.add_argument("--out", default=out, help=f"the class folder (default: {out}/)")
    p.add_argument("--workers", type=int, default=None,
                   help="submissions graded at once (default: the number of cores)")
    add_limit_options(p, cell_timeout, memory_mb)
    p.add_argument("--no-sandbox", action="store_true",
                   help="grade without the sandbox where it cannot be had (student code then "
                        "runs as you, with your files: only for code you trust)")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="grade on a Dask cluster: its scheduler's address (tls://HOST:8786);"
                        " its workers grade, this machine keeps the gradebook")
    p.add_argument("--cluster-certs", metavar="DIR", default=None, help="the cluster's "
                   "certificates (default: ~/.config/course-grade/cluster-certs)")
    p.add_argument("--insecure-cluster", action="store_true",
                   help="grade on a scheduler that admits anyone (no certificates asked)")
    p.add_argument("--force", action="store_true",
                   help="regrade submissions that have not changed since the last run")
    p.add_argument("--keep-logs", action="store_true",
                   help="keep the workers' folders with nbgrader's and the kernels' logs")


def _settings(args):
    from autograder.grading.classgrade import Settings

    return Settings(workers=args.workers, limits=Limits.from_args(args), force=args.force,
        keep_logs=args.keep_logs, no_sandbox=args.no_sandbox, scheduler=args.scheduler,
        cluster_certs=args.cluster_certs, insecure_cluster=args.insecure_cluster)


def cmd_grade_class(args) -> int:
    from autograder.grading import classgrade

    print(classgrade.run(course.find_root(), args, _settings(args),
                         log=lambda line: print(line, flush=True)))
    return 0


def cmd_grade_demo(args) -> int:
    from autograder.authoring import demo
    from autograder.grading import classgrade

    root = course.find_root()
    out = Path(args.out)
    folder = out / "submitted-demo"
    shutil.rmtree(folder, ignore_errors=True)
    expected = demo.build_class(root, folder, args.assignment)
    print(f"built a class of {len(expected)} submissions of {args.assignment} in {folder}")
    args.force = True
    results = classgrade.grade_class(root, folder, out, [args.assignment], _settings(args))
    print(classgrade.report(root, out, results))
    print(demo.table(expected, results))
    by_key = {(r.student, r.assignment): r for r in results}
    wrong = [e.student for e in expected
             if (e.student, e.assignment) not in by_key or demo.check(e, by_key[(e.student,
                                                                                  e.assignment)])]
    if wrong:
        print(f"{len(wrong)} submission(s) not graded as expected: {', '.join(wrong)}")
        return 1
    print(f"every one of the {len(expected)} submissions was graded as expected")
    return 0


def cmd_grade_export(args) -> int:
    from autograder.grading import classgrade
    from autograder.term import canvas, lms

    root, out = course.find_root(), Path(args.out)
    settled = rules.settle(root, out, args, args.given)
    print("\n".join([*settled.lines, settled.policy_line, *lms.export(
        root, out, Path(args.roster), args.assignment or None, canvas.parse_columns(args.column),
        Path(args.output) if args.output else None, settled.policy)]))
    classgrade.adopt(root, out, settled)  # a new policy: grades.csv and the pages follow
    return 0


def cmd_grade_mistakes(args) -> int:
    from autograder.grading import mistakes

    print("\n".join(mistakes.write_folder(Path(args.out))))
    return 0


def cmd_grade_similar(args) -> int:
    from autograder.term import similarity

    settings = similarity.Settings() if args.threshold is None else \
        similarity.Settings(threshold=args.threshold)
    print(similarity.report(Path(args.out), args.assignment or None, settings))
    return 0


def cmd_cluster_certs(args) -> int:
    from autograder.scale import certs

    print(certs.make(Path(args.out) if args.out else certs.default_folder()))
    return 0


def grade_main(argv: list[str] | None = None) -> int:
    """`course-grade self NOTEBOOK`, `course-grade class INPUT`, `course-grade demo`,
    `course-grade export --roster CANVAS.csv`, `course-grade similar OUT`, `cluster-certs`."""
    parser = argparse.ArgumentParser(
        prog="course-grade",
        description="Grade notebooks of the course with nbgrader, hidden tests included.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("self", help="grade your own notebook; it is not changed")
    p.add_argument("notebook", help="your notebook, e.g. notebooks/01-autodiff/autodiff.ipynb")
    add_limit_options(p)
    p = sub.add_parser("class", help="grade a class: a folder of submissions or an LMS zip")
    p.add_argument("input", help="submitted/{student}/{assignment}/*.ipynb, or a zip")
    p.add_argument("-a", "--assignment", action="append",
                   help="assignment to grade (repeatable; default: all found)")
    rules.add_options(p)
    _add_grading_options(p)
    p = sub.add_parser("demo", help="build a synthetic class from the course and grade it")
    p.add_argument("--assignment", default="01-autodiff")
    # the demo's infinite loop and memory hog should not take the default 120 s and 4 GB
    _add_grading_options(p, out="grading-demo", cell_timeout=20, memory_mb=2048)
    p = sub.add_parser("export", help="grades to Canvas: the CSV its gradebook import takes")
    p.add_argument("--roster", required=True,
                   help="Canvas's gradebook export (Grades > Export > Export Entire Gradebook)")
    p.add_argument("--out", default="grading", help="the class folder (default: grading/)")
    p.add_argument("-a", "--assignment", action="append",
                   help="assignment to export (repeatable; default: every one graded)")
    p.add_argument("--column", action="append", metavar="ASSIGNMENT=COLUMN",
                   help="the Canvas column an assignment fills, e.g. "
                        "01-autodiff='Autodiff (12345)' (default: the roster's column titled "
                        "as the assignment, else a new one)")
    p.add_argument("--output", help="the Canvas CSV (default: OUT/canvas-grades.csv)")
    rules.add_options(p, due=False)
    p = sub.add_parser("mistakes", help="what the class got wrong: OUT/mistakes.html")
    p.add_argument("out", help="the class folder `class` graded into (its --out)")
    p = sub.add_parser("similar", help="answers that look alike across a graded class "
                                       "(a list to read; no grade changes)")
    p.add_argument("out", help="the class folder `class` graded into (its --out)")
    p.add_argument("-a", "--assignment", action="append",
                   help="assignment to compare (repeatable; default: every one graded)")
    p.add_argument("--threshold", type=float, default=None,
                   help="list the pairs scoring at least this, 0 to 1 (default 0.6)")
    p = sub.add_parser("cluster-certs", help="a CA and certificates for a grading cluster")
    p.add_argument("--out", help="their folder (default: ~/.config/course-grade/cluster-certs)")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    try:
        if args.command in ("class", "export"):  # the options given (grading.rules)
            rest = argv[argv.index(args.command) + 1:]
            args.given = rules.given(sub.choices[args.command], rest)
        handler = {"similar": cmd_grade_similar, "class": cmd_grade_class, "demo": cmd_grade_demo,
                   "export": cmd_grade_export, "cluster-certs": cmd_cluster_certs,
                   "mistakes": cmd_grade_mistakes}
        if args.command in handler:
            return handler[args.command](args)
        from autograder.grading import selfgrade

        path = Path(args.notebook)
        print(f"Grading {path} with every test (about as long as running it) ...", flush=True)
        from autograder.engine.trusted.submission import Settings

        limits = Limits.from_args(args).check()
        print(selfgrade.report(path, course.find_root(), Settings(limits)))
    except CourseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
