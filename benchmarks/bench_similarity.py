"""Does `course-grade similar` find planted copies, and list nothing else?

Builds the demo class of an assignment (autograder.authoring.demo: the submissions `course-grade
demo` grades, many of them with the solution's answers), adds students with honest
variants (the ok_ mutants of tests/mutants/ and the correct answers written differently
below) and planted copies of some of them and of the demo's typical mistakes (names
changed, independent lines swapped, comments and formatting changed), and writes a class
folder as `course-grade class` leaves it, without grading (the report reads only the
answers). Then runs the report and prints, for a few thresholds, how many planted pairs
were listed (recall) and how many other pairs were (false pairs).

    .venv/bin/python benchmarks/bench_similarity.py [--assignment 01-autodiff] [--out FILE]

Writes JSON (benchmarks/results/similarity.json by default) and the report's page
(similarity.html in the temporary class folder, kept with --keep).
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from itertools import combinations
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder import course  # noqa: E402
from autograder.authoring import demo  # noqa: E402
from autograder.cells import grade_id, is_answer, read_notebook  # noqa: E402
from autograder.errors import CourseError  # noqa: E402
from autograder.grading.store import Result  # noqa: E402
from autograder.term import similarity  # noqa: E402

THRESHOLDS = (0.4, 0.5, 0.6, 0.7, 0.8)
SOLUTION = "both hold the solution's answer"  # common to many: by design never listed
STUB = "both hold the release's stub"  # by design never listed
NEVER = (SOLUTION, STUB)

# Correct answers written differently from the solution (checked against it once, by hand).
HONEST = {
    "sgd_step": '''def sgd_step(variables, grads, lr):
    for i in range(len(variables)):
        if grads[i] is not None:
            variables[i].assign(variables[i] - lr * grads[i])
    return variables
''',
    "gradients_or_zeros": '''def gradients_or_zeros(loss_fn, variables):
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(variables)
        value = loss_fn()
    found = tape.gradient(value, variables)
    result = []
    for variable, gradient in zip(variables, found):
        if gradient is None:
            gradient = tf.zeros(variable.shape, variable.dtype)
        result.append(gradient)
    return result
''',
    "numerical_gradient": '''def numerical_gradient(f, x, eps=1e-3):
    x = tf.convert_to_tensor(x)
    n = int(tf.size(x))
    basis = tf.reshape(tf.eye(n, dtype=x.dtype), [n] + x.shape.as_list())
    slopes = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in tf.unstack(basis)]
    return tf.reshape(tf.cast(tf.stack(slopes), x.dtype), x.shape)
''',
    "rows_changed": '''def rows_changed(before, after):
    a, b = np.asarray(before), np.asarray(after)
    return sorted({int(index[0]) for index in np.argwhere(a != b)})
''',
}
NEW_NAMES = ["tmp", "res", "val", "acc", "arr", "cur", "item", "data", "buf", "tot", "k2"]


# --- planted copies ----------------------------------------------------------------------

class _Renamer(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Name(self, node):
        node.id = self.names.get(node.id, node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.names.get(node.arg, node.arg)
        return node


def _written(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)}


def _read(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _swap_independent(body: list) -> int:
    """Swaps adjacent assignments that neither read nor write what the other writes (a
    call on its own line may act on something: not moved)."""
    swaps, i = 0, 0
    while i + 1 < len(body):
        a, b = body[i], body[i + 1]
        simple = all(isinstance(s, ast.Assign) for s in (a, b))
        if simple and not (_written(a) & _read(b)) and not (_written(b) & _read(a)):
            body[i], body[i + 1] = b, a
            swaps, i = swaps + 1, i + 2
        else:
            i += 1
    for node in body:
        for name in ("body", "orelse"):
            swaps += _swap_independent(getattr(node, name, None) or [])
    return swaps


def plant_copy(source: str, seed: int) -> str:
    """`source` as a student hiding a copy writes it: its variables and parameters renamed
    (the function keeps its name: the tests call it), independent lines swapped, the
    docstring and comments dropped, other comments and blank lines added."""
    tree = ast.parse(source)
    function = next(n.name for n in tree.body if isinstance(n, ast.FunctionDef))
    bound = sorted(({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                     and isinstance(n.ctx, ast.Store)} |
                    {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}) - {function})
    names = {old: f"{NEW_NAMES[(i + seed) % len(NEW_NAMES)]}{i}" for i, old in enumerate(bound)}
    tree = _Renamer(names).visit(tree)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            body.pop(0)  # the docstring
    _swap_independent(tree.body)
    lines = []
    for n, line in enumerate(ast.unparse(tree).splitlines()):
        if n % 3 == 1:
            lines.append(" " * (len(line) - len(line.lstrip())) + f"# step {n}")
        lines.append(line.replace(", ", ",") if n % 2 else line)
        if line.rstrip().endswith(":") is False and n % 4 == 2:
            lines.append("")
    return "\n".join(lines) + "\n"


# --- the class ---------------------------------------------------------------------------

def build(root: Path, folder: Path, assignment: str) -> tuple[dict, int]:
    """The demo's submissions plus honest variants and planted copies, under `folder`;
    returns what each planted copy copied, {(copier, exercise): (source, kind)}, and how
    many students were added."""
    c = demo.Course(root, assignment)
    demo.build_class(root, folder, assignment)
    answers_of: dict[str, dict[str, str]] = {}  # the students added here
    for exercise in c.exercises:
        for n, path in enumerate(sorted((c.mutants / exercise).glob("ok_*.py"))):
            answers_of[f"honest-{exercise}-ok{n}"] = {exercise: path.read_text()}
        if exercise in HONEST:
            answers_of[f"honest-{exercise}-own"] = {exercise: HONEST[exercise]}
        # the other typical mistakes, each its own student (the demo has the first)
        for path in sorted((c.mutants / exercise).glob("wrong_*.py"))[1:]:
            answers_of[f"mistake-{exercise}-{path.stem[6:]}"] = {exercise: path.read_text()}
    copied: dict[tuple[str, str], tuple[str, str]] = {}
    sources = [(s, ex, src) for s, mine in sorted(answers_of.items()) for ex, src in mine.items()
               if s.startswith("honest-")]
    for seed, (student, exercise, source) in enumerate(sources):
        copier = f"copy-{seed}-of-{student}"
        answers_of[copier] = {exercise: plant_copy(source, seed)}
        copied[(copier, exercise)] = (source, "copy of an honest variant")
    _, first_exercise, first_source = sources[0]  # a chain: two more copy the first one
    for n in (1, 2):
        answers_of[f"chain-{n}"] = {first_exercise: plant_copy(first_source, 100 + n)}
        copied[(f"chain-{n}", first_exercise)] = (first_source, "copy in a chain of copies")
    # copies of the demo's typical mistakes (wrong_ mutants: the solution, a line changed)
    for exercise in list(c.exercises)[:4]:
        source = (c.mutants / exercise / c.first_wrong_mutant(exercise)).read_text()
        copier = f"copy-of-mistake-{exercise}"
        answers_of[copier] = {exercise: plant_copy(source, len(copied))}
        copied[(copier, exercise)] = (source, "copy of a typical mistake")
    for student, mine in answers_of.items():  # the solution's answers to the other exercises
        nb = c.filled({**c.answers, **mine})
        path = folder / student / assignment / c.name
        path.parent.mkdir(parents=True)
        path.write_text(demo.nbformat.writes(nb), encoding="utf-8")
    return copied, len(answers_of)


def true_pairs(root: Path, folder: Path, assignment: str, copied: dict) -> dict:
    """{(exercise, a, b): kind} for the students whose answers are one text (a planted copy
    counts as the text it copied); pairs holding the solution's text are of kind SOLUTION."""
    solution = demo.Course(root, assignment).answers
    origins: dict[str, dict[str, str]] = {}  # exercise -> student -> text
    for path in sorted(folder.glob(f"*/{assignment}/*.ipynb")):
        try:
            nb = read_notebook(path)
        except CourseError:
            continue
        for exercise in solution:
            text = similarity.answer_source(nb, exercise)
            if text is not None:
                text = copied.get((path.parts[-3], exercise), (text,))[0]
                origins.setdefault(exercise, {})[path.parts[-3]] = text
    stubs = {grade_id(c): c.source for c in demo.Course(root, assignment).release.cells
             if is_answer(c)}
    pairs = {}
    for exercise, texts in origins.items():
        for a, b in combinations(sorted(texts), 2):
            one, two = sorted((texts[a], texts[b]), key=len)
            if one not in two:  # the demo appends code to an answer (tampers)
                continue
            kinds = sorted(copied[(s, exercise)][1] for s in (a, b) if (s, exercise) in copied)
            pairs[(exercise, a, b)] = STUB if one == stubs[exercise] else \
                SOLUTION if one == solution[exercise] else \
                (kinds[0] if kinds else "the demo's same answer (+ code added)")
    return pairs


def class_folder(root: Path, submitted: Path, out: Path, assignment: str) -> int:
    """`out` as `course-grade class` leaves it (release, results, autograded notebooks),
    without running anything: the answer cells are the ones submitted."""
    name = course.solution_notebooks(root, assignment)[0].name
    release = out / course.RELEASE_DIR / assignment / name
    release.parent.mkdir(parents=True)
    shutil.copy(root / course.RELEASE_DIR / assignment / name, release)
    count = 0
    for path in sorted(submitted.glob(f"*/{assignment}/{name}")):
        student = path.parts[-3]
        result = Result(student, assignment, name, str(path.relative_to(submitted)), "", "")
        target = out / "results" / assignment / f"{student}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(asdict(result)))
        try:  # what the grader could not read, it did not autograde
            nb = read_notebook(path)
        except Exception:  # noqa: BLE001 - any unreadable file: no autograded notebook
            continue
        if any(is_answer(c) and grade_id(c) for c in nb.cells):
            autograded = out / "autograded" / student / assignment / name
            autograded.parent.mkdir(parents=True)
            shutil.copy(path, autograded)
        count += 1
    return count


# --- the run -----------------------------------------------------------------------------

def measure(exercises, truth: dict, threshold: float) -> dict:
    """At `threshold`: per kind of true pair, [listed, all]; and the other pairs listed."""
    listed = {(e.name, *sorted((p.a, p.b))): p.score for e in exercises for p in e.pairs
              if p.score >= threshold}
    return {"threshold": threshold,
            "listed": {kind: [sum(k == kind and key in listed for key, k in truth.items()),
                              sum(k == kind for k in truth.values())]
                       for kind in sorted(set(truth.values()))},
            "false_pairs": sorted([*key, score] for key, score in listed.items()
                                  if key not in truth)}


def print_table(rows: list[dict], default: float) -> None:
    heads = [f"{r['threshold']:.2f}" + ("*" if r["threshold"] == default else "") for r in rows]
    print(f"{'pairs listed / pairs of the kind':42s}" + "".join(f"{h:>9s}" for h in heads))
    kinds = [k for k in rows[0]["listed"] if k not in NEVER]
    for kind in kinds + [k for k in NEVER if k in rows[0]["listed"]]:
        cells = ["{}/{}".format(*r["listed"][kind]) for r in rows]
        print(f"{kind:42s}" + "".join(f"{cell:>9s}" for cell in cells))
    print(f"{'recall (all but the last two kinds)':42s}" + "".join(
        f"{sum(r['listed'][k][0] for k in kinds) / sum(r['listed'][k][1] for k in kinds):>9.0%}"
        for r in rows))
    print(f"{'false pairs listed (answers that differ)':42s}" + "".join(
        f"{len(r['false_pairs']):>9d}" for r in rows))
    print("(* the default threshold; the release's stub and the solution's answer, common to "
          "many, are by design never listed)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", default="01-autodiff")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" /
                                             "similarity.json"))
    parser.add_argument("--keep", action="store_true", help="keep the class folder")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="similarity-bench-"))
    default = similarity.Settings()
    try:
        started = time.perf_counter()
        copied, added = build(ROOT, tmp / "submitted", args.assignment)
        students = class_folder(ROOT, tmp / "submitted", tmp / "class", args.assignment)
        truth = true_pairs(ROOT, tmp / "submitted", args.assignment, copied)
        built = time.perf_counter() - started
        started = time.perf_counter()
        printed = similarity.report(tmp / "class", None, default)  # as an instructor runs it
        seconds = time.perf_counter() - started
        # every pair's score (a threshold near 0), to measure other thresholds as well
        everything = similarity.analyse(tmp / "class", None, similarity.Settings(threshold=1e-9))
        rows = [measure(everything, truth, t) for t in THRESHOLDS]
    finally:
        if args.keep:
            print(f"class folder kept: {tmp / 'class'} (similarity.html in it)")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(printed.split("\n\n")[0])
    print(f"\n{students} students ({added} added: honest variants, other typical mistakes, "
          f"{len(copied)} planted copies); the report took {seconds:.2f} s (building the "
          f"class {built:.1f} s)\n")
    print_table(rows, default.threshold)
    scores = {(e.name, *sorted((p.a, p.b))): p.score for e in everything for p in e.pairs}
    at_default = next(r for r in rows if r["threshold"] == default.threshold)
    for exercise, a, b, score in at_default["false_pairs"]:
        print(f"false pair at {default.threshold:g}: {exercise}: {a} and {b} ({score:.2f})")
    short = {(e.name, student) for e in everything for student in e.short}
    for (exercise, a, b), kind in sorted(truth.items()):
        score = scores.get((exercise, a, b), 0)
        if kind not in NEVER and score < default.threshold:
            why = "too short to compare" if {(exercise, a), (exercise, b)} & short else \
                f"score {score:.2f}"
            print(f"missed at {default.threshold:g}: {exercise}: {a} and {b}, {kind} ({why})")
    report = {"benchmark": "similarity", "assignment": args.assignment,
              "settings": asdict(default), "students": students, "added": added,
              "true_pairs": [[*key, kind] for key, kind in sorted(truth.items())],
              "report_seconds": round(seconds, 3), "thresholds": rows}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
