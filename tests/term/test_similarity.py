"""`course-grade similar`: planted copies are listed, honest answers and the stub are not.

No kernel: a class folder is written as `course-grade class` writes it (the release under
notebooks/, each student's autograded notebook, a result per student), with answers taken
from the course's solution, its ok_ mutants, planted copies and honest variants below.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from dataclasses import asdict

import pytest

from autograder.cells import (
    grade_id,
    is_answer,
    read_notebook,
    strip_solution_markers,
    write_notebook,
)
from autograder.cli import grade_main
from autograder.grading.store import Result
from autograder.term import fingerprints, similarity
from conftest import MUTANTS, RELEASE, ROOT, SOLUTIONS

A, NB = "01-autodiff", "autodiff.ipynb"
SOLUTION = {grade_id(c): strip_solution_markers(c.source)
            for c in read_notebook(SOLUTIONS / A / NB).cells if is_answer(c)}
STUB = {grade_id(c): c.source for c in read_notebook(RELEASE / A / NB).cells if is_answer(c)}
OK = {p.parent.name: p.read_text() for p in (MUTANTS / A).glob("*/ok_*.py")}

# Two answers (the solution's, written out here so that the test does not move with it)
# and their copies: names changed, independent lines swapped, comments and formatting
# changed, the docstring replaced.
ORIGINAL_FIT = '''def fit_linear_regression(X, y, lr, num_steps):
    \"\"\"Least-squares linear regression by full-batch gradient descent.\"\"\"
    X = tf.convert_to_tensor(X, tf.float32)
    y = tf.convert_to_tensor(y, tf.float32)
    w = tf.Variable(tf.zeros([X.shape[1]]), name="w")
    b = tf.Variable(0.0, name="b")
    for _ in range(num_steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.linalg.matvec(X, w) + b - y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(lr * dw)
        b.assign_sub(lr * db)
    return w, b
'''
ORIGINAL_NUMERICAL = '''def numerical_gradient(f, x, eps=1e-3):
    \"\"\"Central-difference estimate of the gradient of a scalar function.\"\"\"
    x = tf.convert_to_tensor(x)
    flat = tf.reshape(x, [-1])
    size = int(flat.shape[0])
    estimates = []
    for i in range(size):
        step = eps * tf.one_hot(i, size, dtype=x.dtype)
        up = f(tf.reshape(flat + step, x.shape))
        down = f(tf.reshape(flat - step, x.shape))
        estimates.append(tf.cast((up - down) / (2 * eps), x.dtype))
    return tf.reshape(tf.stack(estimates), x.shape)
'''
COPY_FIT = '''def fit_linear_regression(X, y, lr, num_steps):
    # fit by gradient descent   </pre><script>alert(1)</script>
    targets = tf.convert_to_tensor(y, tf.float32)
    inputs = tf.convert_to_tensor(X, tf.float32)
    bias = tf.Variable(0.0, name="bias")
    weights = tf.Variable(tf.zeros([inputs.shape[1]]), name="weights")
    for step in range(num_steps):
        with tf.GradientTape() as g:
            mse = tf.reduce_mean((tf.linalg.matvec(inputs, weights) + bias - targets)**2)
        grad_w, grad_b = g.gradient(mse, [weights, bias])
        bias.assign_sub(lr * grad_b)
        weights.assign_sub(lr * grad_w)   # update the weights
    return weights, bias
'''
COPY_NUMERICAL = '''def numerical_gradient(f, x, eps=1e-3):
    """My own central differences."""
    x = tf.convert_to_tensor(x)
    v = tf.reshape(x, [-1])
    n = int(v.shape[0])
    result = []
    for j in range(n):
        h = eps * tf.one_hot(j, n, dtype=x.dtype)
        minus = f(tf.reshape(v - h,
                             x.shape))
        plus = f(tf.reshape(v + h, x.shape))
        result.append(tf.cast((plus - minus) / (2 * eps), x.dtype))
    return tf.reshape(tf.stack(result), x.shape)
'''

# Honest, correct answers written differently (checked against the solution once, by hand).
ROWS_LOOP = '''def rows_changed(before, after):
    old, new = np.asarray(before), np.asarray(after)
    changed = []
    for row in range(old.shape[0]):
        if not np.array_equal(old[row], new[row]):
            changed.append(row)
    return changed
'''
ROWS_AXES = '''def rows_changed(before, after):
    diff = np.not_equal(np.asarray(before), np.asarray(after))
    axes = tuple(range(1, diff.ndim))
    return np.nonzero(diff.any(axis=axes) if axes else diff)[0].tolist()
'''
FIT_BY_HAND = '''def fit_linear_regression(X, y, lr, num_steps):
    X = np.asarray(X, np.float32)
    y = np.asarray(y, np.float32)
    w = tf.Variable(np.zeros(X.shape[1], np.float32))
    b = tf.Variable(np.float32(0.0))
    for _ in range(num_steps):
        residual = X @ w.numpy() + b.numpy() - y
        w.assign(w - lr * 2.0 / len(y) * (X.T @ residual))
        b.assign(b - lr * 2.0 * residual.mean())
    return w, b
'''
FIT_PARAMS = '''def fit_linear_regression(X, y, lr, num_steps):
    features = tf.constant(X, dtype=tf.float32)
    labels = tf.constant(y, dtype=tf.float32)
    params = [tf.Variable(tf.zeros(features.shape[-1])), tf.Variable(0.0)]
    for step in range(num_steps):
        with tf.GradientTape() as tape:
            pred = tf.tensordot(features, params[0], axes=1) + params[1]
            loss = tf.reduce_mean(tf.square(pred - labels))
        for var, grad in zip(params, tape.gradient(loss, params)):
            var.assign_sub(lr * grad)
    return params[0], params[1]
'''

CLASS = {
    "ada": {**SOLUTION, "fit_linear_regression": ORIGINAL_FIT,
            "numerical_gradient": ORIGINAL_NUMERICAL},
    "ben": {"fit_linear_regression": COPY_FIT, "numerical_gradient": COPY_NUMERICAL},
    "cy": OK,
    "dee": {"rows_changed": ROWS_LOOP, "fit_linear_regression": FIT_BY_HAND},
    "eve": {"rows_changed": ROWS_AXES, "fit_linear_regression": FIT_PARAMS},
    "fay": {},  # the release as handed out
    "gus": {},
}


def write_class(out, answers: dict[str, dict[str, str]]) -> None:
    """`out` as `course-grade class` leaves it, for the notebooks of `answers`."""
    release = read_notebook(RELEASE / A / NB)
    write_notebook(release, out / "notebooks" / A / NB)
    for student, mine in answers.items():
        nb = copy.deepcopy(release)
        for cell in nb.cells:
            if is_answer(cell) and grade_id(cell) in mine:
                cell.source = mine[grade_id(cell)]
        write_notebook(nb, out / "autograded" / student / A / NB)
        result = Result(student, A, NB, f"{student}/{A}/{NB}", "digest", "digest")
        path = out / "results" / A / f"{student}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(result)))


def pairs(exercises) -> dict[str, set[tuple[str, str]]]:
    return {e.name: {(p.a, p.b) for p in e.pairs} for e in exercises}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    out = tmp_path_factory.mktemp("class")
    write_class(out, CLASS)
    return out, similarity.analyse(out)


def test_planted_copies_listed_and_nothing_else(graded):
    _, exercises = graded
    assert pairs(exercises) == {
        "sgd_step": set(), "gradients_or_zeros": set(), "rows_changed": set(),
        "numerical_gradient": {("ada", "ben")}, "fit_linear_regression": {("ada", "ben")}}
    for e in exercises:
        for p in e.pairs:
            assert p.score >= 0.85, (e.name, p)


def test_the_stub_is_never_compared(graded):
    _, exercises = graded
    for e in exercises:
        assert {"fay", "gus"} <= set(e.short), e.name
        assert not {"fay", "gus"} & set(e.compared)


def test_honest_variants_score_well_below_the_threshold():
    stub = similarity.Stub.of(STUB["fit_linear_regression"], 8)
    variants = [ORIGINAL_FIT, OK["fit_linear_regression"], FIT_BY_HAND,
                FIT_PARAMS]
    answers = [similarity.answer(str(i), s, stub, 8) for i, s in enumerate(variants)]
    exercise = similarity.compare(A, "fit", answers, [], similarity.Settings(threshold=0.45))
    assert exercise.pairs == []


def test_renamed_reordered_recommented_code_normalises_alike():
    one = '"""Doc."""\na = f(x)\nb = tf.gather(y, a)  # one\nout = a.assign(b, axis=2)\n'
    two = "# other\nq = tf.gather(y,\n   p)\np = f(x)\n\n\nresult = p.assign(q, axis=2)"
    first, second = (sorted(s.tokens for s in fingerprints.statements(x)) for x in (one, two))
    assert first == second
    assert ("_0", "=", "f", "(", "x", ")") in first  # f, x: not bound here, so kept
    assert ("_0", "=", "tf", ".", "gather", "(", "y", ",", "_1", ")") in first
    assert ("_0", "=", "_1", ".", "assign", "(", "_2", ",", "axis", "=", "2", ")") in first
    assert not any("S" in tokens for tokens in first)  # the docstring is gone


def test_independent_lines_in_another_order_still_match():
    lines = [f"    {name} = np.{call}(values)" for name, call in (
        ("total", "sum"), ("biggest", "max"), ("smallest", "min"), ("middle", "median"),
        ("spread", "std"), ("heaviest", "argmax"))]
    end = "    return total, biggest, smallest, middle, spread, heaviest"
    head = "def summary(values):"
    stub = similarity.Stub.of(head + "\n    raise NotImplementedError()", 8)
    other = ["    return tuple(stat(values) for stat in (np.sum, np.max, np.min, np.median,"
             " np.std, np.argmax))"]
    answers = [similarity.answer(n, "\n".join([head, *body]), stub, 8)
               for n, body in (("one", [*lines, end]), ("two", [*lines[::-1], end]),
                               ("three", other))]
    exercise = similarity.compare(A, "summary", answers, [], similarity.Settings())
    assert [(p.a, p.b, p.score) for p in exercise.pairs] == [("one", "two", 1.0)]


def test_code_that_does_not_parse_still_matches_its_copy():
    broken = COPY_NUMERICAL.replace("result.append(", "result.append((")  # a ( too many
    renamed = broken.replace("result", "estimates").replace("minus", "lower")
    stub = similarity.Stub.of(STUB["numerical_gradient"], 8)
    answers = [similarity.answer(n, s, stub, 8) for n, s in
               (("broken", broken), ("renamed", renamed), ("loop", OK["numerical_gradient"]))]
    exercise = similarity.compare(A, "numerical_gradient", answers, [], similarity.Settings())
    assert [(p.a, p.b) for p in exercise.pairs] == [("broken", "renamed")]


def test_code_the_release_gives_counts_for_no_pair():
    given = ("def unit_rows(table, ids):\n    table = np.asarray(table, np.float32)\n"
             "    ids = np.unique(np.asarray(ids, np.int64))\n    rows = table[ids]\n"
             "    # YOUR CODE HERE\n    raise NotImplementedError()")
    mine = ("norms = np.linalg.norm(rows, axis=1, keepdims=True)\n"
            "    return rows / np.maximum(norms, 1e-12)",
            "out = []\n    for row in rows:\n        size = float(np.sqrt((row ** 2).sum()))\n"
            "        out.append(row / max(size, 1e-12))\n    return np.stack(out)")
    stub = similarity.Stub.of(given, 8)
    answers = [similarity.answer(str(i), given.replace("raise NotImplementedError()", m),
                                 stub, 8) for i, m in enumerate(mine)]
    exercise = similarity.compare(A, "unit_rows", answers, [], similarity.Settings(0.2))
    assert exercise.compared == ["0", "1"] and exercise.pairs == []


def test_code_common_to_many_students_counts_for_no_pair():
    stub = similarity.Stub.of(STUB["fit_linear_regression"], 8)
    same = [similarity.answer(f"s{i}", ORIGINAL_FIT, stub, 8)
            for i in range(6)]
    rare = [similarity.answer(n, FIT_PARAMS.replace("params", name), stub, 8)
            for n, name in (("x", "theta"), ("y", "coefficients"))]
    exercise = similarity.compare(A, "fit", same + rare, [], similarity.Settings())
    assert [(p.a, p.b) for p in exercise.pairs] == [("x", "y")]
    assert exercise.common > 0


def test_cli_writes_the_page_and_json(graded, capsys):
    out, _ = graded
    assert grade_main(["similar", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "01-autodiff/fit_linear_regression" in printed and "ada and ben" in printed
    page = (out / "similarity.html").read_text()
    assert similarity.NOTE in page and "changes no grade" in page
    assert "<script>" not in page and "&lt;/pre&gt;&lt;script&gt;" in page
    assert page.count('class="line hit"') > 20  # matching lines marked
    data = json.loads((out / "similarity.json").read_text())
    listed = [(e["name"], p["a"], p["b"]) for e in data["exercises"] for p in e["pairs"]]
    assert sorted(listed) == [("fit_linear_regression", "ada", "ben"),
                              ("numerical_gradient", "ada", "ben")]


@pytest.mark.parametrize("make, said", [
    (lambda p: p / "missing", "is not a folder"),
    (lambda p: p, "is not a graded class folder"),
    (lambda p: (p / "results" / A).mkdir(parents=True) or
     (p / "results" / A / "x.json").write_text("{") and p, "is not a result"),
])
def test_bad_input_one_sentence_nothing_written(tmp_path, capsys, make, said):
    out = make(tmp_path)
    assert grade_main(["similar", str(out)]) == 2
    error = capsys.readouterr().err
    assert said in error and error.count("\n") == 1
    assert not list(tmp_path.rglob("similarity.*"))


def test_bad_threshold_and_missing_release(tmp_path, capsys):
    write_class(tmp_path, {"ada": SOLUTION})
    assert grade_main(["similar", str(tmp_path), "--threshold", "0"]) == 2
    assert "--threshold" in capsys.readouterr().err
    (tmp_path / "notebooks" / A / NB).unlink()
    assert grade_main(["similar", str(tmp_path)]) == 2
    assert "lacks the release notebook" in capsys.readouterr().err
    assert not list(tmp_path.rglob("similarity.*"))


@pytest.mark.slow
def test_benchmark_finds_every_planted_copy_of_an_honest_answer(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("similarity_benchmark",
                                                  ROOT / "benchmarks" / "bench_similarity.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--out", str(tmp_path / "s.json")]) == 0
    assert "false pairs listed" in capsys.readouterr().out
    row = next(r for r in json.loads((tmp_path / "s.json").read_text())["thresholds"]
               if r["threshold"] == similarity.Settings().threshold)
    assert row["false_pairs"] == []
    for kind in ("copy of an honest variant", "copy in a chain of copies"):
        found, planted = row["listed"][kind]
        assert found == planted > 0, kind
    assert row["listed"][bench.SOLUTION][0] == row["listed"][bench.STUB][0] == 0
