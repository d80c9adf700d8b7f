"""No twin of an exercise in the library a graded kernel gets (issue 37): the copy
autograder.engine.trusted.withheld makes for each notebook holds only the modules its own
cells need, no text of a version of its exercises, and no public function of it computes
an exercise's answer. The copies are made here, in this process (no grading); the search
runs in one subprocess per notebook, with the copy where the kernel would import it."""

import json
import subprocess
import sys

import pytest

from autograder.cells import exercises, read_notebook, strip_solution_markers
from autograder.engine.trusted import withheld
from autograder.engine.trusted.executor import facts_of
from conftest import solution_paths
from embeddings_course import mirrors


def course(*modules: str) -> set[str]:
    return {f"embeddings_course/{m}" for m in modules}


# each copy holds both packages: the course's helpers and the library (its __init__
# imports all three of its modules)
BASE = course("__init__", "_env", "checks", "observe", "runtime", "messages", "graphwrites") | {
    f"sparse_embeddings/{m}" for m in ("__init__", "layers", "optimizers", "sparse")}
EXPECTED = {  # the allow-list of each notebook's copy
    "01": BASE | course("plots"),
    "02": BASE | course("plots"),
    "03": BASE | course("plots", "timing"),
    "04": BASE | course("plots", "tf1"),
    "05": BASE | course("data", "ner", "spans"),
    "06": BASE | course("data", "ner", "spans", "plots", "tagging", "progress"),
    "07": BASE | course("plots", "cluster"),
}


def _notebook(prefix: str):
    return read_notebook(next(p for p in solution_paths() if p.parent.name[:2] == prefix))


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    into = tmp_path_factory.mktemp("copies")
    made = {}
    for path in solution_paths():
        _, graded, kept = facts_of(read_notebook(path))
        made[path.parent.name[:2]] = (withheld.library_copy(
            withheld.withheld_names(graded, kept), into, path.parent.name), graded, kept)
    return made


def test_each_copy_holds_only_what_its_notebooks_own_cells_need(copies):
    for prefix, (library, _, _) in copies.items():
        found = {p.relative_to(library).with_suffix("").as_posix()
                 for p in library.rglob("*") if p.is_file()}
        assert found == EXPECTED[prefix], (prefix, sorted(found))


def test_no_copy_holds_the_text_of_a_version_of_its_exercises(copies):
    modes = dict(mirrors.IN_A_GRADED_COPY)
    for prefix, (library, graded, kept) in copies.items():
        text = {p.relative_to(library).with_suffix("").as_posix(): p.read_text()
                for p in library.rglob("*.py")}
        assert not [p for p in library.rglob("*") if p.is_file() and p.suffix != ".py"], \
            prefix  # no .pyc
        assert not [name for name, body in text.items() if "_course_impl_" in body], prefix
        for exercise in graded:
            for spec in mirrors.MIRRORS.get(exercise, ()):
                module, _, name = spec.partition(":")
                body = text.get(module.replace(".", "/"), "")
                defined = f"def {name}(" in body or f"class {name}(" in body
                # only a version built on the student's answer keeps its text
                assert defined == (modes.get(spec) == mirrors.BUILT_ON and bool(body)), (
                    prefix, spec)
                # a name the notebook's own cells use is never a stub
                if name in kept:
                    assert modes.get(spec) in (mirrors.ANSWER, mirrors.BUILT_ON), (prefix, spec)


# exercise -> input sets, each code that makes `args` (fresh at each call) and `state` (the
# objects whose values after the call are part of the answer). Each set is one that only
# the exercise's job gets right (duplicates to sum, rows out of order, ...)
INPUTS = {
    "rows_changed": ["args = (np.array([[0., 0], [1, 1], [2, 2]]), "
                     "np.array([[0., 0], [1, 5], [2, 2]])); state = []"],
    "deduplicate": [f"args = (tf.IndexedSlices(tf.constant([[1., 2], [3, 4], [5, 6]]), "
                    f"tf.constant({ids}), tf.constant([5, 2])),); state = []"
                    for ids in ([1, 3, 1], [3, 1, 3])],
    "sparse_sgd_update": ["v = tf.Variable(tf.ones((4, 2))); args = (v, tf.IndexedSlices("
                          "tf.constant([[1., 2], [3, 4]]), tf.constant([2, 2]), "
                          "tf.constant([4, 2])), 0.5); state = [v]"],
    "lazy_adam_update": ["v, m, s = (tf.Variable(tf.ones((4, 2))) for _ in range(3)); "
                         "args = (v, m, s, tf.IndexedSlices(tf.constant([[1., 2], [3, 4]]), "
                         "tf.constant([2, 2]), tf.constant([4, 2])), 2, 0.1); state = [v, m, s]"],
    "normalize_token": ["args = ('@Someone',); state = []", "args = ('https://t.co/x',); "
                        "state = []", "args = ('Hello',); state = []"],
    "build_vocab": ["args = ([['a', 'b', 'a'], ['c', 'zz']], ['b', 'c']); state = []"],
    "encode_batch": ["args = ([(['a', 'b'], ['O', 'B-person']), (['b'], ['O'])], "
                     "{'<PAD>': 0, '<UNK>': 1, 'a': 2, 'b': 3}, {'O': 0, 'B-person': 1}); "
                     "state = []"],
    "masked_cross_entropy": ["args = (tf.constant([[1, 0, 2]]), tf.constant([[[1., 2, 3], "
                             "[0, 1, 0], [3, 2, 1]]]), tf.constant([2])); state = []"],
    "extract_spans": ["args = (['B-person', 'I-person', 'O', 'I-loc', 'B-x'],); state = []"],
    "precision_recall_f1": ["args = ([['B-person', 'I-person', 'O', 'B-loc']], "
                            "[['B-person', 'O', 'O', 'B-loc']]); state = []"],
    "build_bilstm_tagger": ["args = (50, 6, 7, 3, 0.5); state = []"],
    "shard_of": ["args = (np.array([0, 3, 4, 9, 6]), 10, 3); state = []"],
    "step_traffic_bytes": ["args = (np.array([1, 5, 1, 7]), 100, 8); state = []"],
    "sharded_lookup": ["shards = [tf.Variable(np.arange(n * 3, dtype=np.float32).reshape(n, 3)"
                       " + k) for k, n in enumerate((4, 3, 3))]; "
                       "args = (shards, tf.constant([7, 0, 7, 3], tf.int64)); state = []"],
}

PROBE = r"""
import importlib, json, sys, pkgutil
sys.path.insert(0, sys.argv[1])
import keras
import numpy as np
import tensorflow as tf
import embeddings_course
import sparse_embeddings
for package in (embeddings_course, sparse_embeddings):
    assert package.__file__.startswith(sys.argv[1]), package.__file__
job = json.loads(sys.argv[2])
reference = {}  # the solution's answers: never names of __main__, where the copy looks
for source in job["setup"]:
    exec(source, reference)
SKIP = {"data", "plots", "progress", "runtime", "_env", "timing"}  # files, screens, clocks
SKIP_NAMES = {"LocalCluster", "free_port", "port_in_use", "known_good", "check_environment"}

def plain(value, depth=0):
    if depth > 6:
        return None
    if isinstance(value, tf.IndexedSlices):
        return ["slices", plain(value.indices), plain(value.values)]
    if isinstance(value, keras.Model):  # a model: its layers' kinds, its weights' shapes
        return ["model", [type(layer).__name__ for layer in value.layers],
                [list(w.shape) for w in value.weights]]
    if isinstance(value, (tf.Tensor, tf.Variable)):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        return (value.round(5) if value.dtype.kind in "fc" else value).tolist()
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in sorted(value.items(), key=str)}
    if isinstance(value, (np.generic,)):
        value = value.item()
    if isinstance(value, float):
        return round(value, 5)
    if isinstance(value, (int, str, bool)) or value is None:
        return value
    return ("object", type(value).__name__)

def outcome(function, code):
    scope = {"np": np, "tf": tf}
    exec(code, scope)
    try:
        returned = function(*scope["args"])
    except BaseException as error:
        return ("raised", type(error).__name__)
    return plain([returned, scope["state"]])

candidates = {}
for package in (embeddings_course, sparse_embeddings):
    for info in pkgutil.iter_modules(package.__path__):
        if info.name in SKIP:
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name in dir(module):
            value = getattr(module, name)
            if name.startswith("_") or name in SKIP_NAMES or not callable(value):
                continue
            if getattr(value, "__module__", "").split(".")[0] in (
                    "embeddings_course", "sparse_embeddings"):
                candidates[f"{info.name}.{name}"] = value
twins = []
for exercise, codes in job["inputs"].items():
    for code in codes:
        want = outcome(reference[exercise], code)
        assert want and want[0] != "raised", (exercise, want)
        for label, candidate in candidates.items():
            if outcome(candidate, code) == want:
                twins.append(f"{label} computes {exercise}")
print(json.dumps({"twins": sorted(set(twins)), "tried": len(candidates)}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("prefix", sorted(EXPECTED))
def test_no_public_function_of_a_copy_computes_an_exercise(copies, prefix):
    library, graded, _ = copies[prefix]
    nb = _notebook(prefix)
    setup = next(c for c in nb.cells if c.cell_type == "code").source
    answers = [strip_solution_markers(info.answer_source)
               for name, info in exercises(nb).items() if name in INPUTS]
    inputs = {name: INPUTS[name] for name in graded if name in INPUTS}
    if not inputs:
        pytest.skip(f"no exercise of {prefix} has inputs here")
    job = json.dumps({"setup": [setup, *answers], "inputs": inputs})
    run = subprocess.run([sys.executable, "-c", PROBE, str(library), job],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout.splitlines()[-1])
    assert found["tried"] > 10
    assert found["twins"] == [], found["twins"]


@pytest.mark.slow
def test_the_probe_finds_a_twin_where_one_is_left(tmp_path, copies):
    """The search itself: a copy that keeps 02's deduplicate (a copy made for no
    exercise) is found to hold a twin of it."""
    _, graded, kept = facts_of(_notebook("02"))
    library = withheld.library_copy(withheld.withheld_names([], kept), tmp_path, "02-test")
    nb = _notebook("02")
    setup = next(c for c in nb.cells if c.cell_type == "code").source
    answer = strip_solution_markers(exercises(nb)["deduplicate"].answer_source)
    job = json.dumps({"setup": [setup, answer], "inputs": {"deduplicate": INPUTS["deduplicate"]}})
    run = subprocess.run([sys.executable, "-c", PROBE, str(library), job],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    twins = json.loads(run.stdout.splitlines()[-1])["twins"]
    assert "sparse.deduplicate computes deduplicate" in twins
    assert "sparse.sum_duplicates computes deduplicate" in twins  # with sorted first ids
